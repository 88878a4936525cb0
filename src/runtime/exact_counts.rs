//! Exact counts against a llama.cpp server: its own tokenizer through `POST
//! /tokenize`, asked ahead of need so the counter stays synchronous.
//!
//! - A base URL + model whose served-window discovery found llama.cpp (in
//!   this process, or as remembered in the store) gets a
//!   [`ServerCounter`] named `llama.cpp:<model>` once its `/tokenize`
//!   answered; one per process, shared by every path that counts the
//!   session's tokens ([`crate::runtime::session_counter`], the
//!   connection's counter).
//! - Before a turn's pipeline runs (and after it, for the reply), the texts
//!   the request holds that the counter has no count for are counted there
//!   in one batch: the system prompt and its layers, the tool schemas, the
//!   role names, and the messages with no stored count under
//!   `llama.cpp:<model>`. Counts made from them are cached and stored per
//!   message like any other (`messages.tokens`).
//! - When `/tokenize` fails (an older server, an HTTP error, a timeout) the
//!   session keeps the `o200k_base` estimate, with a log line; never an
//!   error. A text the table lacks (a cut copy, a summary) is estimated and
//!   makes `exact` false until the next complete batch.
//!
//! The chat template's own tokens stay calibrated from the server's
//! reported `prompt_tokens` (DESIGN §5), as for every provider.

use super::Runtime;
use super::served_window::window_key;
use crate::config::{ModelChoice, ProviderKind};
use crate::conversation::Conversation;
use crate::domain::{LayerInfo, Message, Role, Session, SystemPrompt};
use crate::provider::served_window::ServerKind;
use crate::provider::tokenize::ServerTokenizer;
use crate::tokens::{ServerCounter, TokenCounter};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A server's tokenizer and the counter filled from it.
struct Exact {
    counter: Arc<ServerCounter>,
    tokenizer: ServerTokenizer,
}

/// Per base URL and model: the server kind discovery found, and (once
/// asked) the exact counter, or `None` when its `/tokenize` failed.
#[derive(Default)]
struct Servers {
    kinds: HashMap<(String, String), ServerKind>,
    exact: HashMap<(String, String), Option<Arc<Exact>>>,
}

fn servers() -> std::sync::MutexGuard<'static, Servers> {
    static SERVERS: OnceLock<Mutex<Servers>> = OnceLock::new();
    SERVERS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The id of a llama.cpp server's tokenizer for `model`, stored with the
/// counts made by it.
#[must_use]
pub fn tokenizer_id(model: &str) -> String {
    format!("llama.cpp:{model}")
}

/// Records what kind of server answered the window question for `base_url`
/// and `model` (served-window discovery calls it).
pub(super) fn note_server(base_url: &str, model: &str, kind: ServerKind) {
    servers()
        .kinds
        .insert((base_url.to_owned(), model.to_owned()), kind);
}

fn exact_of(id: &str) -> Option<Arc<Exact>> {
    servers()
        .exact
        .values()
        .flatten()
        .find(|e| e.counter.id() == id)
        .cloned()
}

/// The exact counter this process set up for `choice`'s server, if any
/// (for the connection: [`crate::runtime::connect`]).
pub(super) fn counter_of(choice: &ModelChoice) -> Option<Arc<dyn TokenCounter>> {
    let key = window_key(choice)?;
    let exact = servers().exact.get(&key).cloned().flatten()?;
    Some(exact.counter.clone() as Arc<dyn TokenCounter>)
}

/// The exact counter this process set up for `model` on a server spoken
/// to through the OpenAI or the Anthropic API, if any (for
/// [`crate::runtime::session_counter`], which knows no base URL).
pub(super) fn counter_for_model(provider: ProviderKind, model: &str) -> Option<Arc<dyn TokenCounter>> {
    if provider == ProviderKind::Local {
        return None;
    }
    exact_of(&tokenizer_id(model)).map(|e| e.counter.clone() as Arc<dyn TokenCounter>)
}

/// `prompt`'s layer table with each layer's tokens counted again by
/// `counter` when it [recounts stored figures](TokenCounter::recounts_stored)
/// (the prompt was frozen before the server counted it); as stored
/// otherwise.
#[must_use]
pub fn layers_for<'a>(prompt: &'a SystemPrompt, counter: &dyn TokenCounter) -> Cow<'a, [LayerInfo]> {
    if !counter.recounts_stored() {
        return Cow::Borrowed(&prompt.layers);
    }
    Cow::Owned(
        prompt
            .layers
            .iter()
            .map(|l| {
                let mut l = l.clone();
                if let Some(text) = prompt.text.get(l.start..l.end) {
                    l.tokens = counter.count(text);
                }
                l
            })
            .collect(),
    )
}

/// The texts counted for the system prompt: the whole text (the request's
/// figure) and each layer (the budget's rows).
fn prompt_texts(prompt: &SystemPrompt) -> impl Iterator<Item = &str> {
    std::iter::once(prompt.text.as_str()).chain(
        prompt
            .layers
            .iter()
            .filter_map(|l| prompt.text.get(l.start..l.end)),
    )
}

/// The texts [`crate::tokens::message_tokens`] counts of `message`.
fn message_texts(message: &Message) -> impl Iterator<Item = &str> {
    std::iter::once(message.content.as_str())
        .chain(
            message
                .tool_calls
                .iter()
                .flat_map(|c| [c.name.as_str(), c.arguments.as_str()]),
        )
        .chain(message.tool_call_id.as_deref())
}

const ROLES: [Role; 4] = [Role::System, Role::User, Role::Assistant, Role::Tool];

impl Runtime {
    /// Whether `choice`'s server is llama.cpp: discovery found it in this
    /// process, or the window remembered for it came from llama.cpp.
    fn is_llama_cpp(&self, key: &(String, String)) -> bool {
        if let Some(kind) = servers().kinds.get(key) {
            return *kind == ServerKind::LlamaCpp;
        }
        self.store
            .served_window(&key.0, &key.1)
            .ok()
            .flatten()
            .is_some_and(|w| {
                w.source == "server"
                    && w.detail
                        .starts_with(&format!("{}:", ServerKind::LlamaCpp.label()))
            })
    }

    /// The counter of `choice`'s llama.cpp server (its `/tokenize` asked
    /// once per process, role names counted); `None` when the server is not
    /// llama.cpp or its `/tokenize` failed (logged: counts stay estimates).
    pub async fn exact_counter(&self, choice: &ModelChoice) -> Option<Arc<dyn TokenCounter>> {
        let key = window_key(choice)?;
        if let Some(known) = servers().exact.get(&key) {
            return known.as_ref().map(|e| e.counter.clone() as Arc<dyn TokenCounter>);
        }
        if !self.is_llama_cpp(&key) {
            return None;
        }
        let api_key = choice
            .api_key_env
            .as_deref()
            .and_then(|name| std::env::var(name).ok())
            .filter(|k| !k.trim().is_empty());
        let exact = match ServerTokenizer::new(&key.0, api_key.as_deref()) {
            Ok(tokenizer) => {
                let roles: Vec<&str> = ROLES.iter().map(|r| r.as_str()).collect();
                match tokenizer.count_all(&roles).await {
                    Ok(counts) => {
                        let counter = ServerCounter::new(tokenizer_id(&choice.model));
                        counter.fill(roles.iter().map(|r| (*r).to_owned()).zip(counts), false);
                        tracing::info!(base_url = %key.0, model = %key.1, url = tokenizer.url(), "counting with the llama.cpp server's tokenizer");
                        Some(Arc::new(Exact {
                            counter: Arc::new(counter),
                            tokenizer,
                        }))
                    }
                    Err(e) => {
                        tracing::warn!(base_url = %key.0, model = %key.1, error = %e, "the server's /tokenize failed; token counts stay o200k_base estimates");
                        None
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "token counts stay o200k_base estimates");
                None
            }
        };
        let counter = exact.as_ref().map(|e| e.counter.clone() as Arc<dyn TokenCounter>);
        servers().exact.insert(key, exact);
        counter
    }

    /// Counts with the server every text of `texts` its counter has no
    /// count for, in one batch; counts are exact again when the batch
    /// succeeds. A failure is logged and leaves estimates.
    async fn count_ahead(&self, exact: &Exact, texts: impl IntoIterator<Item = &str>) {
        let missing = exact.counter.missing(texts);
        if missing.is_empty() {
            exact.counter.fill([], true);
            return;
        }
        match exact.tokenizer.count_all(&missing).await {
            Ok(counts) => {
                exact
                    .counter
                    .fill(missing.iter().map(|t| (*t).to_owned()).zip(counts), true);
            }
            Err(e) => {
                tracing::warn!(error = %e, texts = missing.len(), "the server's /tokenize failed; these counts stay o200k_base estimates")
            }
        }
    }

    /// Counts ahead, with the server, what `conversation`'s next request
    /// holds and its counter lacks: the prompt and its layers, the tool
    /// schemas, the messages with no count under its tokenizer, what is
    /// attached for the next message and `extra` (the user's text about to
    /// be submitted, tool schemas the conversation does not hold). Then the
    /// pipeline runs once, for the texts it makes itself (the
    /// omitted-messages note, separators, cut copies), and those are
    /// counted too. The conversation's figures made once per prompt are
    /// counted again. Nothing happens unless the conversation counts with a
    /// llama.cpp server's tokenizer.
    pub async fn precount(&self, conversation: &mut Conversation, extra: &[&str]) {
        let Some(exact) = exact_of(conversation.counter().id()) else {
            return;
        };
        let id = exact.counter.id().to_owned();
        let schemas: Vec<String> = conversation
            .tools()
            .map(|t| t.offered().array().iter().map(ToString::to_string).collect())
            .unwrap_or_default();
        let uncounted = conversation
            .messages()
            .iter()
            .filter(|m| m.tokens.as_ref().is_none_or(|t| t.tokenizer != id));
        let texts = prompt_texts(conversation.prompt())
            .chain(schemas.iter().map(String::as_str))
            .chain(uncounted.flat_map(message_texts))
            .chain(conversation.attached())
            .chain(extra.iter().copied());
        self.count_ahead(&exact, texts).await;
        conversation.counts_changed();
        // What the pipeline counts of its own making.
        let _ = exact.counter.take_missed();
        let _ = conversation.report();
        let made = exact.counter.take_missed();
        if !made.is_empty() {
            self.count_ahead(&exact, made.iter().map(String::as_str)).await;
            conversation.counts_changed();
        }
    }

    /// [`Runtime::precount`] for a stored session (`strata context`): sets
    /// up the counter of `choice`'s llama.cpp server and counts what the
    /// session's next request holds (the stored prompt, the tools array,
    /// the active messages with no count under its tokenizer, the
    /// pipeline's own texts). Nothing happens for another server.
    pub async fn precount_session(&mut self, session: &Session, choice: &ModelChoice) {
        let Some(counter) = self.exact_counter(choice).await else {
            return;
        };
        let Ok(Some(prompt)) = self.store.current_prompt(session.id) else {
            return;
        };
        let Ok(messages) = self.store.messages(session.id, true) else {
            return;
        };
        let usage = self.store.usage(session.id).unwrap_or_default();
        let schemas: Vec<String> = self
            .tools_for(session.id, choice, None)
            .0
            .map(|set| set.array().iter().map(ToString::to_string).collect())
            .unwrap_or_default();
        let Ok(mut conversation) =
            self.conversation_from(session.clone(), prompt, messages, &usage, choice, counter)
        else {
            return;
        };
        let extra: Vec<&str> = schemas.iter().map(String::as_str).collect();
        self.precount(&mut conversation, &extra).await;
    }

    /// [`Runtime::precount_session`] for a caller without an async runtime
    /// (a command): one is made for it only when `choice` is an
    /// OpenAI-compatible server of its own.
    pub fn precount_session_blocking(&mut self, session: &Session, choice: &ModelChoice) {
        if window_key(choice).is_none() {
            return;
        }
        match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt.block_on(self.precount_session(session, choice)),
            Err(e) => {
                tracing::warn!(error = %e, "no runtime to count with the server; counts stay estimates")
            }
        }
    }
}
