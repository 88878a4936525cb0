//! The budget of a session's next request (`strata context`) and message
//! token counts, computed once and stored with the tokenizer that made them.

use super::{Runtime, RuntimeError};
use crate::compress::CompressionEngine;
use crate::config::ModelChoice;
use crate::conversation::Calibration;
use crate::domain::{Compaction, Message, Session, SessionId};
use crate::pipeline::ReportEntry;
use crate::tokens::{Budget, TokenCache, TokenCounter};
use serde::Serialize;

/// `strata context --json`: the session, its model and the budget
/// (`window`, `reserved_output`, `effective_window`, `threshold`,
/// `boundary_tokens`, `tokenizer`, `exact`, `categories`).
#[derive(Clone, Debug, Serialize)]
pub struct ContextReport {
    /// The session.
    pub session_id: SessionId,
    /// Its model.
    pub model: String,
    /// Input tokens of the next request as prepared (after every pipeline
    /// stage: what is sent); the categories add up to it. When the request
    /// cannot be prepared, the stored history's figure (`stored_tokens`).
    pub input_tokens: u64,
    /// The stored history's tokens as a request (every active message
    /// whole, plus the prompt and overhead): what the session holds.
    pub stored_tokens: u64,
    /// The pre-limit estimate: every message as the pipeline would send it,
    /// oversized ones already cut, before whole turns are left out; what
    /// the compression trigger compares with the threshold. `None` when the
    /// request cannot be prepared.
    pub prelimit_tokens: Option<u64>,
    /// The provider's count over strata's estimate, smoothed over the
    /// session's requests (1.0 before any; DESIGN §5).
    pub calibration_ratio: f64,
    /// `input_tokens` scaled by `calibration_ratio`: what the provider is
    /// expected to count.
    pub calibrated_input_tokens: u64,
    /// What the per-turn pipeline would do to each stored message in the
    /// next request (`kept`, `truncated`, `pruned`, `dropped`, `excluded`,
    /// `repaired`, `merged`); empty when the request cannot be prepared.
    pub report: Vec<ReportEntry>,
    /// Input tokens of the prepared request (after the pipeline), or `None`
    /// when it cannot be prepared (`prepare_error` says why).
    pub prepared_tokens: Option<u64>,
    /// Why the next request cannot be prepared, if it cannot.
    pub prepare_error: Option<String>,
    /// Where the window goes.
    #[serde(flatten)]
    pub budget: Budget,
    /// Automatic compression's state.
    pub compression: CompressionStatus,
    /// Why the model gets no tools, when it gets none.
    pub tools_off: Option<String>,
    /// The last request's cache reads, predicted and reported, and where
    /// the cached prefix broke.
    pub cache: super::cache_report::CacheStatus,
    /// Every request of the session, oldest first: `{at, prompt_tokens,
    /// estimated, cached_tokens, predicted_cached_tokens, compaction,
    /// break}`.
    pub requests: Vec<super::cache_report::RequestPoint>,
    /// Each server's tools and their tokens; written into
    /// `categories.tools` by [`ContextReport::to_json`].
    #[serde(skip)]
    pub tool_servers: Option<super::tool_costs::ToolServers>,
}

impl ContextReport {
    /// The report as `strata context --json` prints it: the fields above,
    /// with `categories.tools` also holding `servers` (`[{name, status,
    /// tokens, tools: [{name, tokens, deferred}]}]`, the built-in tools as
    /// `builtin`) and `deferred_saving_tokens` when tools are on.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let (Some(servers), Some(tools)) = (
            &self.tool_servers,
            value
                .pointer_mut("/categories/tools")
                .and_then(serde_json::Value::as_object_mut),
        ) {
            tools.insert("servers".into(), serde_json::json!(servers.servers));
            tools.insert(
                "deferred_saving_tokens".into(),
                serde_json::json!(servers.deferred_saving_tokens),
            );
        }
        value
    }
}

/// What the pipeline says of the next request, for [`context_of`].
pub(super) struct NextRequest<'a> {
    pub report: &'a [ReportEntry],
    pub prepared_tokens: u64,
    pub prelimit_tokens: u64,
    pub compression_helps: bool,
}

/// The context snapshot of `conversation`'s next request from figures
/// already made: `stored` (each message's stored count) and `next` (the
/// pipeline's report and figures, or why it cannot be prepared). Pure: no
/// store, no pipeline run. Last usage and compaction are left empty.
pub(super) fn context_of(
    conversation: &crate::conversation::Conversation,
    stored: &[u32],
    next: Result<NextRequest<'_>, String>,
    choice: &ModelChoice,
    threshold: crate::tokens::ThresholdSettings,
    blocked_reason: Option<String>,
) -> super::service::ContextSnapshot {
    let counter = conversation.counter();
    let prompt = conversation.prompt().clone();
    let messages = conversation.messages();
    let tools = conversation.tool_items();
    let budget_with = |tokens: &[u32]| {
        super::compress::budget_with(
            &prompt,
            counter.as_ref(),
            messages,
            tokens,
            choice,
            threshold,
            &tools,
        )
    };
    let stored_budget = budget_with(stored);
    let stored_tokens = stored_budget.input_tokens();
    let compression_helps = next.as_ref().is_ok_and(|p| p.compression_helps);
    let (budget, report, prepared_tokens, prelimit_tokens, prepare_error) = match next {
        Ok(p) => {
            let sent: Vec<u32> = p.report.iter().map(|r| r.tokens_after).collect();
            let budget = budget_with(&sent).fitted_to(p.prepared_tokens);
            (
                budget,
                p.report.to_vec(),
                Some(p.prepared_tokens),
                Some(p.prelimit_tokens),
                None,
            )
        }
        Err(why) => (stored_budget, Vec::new(), None, None, Some(why)),
    };
    super::service::ContextSnapshot {
        prompt,
        budget,
        report,
        prepared_tokens,
        prelimit_tokens,
        compression_helps,
        stored_tokens,
        prepare_error,
        last_usage: None,
        last_compaction: None,
        requests: Vec::new(),
        blocked_reason,
        tools_off: conversation.tools_off().map(str::to_owned),
        sandbox_note: conversation
            .tools()
            .and_then(|t| t.sandbox.unconfined_note())
            .map(str::to_owned),
        tool_servers: super::tool_costs::tool_servers(conversation, &[]),
        prompt_warnings: Vec::new(),
    }
}

/// `compression` in `strata context --json`.
#[derive(Clone, Debug, Serialize)]
pub struct CompressionStatus {
    /// `[compression] enabled`.
    pub enabled: bool,
    /// Strikes since the last reading that fit (two block it).
    pub strikes: u32,
    /// Fallback summaries in a row (two block it).
    pub fallbacks_in_row: u32,
    /// Why automatic compression is blocked, with what to do, worded for
    /// the runtime's client (the command line's for `strata context
    /// --json`: `strata compress ID --topic T`); `None` when it may run.
    pub blocked: Option<String>,
    /// End of a summariser-failure cooldown, unix milliseconds.
    pub cooldown_until_ms: Option<i64>,
    /// The latest compression still in force (kind `summary`; edit and
    /// resend records are not compressions).
    pub last_compaction: Option<Compaction>,
}

/// The calibration learned from `usage` rows, oldest first (requests where
/// the provider reported `prompt_tokens`).
pub(super) fn calibration_of(usage: &[crate::domain::Usage]) -> Calibration {
    Calibration::from_history(
        usage
            .iter()
            .filter_map(|u| u.prompt_tokens.map(|actual| (u.estimated_prompt_tokens, actual))),
    )
}

impl Runtime {
    /// The session's estimate calibration, learned from its usage rows
    /// (requests where the provider reported `prompt_tokens`).
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when reading fails.
    pub fn calibration(&self, session: crate::domain::SessionId) -> Result<Calibration, RuntimeError> {
        Ok(calibration_of(&self.store.usage(session)?))
    }

    /// The session's messages with token counts under the session's
    /// tokenizer: cached counts are reused, missing ones computed and stored.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when reading or writing fails.
    pub fn counted_messages(
        &mut self,
        session: &Session,
        include_archived: bool,
    ) -> Result<Vec<Message>, RuntimeError> {
        let counter = super::session_counter(&self.paths, &self.config, session.provider, &session.model);
        self.count_with(counter.as_ref(), session, include_archived)
    }

    pub(super) fn count_with(
        &mut self,
        counter: &dyn TokenCounter,
        session: &Session,
        include_archived: bool,
    ) -> Result<Vec<Message>, RuntimeError> {
        let mut messages = self.store.messages(session.id, include_archived)?;
        let counts = TokenCache::new().count_history(counter, &messages);
        if !counts.newly_counted.is_empty() {
            self.store.set_message_tokens(&counts.newly_counted)?;
        }
        for (m, n) in messages.iter_mut().zip(&counts.tokens) {
            m.tokens = Some(crate::domain::TokenCount {
                tokenizer: counter.id().to_owned(),
                tokens: *n,
            });
        }
        Ok(messages)
    }

    /// The budget of the session's next request under `choice` (the
    /// session's own provider and model, with the config's window and
    /// threshold settings).
    ///
    /// # Errors
    /// [`RuntimeError::NoPrompt`] for a session without a prompt,
    /// [`RuntimeError::Store`] when reading fails.
    pub fn context_report(
        &mut self,
        session: &Session,
        choice: &ModelChoice,
        mcp: Option<&super::McpSession>,
    ) -> Result<ContextReport, RuntimeError> {
        let counter = super::session_counter(&self.paths, &self.config, session.provider, &session.model);
        let prompt = self
            .store
            .current_prompt(session.id)?
            .ok_or(RuntimeError::NoPrompt(session.id))?;
        // Counted here so the counts are kept for the next reader.
        let messages = self.count_with(counter.as_ref(), session, false)?;
        let usage = self.store.usage(session.id)?;
        let compactions = self.store.compactions(session.id)?;
        // The conversation a session would send, with the tools it would
        // offer: the same context the pane shows.
        let conversation =
            self.conversation_from(session.clone(), prompt, messages, &usage, choice, counter)?;
        let (mut conversation, _) = self.offer_tools(conversation, choice, false)?;
        if let Some(mcp) = mcp {
            super::offer_tools::offer_mcp_tools(&mut conversation, mcp, &self.store)?;
        }
        let context = self.live_context(&mut conversation, choice);
        let states = mcp.map(super::McpSession::states).unwrap_or_default();
        let tool_servers = super::tool_costs::tool_servers(&conversation, &states);
        let calibration = calibration_of(&usage);
        let input_tokens = context.budget.input_tokens();
        Ok(ContextReport {
            session_id: session.id,
            model: session.model.clone(),
            input_tokens,
            stored_tokens: context.stored_tokens,
            prelimit_tokens: context.prelimit_tokens,
            report: context.report,
            prepared_tokens: context.prepared_tokens,
            prepare_error: context.prepare_error,
            calibration_ratio: calibration.ratio(),
            calibrated_input_tokens: calibration.apply(input_tokens),
            budget: context.budget,
            compression: self.compression_status(session, choice)?,
            tools_off: context.tools_off,
            cache: super::cache_report::CacheStatus::of(&usage),
            requests: super::cache_report::request_points(&usage, &compactions),
            tool_servers,
        })
    }

    /// Why automatic compression does not run, given the engine's lockout
    /// reason: off in the config, or locked; `None` when it may run. One
    /// sentence for the runtime's client.
    #[must_use]
    pub fn blocked_reason(&self, locked: Option<&crate::compress::LockReason>) -> Option<String> {
        if self.compression_paused {
            Some("automatic compression is paused for this session; /auto-compress on resumes it".to_owned())
        } else if self.config.compression.enabled {
            locked.map(|reason| self.client().lockout(reason))
        } else {
            Some(self.client().compression_off())
        }
    }

    /// The context of the next request of `conversation` under `choice`,
    /// from what it holds (nothing is read from the store): the prepared
    /// request's budget and report, the pre-limit and stored figures. The
    /// last usage and compaction are the caller's to fill in.
    pub fn live_context(
        &self,
        conversation: &mut crate::conversation::Conversation,
        choice: &ModelChoice,
    ) -> super::service::ContextSnapshot {
        let stored = conversation.history_tokens();
        let prepared = conversation.report();
        let blocked = self.blocked_reason(conversation.engine().status().locked.as_ref());
        let next = match &prepared {
            Ok(p) => Ok(NextRequest {
                report: &p.report,
                prepared_tokens: p.prepared_tokens,
                prelimit_tokens: p.prelimit_tokens,
                compression_helps: conversation.worth_compressing(p),
            }),
            Err(e) => Err(e.to_string()),
        };
        context_of(
            conversation,
            &stored,
            next,
            choice,
            self.threshold_settings(),
            blocked,
        )
    }

    /// Automatic compression's state for the session: on or off, strikes,
    /// why it is blocked, the cooldown, and the last compaction.
    ///
    /// # Errors
    /// [`RuntimeError::Store`].
    pub fn compression_status(
        &self,
        session: &Session,
        choice: &ModelChoice,
    ) -> Result<CompressionStatus, RuntimeError> {
        let engine = self.compression_engine(session, choice, super::SummarizerArg::Config)?;
        let status = engine.status();
        let enabled = self.config.compression.enabled;
        let blocked = self.blocked_reason(status.locked.as_ref());
        Ok(CompressionStatus {
            enabled,
            strikes: status.strikes,
            fallbacks_in_row: status.fallbacks_in_row,
            blocked,
            cooldown_until_ms: status.cooldown_until_ms,
            last_compaction: self
                .store
                .compactions(session.id)?
                .into_iter()
                .rev()
                .find(|c| c.undone_at.is_none() && c.kind == crate::domain::CompactionKind::Summary),
        })
    }
}
