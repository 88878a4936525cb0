//! One turn of the open session: connect and create the session when
//! needed, run the core's turn through the runtime, keep the rows the
//! service holds up to date from what the turn stored, and tell the client
//! as it goes (the context of the request in flight included).

use super::SessionService;
use crate::compress::CompressionPlan;
use crate::conversation::Conversation;
use crate::domain::Compaction;
use crate::domain::{Message, Role, SessionId};
use crate::runtime::service::{AttachQuestion, ServiceEvent};
use crate::runtime::{AttachConsent, NewSession, TurnHost, title_from};
use std::future::Future;
use std::sync::Arc;

impl SessionService {
    /// Sends `text` as the user's next message: connects and creates the
    /// session when needed, runs the turn until it ends or `cancel`
    /// resolves. When nothing could be stored, the text comes back as
    /// [`ServiceEvent::Unsent`]. [`ServiceEvent::TurnDone`] always follows.
    ///
    /// # Errors
    /// One sentence, when the turn could not start or the store failed.
    pub async fn send(&mut self, text: String, cancel: impl Future<Output = ()>) -> anyhow::Result<()> {
        self.send_attaching(text, AttachConsent::default(), cancel).await
    }

    /// [`SessionService::send`] with what the user allowed to attach
    /// (`--attach PATH`, or the paths confirmed in the app). In the app,
    /// while `consent` is not `answered`, a message with a mention that
    /// would be withheld is not sent: [`ServiceEvent::AttachAsk`] names
    /// each one with its resolved path, the text goes back
    /// ([`ServiceEvent::Unsent`]) and nothing is stored or sent until the
    /// user answers (by sending again with `answered` set).
    ///
    /// # Errors
    /// As for [`SessionService::send`].
    pub async fn send_attaching(
        &mut self,
        text: String,
        consent: AttachConsent,
        cancel: impl Future<Output = ()>,
    ) -> anyhow::Result<()> {
        if self.interactive && !consent.answered {
            let workspace = match &self.session {
                Some(s) => std::path::PathBuf::from(&s.workspace),
                None => crate::workspace::workspace_root(&self.cwd),
            };
            let withheld = self.runtime.withheld(&text, &workspace, &consent);
            if !withheld.is_empty() {
                self.emit(ServiceEvent::AttachAsk(Box::new(AttachQuestion {
                    text: text.clone(),
                    withheld,
                })));
                self.emit(ServiceEvent::Unsent(text));
                self.emit(ServiceEvent::TurnDone {
                    status: crate::domain::MessageStatus::Error,
                });
                return Ok(());
            }
        }
        let mut cancel = std::pin::pin!(cancel);
        // MCP servers still starting are waited for before anything is
        // created or stored.
        if !self.await_mcp(cancel.as_mut()).await {
            self.emit(ServiceEvent::Unsent(text));
            self.emit(ServiceEvent::TurnDone {
                status: crate::domain::MessageStatus::Error,
            });
            anyhow::bail!("cancelled while the MCP servers started; nothing was sent");
        }
        // A local server's served window sizes the first request.
        self.discover_window().await;
        let created = self.session.is_none();
        if let Err(e) = self.ready_for_turn(&text, cancel.as_mut()).await {
            // Nothing was stored: the text goes back to the composer.
            self.emit(ServiceEvent::Unsent(text));
            self.emit(ServiceEvent::TurnDone {
                status: crate::domain::MessageStatus::Error,
            });
            return Err(e);
        }
        self.say_provider_notice();
        let kept_text = created.then(|| text.clone());
        let result = self.turn(text, &consent, cancel).await;
        self.say_provider_notice();
        if let Err(e) = self.keep_tool_prefs() {
            self.emit(ServiceEvent::Error(format!(
                "the session's tool settings were not saved ({e})"
            )));
        }
        let status = match &result {
            Ok(end) => end.status,
            Err(_) => crate::domain::MessageStatus::Error,
        };
        let unanswered = matches!(&result, Ok(end) if !end.answered) || result.is_err();
        if let Some(text) = kept_text
            && status == crate::domain::MessageStatus::Error
            && unanswered
            && self.unmake_failed_session()
        {
            // The session made for this message is gone; the text comes back.
            self.emit(ServiceEvent::Unsent(text));
            self.emit(ServiceEvent::TurnDone { status });
            return result.map(|_| ());
        }
        // The turn's messages went out as they were stored; a compaction
        // rewrote the history the service holds, which goes out whole (from
        // memory); a failed turn is read back from the store.
        let reread = result.is_err();
        let compacted = matches!(result, Ok(TurnEnd { compacted: true, .. }));
        if reread {
            self.rows = None;
        }
        if reread || compacted {
            if let Err(e) = self.refresh() {
                self.emit(ServiceEvent::Error(e.to_string()));
            }
        } else if let Ok(choice) = self.choice()
            && let Some(context) = self.context_now(&choice)
        {
            self.emit(ServiceEvent::Context(Box::new(context)));
        }
        self.emit(ServiceEvent::TurnDone { status });
        result.map(|_| ())
    }

    /// An overflow error stated the server's window (the conversation was
    /// fitted to it during the turn): it is remembered, wins for the rest
    /// of the process, and is said once.
    fn keep_stated_window(&mut self, window: u64) {
        let Some(choice) = self.choice.clone() else {
            return;
        };
        if self.runtime.note_overflow_window(&choice, window).is_none() {
            return;
        }
        // A configured window wins again in the next process: say so.
        let until = if choice.window_source == crate::config::WindowSource::Config {
            format!(
                "for the rest of this run; set [model] context_window = {window} (or remove it) to keep it"
            )
        } else {
            "from now on".to_owned()
        };
        self.emit(ServiceEvent::Notice(format!(
            "the server says its context window is {} tokens, not the {} assumed; strata sizes requests to it {until}",
            crate::text::group_digits(window),
            crate::text::group_digits(choice.context_window)
        )));
        let max_tokens = self.runtime.config.model.max_tokens;
        self.choice =
            Some(choice.with_window(window, crate::config::WindowSource::OverflowError, max_tokens));
    }

    /// Says what the provider did on its own, once (the embedded model's
    /// saved states removed to stay under their cap).
    fn say_provider_notice(&self) {
        if let Some(notice) = self.connected.as_ref().and_then(|c| c.provider.take_notice()) {
            self.emit(ServiceEvent::Notice(notice));
        }
        if let Some(notice) = self.runtime.trim_spill(self.session.as_ref().map(|s| s.id)) {
            self.emit(ServiceEvent::Notice(notice));
        }
    }

    /// Connects, creates the session (titled after `text`) when there is
    /// none, and opens its conversation.
    /// Removes the session the failed turn just made when its request
    /// could not be prepared or the provider refused or could not be
    /// reached, and nothing came back (no reply text, no tool call, no
    /// usage): a failed first message leaves no session behind. Returns
    /// whether it was removed.
    fn unmake_failed_session(&mut self) -> bool {
        let Some(session) = self.session.clone() else {
            return false;
        };
        let store = &mut self.runtime.store;
        let answered = store.messages(session.id, true).map(|messages| {
            messages
                .iter()
                .any(|m| m.role != Role::User && (!m.content.is_empty() || !m.tool_calls.is_empty()))
        });
        let used = store.usage(session.id).map(|u| !u.is_empty());
        if !matches!((answered, used), (Ok(false), Ok(false))) {
            return false;
        }
        if let Err(e) = store.delete_session(session.id) {
            tracing::warn!(error = %e, "the failed first message's session could not be removed");
            return false;
        }
        self.session = None;
        self.forget_history();
        // A headless client says so with its error (it has no composer).
        if self.interactive {
            self.emit(ServiceEvent::Notice(
                "no session was kept, since its first message failed; the text is back in the composer"
                    .to_owned(),
            ));
        }
        if let Err(e) = self.refresh() {
            self.emit(ServiceEvent::Error(e.to_string()));
        }
        true
    }

    async fn ready_for_turn(
        &mut self,
        text: &str,
        cancel: std::pin::Pin<&mut impl Future<Output = ()>>,
    ) -> anyhow::Result<()> {
        let choice = self.choice()?;
        if self.connected.is_none() {
            self.ensure_connected(choice.clone())?;
        }
        if self.session.is_none() {
            let mode = self.mode(&choice);
            let title = title_from(&[Message::new(SessionId::new(), Role::User, text, 0)]);
            let build = self.runtime.new_session_build(NewSession {
                cwd: &self.cwd,
                choice: &choice,
                mode,
                title,
                now: &jiff::Zoned::now(),
                interactive: self.interactive,
                env: crate::prompt::EnvFacts::from_process(),
            })?;
            // The files are read and `prompt.context_cmd` run off this
            // thread: a cancel ends the wait, and nothing is stored.
            let assembling = tokio::task::spawn_blocking(move || {
                let built = build.assemble();
                (build, built)
            });
            let (build, built) = tokio::select! {
                done = assembling => done.map_err(|e| anyhow::anyhow!("building the session's prompt failed ({e}); send again"))?,
                () = cancel => {
                    crate::workspace::stop_running_commands();
                    anyhow::bail!("cancelled while the session's prompt was built; nothing was stored")
                }
            };
            let (session, _, warnings) = self.runtime.store_new_session(build, &built)?;
            // Those the pending session's prompt said already are not repeated.
            for w in warnings.iter().filter(|w| !self.prompt_warnings.contains(w)) {
                self.emit(ServiceEvent::Notice(format!("warning: {w}")));
            }
            // The pane keeps showing what the session's prompt left out.
            self.prompt_warnings = warnings;
            self.session = Some(session);
            self.forget_history();
            // The client learns the session (title, id) and the watch starts.
            self.refresh()?;
        }
        // One writer per session: nothing is written while another strata
        // has it open.
        self.claim(false)?;
        self.open_conversation()
    }

    async fn turn(
        &mut self,
        text: String,
        consent: &AttachConsent,
        cancel: impl Future<Output = ()>,
    ) -> anyhow::Result<TurnEnd> {
        let cancel = std::pin::pin!(cancel);
        self.start_mcp();
        let mcp = self.mcp.clone();
        let lease_token = self.lease_token();
        let tools = self.tool_env.clone().map(|env| crate::runtime::TurnTools {
            env,
            mcp,
            approvals: self.interactive.then_some(&mut self.approvals.1),
        });
        let (Some(conversation), Some(connected)) = (self.conversation.as_mut(), self.connected.as_ref())
        else {
            anyhow::bail!("no provider is connected; check the key or the model, then try again");
        };
        for (part, ttl) in std::mem::take(&mut self.parts) {
            conversation.attach(part, ttl);
        }
        let sink = Arc::clone(&self.sink);
        sink(ServiceEvent::StreamStarted {
            now_ms: crate::runtime::now_ms(),
        });
        // For the context of the request in flight (the pane follows the
        // turn, not only its end).
        let mut host = Host {
            sink: Arc::clone(&self.sink),
            lease_token,
            choice: self.choice.clone(),
            threshold: self.runtime.threshold_settings(),
            blocked: self
                .runtime
                .blocked_reason(conversation.engine().status().locked.as_ref()),
            client: self.runtime.client(),
            rows: &mut self.rows,
            compacted: false,
            sent: false,
            said_left_out: false,
            said_cut: false,
        };
        let outcome = self
            .runtime
            .chat_turn(
                conversation,
                connected.provider.as_ref(),
                crate::runtime::UserMessage {
                    text,
                    consent: consent.clone(),
                },
                cancel,
                tools,
                &mut host,
            )
            .await;
        let (compacted, sent) = (host.compacted, host.sent);
        let outcome = outcome?;
        if let Some(window) = outcome.stated_window {
            self.keep_stated_window(window);
        }
        Ok(TurnEnd {
            status: outcome.status,
            compacted,
            // A request went out and no provider error came back.
            answered: sent
                && matches!(
                    outcome.error,
                    None | Some(
                        crate::provider::ProviderError::EmptyResponse
                            | crate::provider::ProviderError::Protocol { .. }
                            | crate::provider::ProviderError::Broken { .. }
                    )
                ),
        })
    }
}

/// How a turn ended, for the service.
struct TurnEnd {
    status: crate::domain::MessageStatus,
    /// A compaction was stored during it.
    compacted: bool,
    /// The provider answered a request (a reply, even an empty one, or an
    /// error of the reply itself); false when no request could be
    /// prepared or the provider refused or could not be reached.
    answered: bool,
}

/// The service as a turn's host: the turn's events go to the client, the
/// rows it holds follow what the turn stored, and each request sent gives
/// the pane the context it was made from.
struct Host<'a> {
    sink: crate::runtime::service::Sink,
    /// The lease the turn writes under.
    lease_token: Option<String>,
    choice: Option<crate::config::ModelChoice>,
    threshold: crate::tokens::ThresholdSettings,
    blocked: Option<String>,
    client: crate::runtime::Client,
    rows: &'a mut Option<super::Rows>,
    /// A compaction was stored during the turn.
    compacted: bool,
    /// A request went to the provider.
    sent: bool,
    /// Older messages left out of a request: said once a turn.
    said_left_out: bool,
    /// The turn's message sent cut to fit: said once.
    said_cut: bool,
}

impl TurnHost for Host<'_> {
    fn lease_token(&self) -> Option<&str> {
        self.lease_token.as_deref()
    }

    fn emit(&mut self, event: ServiceEvent) {
        if let Some(rows) = self.rows.as_mut() {
            match &event {
                ServiceEvent::Message(m) => rows.upsert(m),
                ServiceEvent::Usage(u) => rows.usage.push(u.clone()),
                _ => {}
            }
        }
        (self.sink)(event);
    }

    fn sent(&mut self, conversation: &Conversation) {
        self.sent = true;
        let (Some(choice), Some(sent)) = (&self.choice, conversation.sent()) else {
            return;
        };
        // Cut to fit: the app asked before sending; a headless turn says it.
        if self.client == crate::runtime::Client::Cli && !self.said_cut {
            // The turn's message with what rides on it (an `@file`'s text).
            let messages = conversation.messages();
            let from = messages.iter().rposition(|m| {
                m.role == crate::domain::Role::User && m.kind == crate::domain::MessageKind::Normal
            });
            let (before, after) = from
                .into_iter()
                .flat_map(|u| u..messages.len())
                .filter(|&i| messages[i].role == crate::domain::Role::User)
                .filter_map(|i| sent.report.get(i))
                .filter(|r| r.action == crate::pipeline::Action::Truncated)
                .fold((0u64, 0u64), |(b, a), r| {
                    (b + u64::from(r.tokens_before), a + u64::from(r.tokens_after))
                });
            if before > 0 {
                self.said_cut = true;
                let line = self.client.message_sent_cut(before, after, choice.context_window);
                (self.sink)(ServiceEvent::Notice(line));
            }
        }
        // Left out to fit: a reply with nothing in it (failed before any
        // text, or empty) is dropped whatever the window, so it is not.
        let empty: std::collections::HashSet<_> = conversation
            .messages()
            .iter()
            .filter(|m| {
                m.role == crate::domain::Role::Assistant
                    && m.tool_calls.is_empty()
                    && m.content.trim().is_empty()
            })
            .map(|m| m.id)
            .collect();
        // Counted at what they would have cost as sent: a paste too large
        // for any request at its cut copy, not its whole size.
        let (count, tokens) = sent
            .report
            .iter()
            .enumerate()
            .filter(|(_, r)| r.action == crate::pipeline::Action::Dropped && !empty.contains(&r.message_id))
            .fold((0, 0), |(n, t), (i, r)| {
                let cost = sent.prelimit_counts.get(i).copied().unwrap_or(r.tokens_before);
                (n + 1, t + u64::from(cost))
            });
        if count > 0 && !self.said_left_out {
            self.said_left_out = true;
            // The message cap did it when everything would have fit the
            // window.
            let fits = sent.prelimit_tokens + conversation.max_tokens() <= choice.context_window;
            let cap = conversation.max_messages().filter(|_| fits);
            let line = self.client.left_out(count, tokens, choice.context_window, cap);
            (self.sink)(ServiceEvent::Notice(line));
        }
        let stored: Vec<u32> = conversation
            .messages()
            .iter()
            .map(|m| m.tokens.as_ref().map_or(0, |t| t.tokens))
            .collect();
        let next = Ok(crate::runtime::context::NextRequest {
            report: &sent.report,
            prepared_tokens: sent.prepared_tokens,
            prelimit_tokens: sent.prelimit_tokens,
            compression_helps: sent.compression_helps,
        });
        let mut context = crate::runtime::context::context_of(
            conversation,
            &stored,
            next,
            choice,
            self.threshold,
            self.blocked.clone(),
        );
        let rows = self.rows.as_ref();
        context.last_usage = rows.and_then(|r| r.usage.last().cloned());
        context.last_compaction = rows.and_then(|r| r.last_compaction.clone());
        context.requests = rows.map(super::Rows::requests).unwrap_or_default();
        (self.sink)(ServiceEvent::Context(Box::new(context)));
    }

    fn compacted(&mut self, compaction: &Compaction, plan: &CompressionPlan) {
        self.compacted = true;
        if let Some(rows) = self.rows.as_mut() {
            rows.compact(compaction, plan);
        }
    }
}
