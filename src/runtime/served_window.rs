//! The served window of a local OpenAI-compatible server (llama.cpp,
//! Ollama, vLLM, LM Studio) applied to a [`ModelChoice`]: asked of the
//! server once per base URL and model and remembered in the store; a window
//! an overflow error states wins for the rest of the process and is
//! remembered too. An explicit `[model] context_window` wins over what a
//! server said (but not over an overflow error of this process).
//!
//! Everything that depends on the window follows it because it is the
//! choice's `context_window`: the output reserve (unless `[model]
//! max_tokens` is set), the compression threshold, the prompt mode of new
//! sessions and whether tools are on.

use super::Runtime;
use crate::config::{ModelChoice, ProviderKind, WindowSource};
use crate::provider::served_window::{self, ServedWindow};
use crate::store::StoredWindow;

/// The key a window is remembered under: the base URL without a trailing
/// `/`, and the model name; `None` for a choice discovery does not apply to
/// (the embedded model, no base URL, or OpenAI's or Anthropic's own API,
/// whose windows the catalog knows). The Anthropic provider pointed at
/// another server (llama.cpp serves `POST /v1/messages` too) is asked like
/// an OpenAI-compatible one.
#[must_use]
pub fn window_key(choice: &ModelChoice) -> Option<(String, String)> {
    let own_api = match choice.provider {
        ProviderKind::OpenAi => "api.openai.com",
        ProviderKind::Anthropic => "api.anthropic.com",
        ProviderKind::Local => return None,
    };
    let base = choice.base_url.as_deref()?.trim().trim_end_matches('/');
    if base.is_empty() || base.contains(own_api) {
        return None;
    }
    Some((base.to_owned(), choice.model.clone()))
}

/// What applying the served window changed, for the client to word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WindowNote {
    /// The server serves fewer tokens than `[model] context_window` says;
    /// the config is kept.
    ConfigLarger {
        /// `[model] context_window`.
        config: u64,
        /// What the server serves.
        served: u64,
    },
}

impl WindowNote {
    /// One sentence for people.
    #[must_use]
    pub fn sentence(&self) -> String {
        match self {
            Self::ConfigLarger { config, served } => format!(
                "the server serves a context window of {served} tokens but [model] context_window says {config}; \
                 strata uses {config} as configured, so requests may overflow — lower context_window or remove it"
            ),
        }
    }
}

impl Runtime {
    /// `choice` with what is known of its server's window, without asking
    /// the network: this process's overflow windows, then `[model]
    /// context_window`, then the window remembered in the store. The note
    /// says when the config overrides a smaller served window.
    #[must_use]
    pub fn apply_served_window(&self, choice: ModelChoice) -> (ModelChoice, Option<WindowNote>) {
        let Some(key) = window_key(&choice) else {
            return (choice, None);
        };
        let max_tokens = self.config.model.max_tokens;
        if let Some(&window) = self.overflow_windows.get(&key) {
            return (
                choice.with_window(window, WindowSource::OverflowError, max_tokens),
                None,
            );
        }
        let stored = self.store.served_window(&key.0, &key.1).ok().flatten();
        match (choice.window_source, stored) {
            (_, None) => (choice, None),
            (WindowSource::Config, Some(w)) => {
                let note = (w.tokens < choice.context_window).then_some(WindowNote::ConfigLarger {
                    config: choice.context_window,
                    served: w.tokens,
                });
                (choice, note)
            }
            (_, Some(w)) => {
                let source = if w.source == "overflow_error" {
                    WindowSource::OverflowError
                } else {
                    WindowSource::Server
                };
                (choice.with_window(w.tokens, source, max_tokens), None)
            }
        }
    }

    /// Asks the server of `choice` what window it serves (once per
    /// process: a server restarted with another window is seen by the next
    /// app or `strata chat`) and remembers the answer, replacing what was
    /// remembered, a window an earlier overflow error stated included.
    /// `None` when discovery does not apply, this process asked already, no
    /// source answered, or the answer is the one remembered. Never an
    /// error: a server that says nothing keeps the window known before.
    pub async fn discover_served_window(&mut self, choice: &ModelChoice) -> Option<ServedWindow> {
        let (base, model) = window_key(choice)?;
        if !self.asked_windows.insert((base.clone(), model.clone())) {
            return None;
        }
        let before = self.store.served_window(&base, &model).ok().flatten();
        let key = choice
            .api_key_env
            .as_deref()
            .and_then(|name| std::env::var(name).ok())
            .filter(|k| !k.trim().is_empty());
        let found = served_window::discover(&base, &model, key.as_deref()).await?;
        super::exact_counts::note_server(&base, &model, found.server);
        if before
            .as_ref()
            .is_some_and(|w| w.source == "server" && w.tokens == found.tokens)
        {
            return None;
        }
        tracing::info!(base_url = %base, model = %model, tokens = found.tokens, server = found.server.as_str(), detail = %found.detail, "served window discovered");
        let stored = StoredWindow {
            tokens: found.tokens,
            source: "server".to_owned(),
            detail: format!("{}: {}", found.server.label(), found.detail),
            updated_at: super::now_ms(),
        };
        if let Err(e) = self.store.remember_served_window(&base, &model, &stored) {
            tracing::warn!(error = %e, "the discovered window could not be remembered");
        }
        Some(found)
    }

    /// Records the window an overflow error stated for `choice`'s server:
    /// it wins for the rest of the process and is remembered. Returns the
    /// window when it is new and smaller than `choice`'s (the caller says
    /// so once and re-plans), `None` otherwise.
    pub fn note_overflow_window(&mut self, choice: &ModelChoice, stated: u64) -> Option<u64> {
        let key = window_key(choice)?;
        if stated == 0 || stated >= choice.context_window || self.overflow_windows.get(&key) == Some(&stated)
        {
            return None;
        }
        self.overflow_windows.insert(key.clone(), stated);
        let stored = StoredWindow {
            tokens: stated,
            source: "overflow_error".to_owned(),
            detail: "stated by the server's context overflow error".to_owned(),
            updated_at: super::now_ms(),
        };
        if let Err(e) = self.store.remember_served_window(&key.0, &key.1, &stored) {
            tracing::warn!(error = %e, "the stated window could not be remembered");
        }
        Some(stated)
    }
}
