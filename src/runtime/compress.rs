//! Running a compression against the store and, when the summariser is a
//! model, a provider: the engine's plan (pure, `crate::compress`), the
//! summariser call, and the one-transaction persistence of DESIGN §7; undo.
//! A request may choose the end of the summarised range (keep the last N
//! exchanges, or up to a message), give the summary itself (a previewed
//! one, edited or not: no summariser runs), or ask for a preview (the
//! summariser runs, nothing is stored and no engine state is saved).
//!
//! Every path that estimates a request (`strata context`, the triggers, the
//! engine's tail walk) goes through [`Runtime::snapshot`], so the numbers
//! agree: they are computed by one function from one set of counts.

use super::{Runtime, RuntimeError};
use crate::compress::{
    self, CompressError, CompressWarning, CompressionEngine, CompressionInput, CompressionPlan, Cut,
    DefaultEngine, EngineConfig, EngineState, SummarizerChoice, SummaryOutcome, Trigger,
};
use crate::config::{ModelChoice, ProviderKind};
use crate::domain::{Compaction, CompactionId, Message, MessageId, Session, Summarizer, SystemPrompt};
use crate::provider::Provider;
use crate::store::CompactionWrite;
use crate::tokens::{Budget, BudgetInput, Threshold, ThresholdSettings, TokenCounter};
use std::path::Path;
use std::sync::Arc;

mod outcome;
mod summarise;

pub use outcome::{CompressOutcome, KeptMessage, PREVIEW_CHARS, UndoOutcome};
use outcome::{Made, kept_verbatim, noop};
use summarise::summarise;

/// A session's next request as estimated now: the frozen prompt, the
/// counter, the active messages with their cached counts, and the budget.
pub struct Snapshot {
    /// The current prompt version.
    pub prompt: SystemPrompt,
    /// The session's counter.
    pub counter: Arc<dyn TokenCounter>,
    /// Active messages, each with its count under `counter`.
    pub messages: Vec<Message>,
    /// Their counts, in order.
    pub history_tokens: Vec<u32>,
    /// The budget of the next request.
    pub budget: Budget,
    /// What each message costs that request as the pipeline sends it (a
    /// message too large to send whole: its cut copy), when it could be
    /// prepared.
    pub sent_tokens: Option<Vec<u32>>,
    /// The messages that request leaves out to fit, when it could be
    /// prepared.
    pub sent_dropped: Option<Vec<bool>>,
}

impl Snapshot {
    /// Takes what `prepared` (the pipeline on this snapshot's messages)
    /// says each message costs the request and which it leaves out.
    pub fn sent_with(&mut self, prepared: &crate::pipeline::Prepared) {
        self.sent_tokens = Some(prepared.prelimit_counts.clone());
        self.sent_dropped = Some(
            prepared
                .report
                .iter()
                .map(|r| r.action == crate::pipeline::Action::Dropped)
                .collect(),
        );
    }

    /// The request's input estimate (the budget's), tokens.
    #[must_use]
    pub fn input_tokens(&self) -> u64 {
        self.budget.input_tokens()
    }

    /// Everything in the input estimate besides the messages (system
    /// prompt, tool schemas, request overhead), tokens.
    #[must_use]
    pub fn fixed_tokens(&self) -> u64 {
        let history: u64 = self.history_tokens.iter().map(|t| u64::from(*t)).sum();
        self.input_tokens().saturating_sub(history)
    }
}

/// The budget of a request holding `messages` at `tokens` each with
/// `prompt`, under `choice`'s window and output reserve and `threshold`.
pub(super) fn budget_with(
    prompt: &SystemPrompt,
    counter: &dyn TokenCounter,
    messages: &[Message],
    tokens: &[u32],
    choice: &ModelChoice,
    threshold: ThresholdSettings,
    tools: &[crate::tokens::BudgetItem],
) -> Budget {
    let layers = super::exact_counts::layers_for(prompt, counter);
    let mut budget = Budget::compute(BudgetInput {
        layers: &layers,
        boundary_offset: prompt.boundary_offset,
        history: messages,
        history_tokens: tokens,
        tools,
        window: choice.context_window,
        reserved_output: choice.max_tokens,
        threshold,
        tokenizer: counter.id(),
        exact: counter.exact(),
    });
    choice
        .window_source
        .as_str()
        .clone_into(&mut budget.window_source);
    budget
}

/// `per` (one value per message of `messages`) for the settled messages
/// only, as the engine reads the history (a reply still streaming is not
/// part of a compression).
fn settled_only<T: Copy>(messages: &[Message], per: &[T]) -> Vec<T> {
    messages
        .iter()
        .zip(per)
        .filter(|(m, _)| m.status != crate::domain::MessageStatus::Streaming)
        .map(|(_, &v)| v)
        .collect()
}

/// A compaction as stored: the plan applied, the prompt version made
/// current with it, and its row.
pub(super) struct StoredCompaction {
    pub plan: CompressionPlan,
    pub prompt: SystemPrompt,
    pub compaction: Compaction,
}

/// When the summariser is the session's own model and its request (the
/// summary prompt, counted with the session's counter, plus twice the
/// target as output, as [`summarise`] asks) exceeds `choice`'s context
/// window: the warning that the extractive summariser writes the summary
/// instead. A small served window (a llama.cpp server started with `-c
/// 512`) would refuse the request, and its error would become the summary.
fn summariser_overflow(
    choice: &ModelChoice,
    pending: &compress::Pending,
    request: &compress::SummaryRequest,
    snapshot: &Snapshot,
) -> Option<CompressWarning> {
    if pending.summarizer.as_str() != choice.model {
        return None;
    }
    let needed = snapshot.counter.count(&request.prompt) as u64 + 2 * u64::from(request.target_tokens);
    (needed > choice.context_window).then_some(CompressWarning::SummariserWindow {
        needed,
        window: choice.context_window,
    })
}

/// Who writes the summary, as asked on the command line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SummarizerArg {
    /// The config's `[compression] summarizer` (default `auto`).
    #[default]
    Config,
    /// The session's model.
    Model,
    /// The extractive summariser (no model).
    Extractive,
}

/// Longest topic of `/compress <topic>` and `strata compress --topic`, chars.
pub const MAX_TOPIC_CHARS: usize = 200;

/// A typed topic on one line (each run of whitespace, line breaks
/// included, becomes one space; control and bidirectional formatting
/// characters are dropped, so it cannot act on a terminal when shown);
/// `None` when blank.
///
/// # Errors
/// The sentence to show when it is longer than [`MAX_TOPIC_CHARS`].
pub fn compress_topic(raw: &str) -> Result<Option<String>, String> {
    let topic = crate::text::strip_terminal_controls(raw, true)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let chars = topic.chars().count();
    if chars > MAX_TOPIC_CHARS {
        return Err(format!(
            "The topic is {chars} characters long; give one of at most {MAX_TOPIC_CHARS} characters (a few words of what the summary should focus on)."
        ));
    }
    Ok((!topic.is_empty()).then_some(topic))
}

/// One compression to run.
pub struct CompressRequest<'a> {
    /// What asks for it.
    pub trigger: Trigger,
    /// `/compress <topic>`.
    pub topic: Option<String>,
    /// Who summarises.
    pub summarizer: SummarizerArg,
    /// Plan only: nothing is stored and no model is called (a model
    /// summary is stood in for by the extractive one, with a warning).
    pub dry_run: bool,
    /// The session's provider, model and window.
    pub choice: &'a ModelChoice,
    /// The provider to summarise with; `None` when none is connected.
    pub provider: Option<&'a dyn Provider>,
    /// Apply a manual compression even when it makes the request bigger
    /// (`--force`); without, such a compression changes nothing.
    pub force: bool,
    /// Keep exactly the last N exchanges verbatim (an exchange: a real user
    /// message and everything up to the next one); the boundary is set
    /// there instead of by the tail budget. At least 1.
    pub keep_last: Option<usize>,
    /// Summarise this active message and everything before it (after the
    /// protected head); the boundary moves forward to the end of its
    /// exchange, and the outcome says where it landed.
    pub up_to: Option<MessageId>,
    /// Store this summary body instead of calling a summariser (redacted
    /// and framed like any other; never generated twice).
    pub summary: Option<String>,
    /// Whether the user changed `summary` (the compaction row's `edited`).
    pub summary_edited: bool,
    /// Run the summariser and say what would be stored, changing nothing:
    /// no store write, no engine state saved.
    pub preview: bool,
}

impl CompressRequest<'_> {
    /// Whether nothing is to be stored (a dry run or a preview).
    #[must_use]
    pub fn stores_nothing(&self) -> bool {
        self.dry_run || self.preview
    }
}

impl Runtime {
    /// The session's next request as estimated now, under `choice`'s window
    /// and output reserve. Missing counts are computed and stored.
    ///
    /// # Errors
    /// [`RuntimeError::NoPrompt`]; [`RuntimeError::Store`].
    pub fn snapshot(&mut self, session: &Session, choice: &ModelChoice) -> Result<Snapshot, RuntimeError> {
        let prompt = self
            .store
            .current_prompt(session.id)?
            .ok_or(RuntimeError::NoPrompt(session.id))?;
        let counter = super::session_counter(&self.paths, &self.config, session.provider, &session.model);
        let messages = self.count_with(counter.as_ref(), session, false)?;
        let history_tokens: Vec<u32> = messages
            .iter()
            .map(|m| compress::tokens_of(counter.as_ref(), m))
            .collect();
        let mut snapshot = self.snapshot_of(prompt, counter, messages, history_tokens, choice);
        if let Some(prepared) = self.sent_counts(&snapshot, choice) {
            snapshot.sent_with(&prepared);
        }
        Ok(snapshot)
    }

    /// What the pipeline says of the request it would prepare from
    /// `snapshot` (see [`Snapshot::sent_tokens`]); `None` when none can be
    /// prepared.
    fn sent_counts(&self, snapshot: &Snapshot, choice: &ModelChoice) -> Option<crate::pipeline::Prepared> {
        let counter = snapshot.counter.as_ref();
        let system = crate::domain::RequestSystem {
            text: snapshot.prompt.text.clone(),
            boundary_offset: snapshot.prompt.boundary_offset,
        };
        let input = crate::pipeline::PrepareInput {
            system: &system,
            system_tokens: u32::try_from(counter.count(&snapshot.prompt.text)).unwrap_or(u32::MAX),
            messages: &snapshot.messages,
            counts: &snapshot.history_tokens,
            counter,
            tools: &[],
            tool_tokens: snapshot.budget.categories.tools.tokens,
            window: choice.context_window,
            reserved_output: choice.max_tokens,
            exact: counter.exact(),
            max_messages: self.config.history.max_messages,
            single_system: false,
            model: &choice.model,
            max_tokens: choice.max_tokens,
            temperature: None,
        };
        crate::pipeline::report_with(&input, &mut crate::pipeline::CutMemo::new()).ok()
    }

    /// A snapshot from parts already in memory (a conversation's prompt,
    /// counter and counted history): nothing is read from the store.
    pub(super) fn snapshot_of(
        &self,
        prompt: SystemPrompt,
        counter: Arc<dyn TokenCounter>,
        messages: Vec<Message>,
        history_tokens: Vec<u32>,
        choice: &ModelChoice,
    ) -> Snapshot {
        let budget = self.budget_of(&prompt, counter.as_ref(), &messages, &history_tokens, choice);
        Snapshot {
            prompt,
            counter,
            messages,
            history_tokens,
            budget,
            sent_tokens: None,
            sent_dropped: None,
        }
    }

    /// The budget of a request holding `messages` at `tokens` each (their
    /// stored counts, or their size in the prepared request) with `prompt`,
    /// under `choice`'s window and output reserve.
    pub(super) fn budget_of(
        &self,
        prompt: &SystemPrompt,
        counter: &dyn TokenCounter,
        messages: &[Message],
        tokens: &[u32],
        choice: &ModelChoice,
    ) -> Budget {
        let tools = self
            .tools_for(prompt.session_id, choice, None)
            .0
            .map(|set| crate::tokens::tool_schema_items(counter, set.array()))
            .unwrap_or_default();
        budget_with(
            prompt,
            counter,
            messages,
            tokens,
            choice,
            self.threshold_settings(),
            &tools,
        )
    }

    pub(super) fn threshold_settings(&self) -> ThresholdSettings {
        ThresholdSettings {
            ratio: self.config.compression.threshold,
            cap_tokens: self.config.compression.threshold_tokens,
        }
    }

    /// The compression engine of `session` under `choice`, with its stored
    /// state (strikes, lockout, cooldown, last reading) restored.
    ///
    /// # Errors
    /// [`RuntimeError::Store`].
    pub fn compression_engine(
        &self,
        session: &Session,
        choice: &ModelChoice,
        summarizer: SummarizerArg,
    ) -> Result<DefaultEngine, RuntimeError> {
        let c = &self.config.compression;
        let config = EngineConfig {
            window: choice.context_window,
            reserved_output: choice.max_tokens,
            threshold: Threshold::compute(
                choice.context_window,
                choice.max_tokens,
                c.threshold,
                c.threshold_tokens,
            ),
            protect_last_n: c.protect_last_n,
            summarizer: self.summarizer_choice(session, summarizer),
            enabled: c.enabled && !self.compression_paused,
        };
        let state: EngineState = self
            .store
            .compression_state(session.id)?
            .and_then(|json| serde_json::from_str(&json).ok())
            .unwrap_or_default();
        Ok(DefaultEngine::new(config).with_state(state))
    }

    /// Stores the engine's state for the session.
    ///
    /// # Errors
    /// [`RuntimeError::Store`].
    pub fn save_compression_state(
        &mut self,
        session: &Session,
        engine: &dyn CompressionEngine,
    ) -> Result<(), RuntimeError> {
        self.save_engine_state(session.id, &engine.state())
    }

    /// Stores an engine state for the session.
    ///
    /// # Errors
    /// [`RuntimeError::Store`].
    pub(super) fn save_engine_state(
        &mut self,
        session: crate::domain::SessionId,
        state: &EngineState,
    ) -> Result<(), RuntimeError> {
        let json = serde_json::to_string(state).unwrap_or_default();
        self.store.set_compression_state(session, &json)?;
        Ok(())
    }

    /// Who summarises `session` for `arg`. `auto`: the session's model, but the extractive summariser for the
    /// embedded model (it cannot summarise); a configured model name is
    /// used as given.
    #[must_use]
    pub fn summarizer_choice(&self, session: &Session, arg: SummarizerArg) -> SummarizerChoice {
        let configured = self.config.compression.summarizer.trim();
        match arg {
            SummarizerArg::Extractive => SummarizerChoice::Extractive,
            // The embedded model cannot summarise (compress_planned says so).
            SummarizerArg::Model if session.provider == ProviderKind::Local => SummarizerChoice::Extractive,
            SummarizerArg::Model => SummarizerChoice::Model(session.model.clone()),
            SummarizerArg::Config => match configured {
                "extractive" => SummarizerChoice::Extractive,
                "" | "auto" if session.provider == ProviderKind::Local => SummarizerChoice::Extractive,
                "" | "auto" => SummarizerChoice::Model(session.model.clone()),
                _ if session.provider == ProviderKind::Local => SummarizerChoice::Extractive,
                name => SummarizerChoice::Model(name.to_owned()),
            },
        }
    }

    /// Runs one compression of `session` with `engine` (whose state the
    /// caller saves): plan, summarise, persist. A no-op (nothing outside
    /// the protected messages, or an automatic pass not worth it) is an
    /// outcome with `noop` set and no plan, not an error. A reply still
    /// streaming is left out of the compression.
    ///
    /// Logged as a `compress{session, trigger}` span (the summariser's
    /// request inside it) with a start and an end line: sizes, summariser
    /// and duration, never the summary.
    ///
    /// # Errors
    /// [`RuntimeError::Compress`] when the summariser failed to connect or
    /// authenticate (nothing changed); [`RuntimeError::Store`].
    pub(super) async fn compress_planned(
        &mut self,
        session: &Session,
        engine: &mut dyn CompressionEngine,
        snapshot: &Snapshot,
        req: &CompressRequest<'_>,
    ) -> Result<(CompressOutcome, Option<StoredCompaction>), RuntimeError> {
        use tracing::Instrument as _;
        let span = tracing::info_span!("compress", session = %session.id, trigger = ?req.trigger);
        let started = std::time::Instant::now();
        span.in_scope(|| {
            tracing::info!(
                dry_run = req.dry_run,
                preview = req.preview,
                given_summary = req.summary.is_some(),
                "compression started"
            );
        });
        let result = self
            .plan_and_persist(session, engine, snapshot, req)
            .instrument(span.clone())
            .await;
        let _entered = span.enter();
        let duration_ms = started.elapsed().as_millis();
        match &result {
            Ok((o, _)) => tracing::info!(
                duration_ms,
                noop = o.noop,
                messages_before = o.messages_before,
                messages_after = o.messages_after,
                tokens_before = o.tokens_before,
                tokens_after = o.tokens_after,
                summarizer = o.summarizer.as_ref().map(Summarizer::as_str),
                "compression finished"
            ),
            Err(error) => tracing::warn!(duration_ms, %error, "compression failed"),
        }
        result
    }

    /// [`Runtime::compress_planned`] without its log lines.
    async fn plan_and_persist(
        &mut self,
        session: &Session,
        engine: &mut dyn CompressionEngine,
        snapshot: &Snapshot,
        req: &CompressRequest<'_>,
    ) -> Result<(CompressOutcome, Option<StoredCompaction>), RuntimeError> {
        let settled = super::session::settled(snapshot.messages.iter().cloned());
        // Per settled message, as the engine reads the history.
        let sent_tokens = snapshot
            .sent_tokens
            .as_deref()
            .map(|per| settled_only(&snapshot.messages, per));
        let sent_dropped = snapshot
            .sent_dropped
            .as_deref()
            .map(|per| settled_only(&snapshot.messages, per));
        // The topic is typed by the user and goes to the summariser and the
        // record: it is redacted like the history.
        let topic = match req.topic.as_deref().map(compress_topic).transpose() {
            Ok(topic) => topic.flatten().map(|t| compress::redact(&t).into_owned()),
            Err(why) => return Err(RuntimeError::Compress(why)),
        };
        let input = CompressionInput {
            messages: &settled,
            fixed_tokens: snapshot.fixed_tokens(),
            counter: snapshot.counter.as_ref(),
            topic: topic.as_deref(),
            sent_tokens: sent_tokens.as_deref(),
            sent_dropped: sent_dropped.as_deref(),
        };
        let now = super::now_ms();
        let cut = match (req.keep_last, req.up_to) {
            (Some(_), Some(_)) => {
                return Err(RuntimeError::Compress(
                    "Give either the number of exchanges to keep or the message to compress up to, not both."
                        .to_owned(),
                ));
            }
            (Some(keep), None) => Some(Cut::KeepLast(keep)),
            (None, Some(id)) => Some(Cut::UpTo(id)),
            (None, None) => None,
        };
        let pending = match engine.prepare_cut(req.trigger, &input, cut) {
            Ok(p) => p,
            Err(
                e @ (CompressError::NothingToCompress
                | CompressError::NotWorthIt { .. }
                | CompressError::NothingBeforeCut),
            ) => {
                let reason = self.client().compress_error(&e);
                return Ok((noop(snapshot, req, topic, reason), None));
            }
            Err(e) => return Err(RuntimeError::Compress(e.to_string())),
        };
        let tail_from = pending.boundaries().tail_start + 1;
        let mut warnings = Vec::new();
        let asked_model = match req.summarizer {
            SummarizerArg::Model => true,
            SummarizerArg::Extractive => false,
            SummarizerArg::Config => !matches!(
                self.config.compression.summarizer.trim(),
                "" | "auto" | "extractive"
            ),
        };
        if asked_model && session.provider == ProviderKind::Local {
            warnings.push(CompressWarning::EmbeddedExtractive);
        }
        let outcome = match (&req.summary, &pending.request, req.dry_run) {
            (Some(given), _, _) => Some(SummaryOutcome::Given(given.clone())),
            (None, None, _) => None,
            (None, Some(_), true) => {
                warnings.push(CompressWarning::DryRunStandIn);
                None
            }
            (None, Some(request), false) => {
                match summariser_overflow(req.choice, &pending, request, snapshot) {
                    Some(warning) => {
                        warnings.push(warning);
                        None
                    }
                    None => Some(
                        summarise(
                            req.provider,
                            pending.summarizer.as_str(),
                            &request.prompt,
                            request.target_tokens,
                        )
                        .await,
                    ),
                }
            }
        };
        let mut plan = match engine.finish(pending, outcome, snapshot.counter.as_ref(), now) {
            Ok(plan) => plan,
            Err(e @ CompressError::NoSaving { .. }) => {
                let reason = self.client().compress_error(&e);
                return Ok((noop(snapshot, req, topic, reason), None));
            }
            Err(e) => return Err(RuntimeError::Compress(e.to_string())),
        };
        plan.warnings.extend(warnings);
        let made = |compaction_id| Made {
            compaction_id,
            kept_verbatim: kept_verbatim(snapshot, &plan),
            tail_from,
        };
        // A preview shows a summary that makes the request bigger too: the
        // client asks again before applying it.
        if req.stores_nothing() {
            return Ok((self.outcome_of(&plan, req, made(None)), None));
        }
        if req.trigger == Trigger::Manual && !req.force && plan.tokens_after > plan.tokens_before {
            let reason = self
                .client()
                .compress_grows(plan.tokens_before, plan.tokens_after);
            let mut outcome = noop(snapshot, req, topic, reason);
            outcome.tokens_after = plan.tokens_after;
            return Ok((outcome, None));
        }
        let (compaction, prompt) = self.persist(session, snapshot, &plan, req, now)?;
        let outcome = self.outcome_of(&plan, req, made(Some(compaction.id)));
        Ok((
            outcome,
            Some(StoredCompaction {
                plan,
                prompt,
                compaction,
            }),
        ))
    }

    /// `strata compress` and `/compress`: a compression with the session's
    /// engine, whose state is saved afterwards (not after a dry run or a
    /// preview, which change nothing).
    ///
    /// # Errors
    /// As [`Runtime::compress_planned`].
    pub async fn compress(
        &mut self,
        session: &Session,
        req: &CompressRequest<'_>,
    ) -> Result<CompressOutcome, RuntimeError> {
        let mut engine = self.compression_engine(session, req.choice, req.summarizer)?;
        let snapshot = self.snapshot(session, req.choice)?;
        let outcome = self.compress_planned(session, &mut engine, &snapshot, req).await;
        if !req.stores_nothing() {
            self.save_compression_state(session, &engine)?;
        }
        outcome.map(|(outcome, _)| outcome)
    }

    /// Undoes the session's latest compaction: its originals are active
    /// again and the prompt version current before it is current again.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] (`NothingToUndo` when there is none).
    pub fn undo_compress(&mut self, session: &Session) -> Result<UndoOutcome, RuntimeError> {
        let undone = self.store.undo_compaction(session.id)?;
        let messages = self.store.messages(session.id, false)?.len();
        let prompt_version = self.store.current_prompt(session.id)?.map_or(0, |p| p.version);
        Ok(UndoOutcome {
            compaction_id: undone.id,
            messages,
            prompt_version,
        })
    }

    fn persist(
        &mut self,
        session: &Session,
        snapshot: &Snapshot,
        plan: &CompressionPlan,
        req: &CompressRequest<'_>,
        now: i64,
    ) -> Result<(Compaction, SystemPrompt), RuntimeError> {
        let before = &snapshot.prompt;
        let prompt = self.rebuilt_prompt(session, before, req.choice)?;
        let mut archived: Vec<(i64, MessageId)> = snapshot
            .messages
            .iter()
            .filter(|m| plan.archived.contains(&m.id))
            .map(|m| (m.seq, m.id))
            .collect();
        archived.sort_unstable();
        let compaction = Compaction {
            id: CompactionId::new(),
            session_id: session.id,
            trigger: plan.trigger,
            topic: plan.topic.clone(),
            first_message_id: archived.first().map(|a| a.1),
            last_message_id: archived.last().map(|a| a.1),
            summary_message_id: Some(plan.summary.id),
            summarizer: plan.summarizer.clone(),
            tokens_before: plan.tokens_before,
            tokens_after: plan.tokens_after,
            messages_before: plan.messages_before as u64,
            messages_after: plan.messages_after as u64,
            prompt_before_id: Some(before.id),
            prompt_after_id: Some(prompt.id),
            undone_at: None,
            created_at: now,
            kind: crate::domain::CompactionKind::Summary,
            edited: req.summary.is_some() && req.summary_edited,
        };
        let mut inserted = vec![plan.summary.clone()];
        inserted.extend(plan.rewritten.iter().map(|(_, copy)| copy.clone()));
        self.store.apply_compaction(&CompactionWrite {
            compaction: &compaction,
            archived: &plan.archived,
            inserted: &inserted,
            prompt: Some(&prompt),
        })?;
        Ok((compaction, prompt))
    }

    /// The next prompt version of `session`, built afresh from the
    /// workspace with the current version's fingerprint (a compaction
    /// invalidates the provider's prompt cache anyway, so edited instruction
    /// files are picked up here).
    pub(super) fn rebuilt_prompt(
        &mut self,
        session: &Session,
        current: &SystemPrompt,
        choice: &ModelChoice,
    ) -> Result<SystemPrompt, RuntimeError> {
        self.rebuilt_prompt_in(session, current, choice, Path::new(&session.workspace))
    }

    /// [`Runtime::rebuilt_prompt`] as seen from `cwd` (in the workspace:
    /// the instruction files between the root and it are read).
    pub(super) fn rebuilt_prompt_in(
        &self,
        session: &Session,
        current: &SystemPrompt,
        choice: &ModelChoice,
        cwd: &Path,
    ) -> Result<SystemPrompt, RuntimeError> {
        Ok(self
            .prompt_rebuild(session, current.clone(), choice, cwd)?
            .build())
    }
}
