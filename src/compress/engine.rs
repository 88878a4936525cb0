//! The compression engine (DESIGN §7): the [`CompressionEngine`] lifecycle
//! (session start, usage updates, should-compress, compress, session end)
//! and [`DefaultEngine`], its trigger state machine and the phases of one
//! compression.
//!
//! A compression is two steps so the engine stays pure: [`prepare`] prunes,
//! finds the boundaries and builds the summariser's [`SummaryRequest`] (none
//! for the extractive summariser); the runtime performs the model call and
//! hands the [`SummaryOutcome`] to [`finish`], which assembles the
//! [`CompressionPlan`]. Authentication and network failures abort with
//! nothing changed; other failures give a labelled extractive fallback.
//! [`prepare_cut`] lets the user choose where the summarised range ends
//! ([`Cut`]: keep the last N exchanges, or up to a message) instead of the
//! tail budget; a summary the user gave ([`SummaryOutcome::Given`]) is
//! used as it is (redacted and framed), never refused for its size.
//!
//! An earlier summary is always folded into the new one (exactly one active
//! summary afterwards): a standalone one is summarised wherever it sits; one
//! that is pinned or carries a merged message outside the middle makes the
//! pass a no-op. Turns (a user message and what follows it) that hold a
//! pinned message stay, whole, after the summary. An excluded message, with
//! the tool call unit it belongs to, is neither summarised nor rewritten:
//! it stays in the active history, excluded, in its place, and costs
//! nothing in the figures (it is not sent).
//!
//! State: strikes (a no-op pass, or a reading still at or over the
//! threshold after a compaction), a lockout after two strikes or two
//! fallback summaries in a row (lifted when a reading fits again), cooldowns
//! after summariser failures. Manual compression bypasses all of it. Times
//! are unix milliseconds passed in.
//!
//! [`prepare`]: CompressionEngine::prepare
//! [`prepare_cut`]: CompressionEngine::prepare_cut
//! [`finish`]: CompressionEngine::finish

use super::assemble::split_summary;
use super::boundary::{Boundaries, Cut, cut_boundaries, find_boundaries_sent};
use super::extractive::{self, ExtractiveInput, Options, Summary, extractive_summary};
use super::input::{SummaryRequest, summary_input, summary_request, target_summary_tokens};
use super::notices::{CompressWarning, LockReason};
use super::prune::Pruner;
use super::view::{Read, Transcript};
use super::{CompressionPlan, cut_at, tokens_of};
use crate::domain::{Message, MessageId, MessageKind, Role, SessionId, Summarizer};
use crate::tokens::TokenCounter;
use std::borrow::Cow;

mod plan;
mod types;

use plan::{SUMMARY_OVER_TARGET, assemble_plan, usable_summary};
pub use types::{
    CompressError, CompressionInput, Decision, EngineConfig, EngineState, EngineStatus, Reading, SkipReason,
    SummarizerChoice, SummaryFailure, SummaryOutcome, Trigger,
};

/// Most passes of one preflight check.
pub const MAX_PREFLIGHT_PASSES: u32 = 3;
/// Strikes (or fallback summaries in a row) that lock automatic compression.
pub const STRIKES_TO_LOCK: u32 = 2;
/// Cap of a fallback summary, chars.
pub const FALLBACK_MAX_CHARS: usize = 8_000;
const FALLBACK_LABEL: &str = include_str!("../../assets/prompts/summary_fallback.md");

/// A prepared compression waiting for its summary.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The model request to perform; `None` for the extractive summariser.
    pub request: Option<SummaryRequest>,
    /// Who writes the summary (a model, or the extractive summariser).
    pub summarizer: Summarizer,
    trigger: Trigger,
    topic: Option<String>,
    /// Per message of the history: the kept ones as pruning left them;
    /// `None` for the summarised ones.
    view: Vec<Option<Message>>,
    /// `seq` and session of the first summarised message.
    first_seq: i64,
    session_id: SessionId,
    originals: Vec<MessageId>,
    rewritten: Vec<bool>,
    /// Per message of the history; a summarised copy may hold its
    /// original's count.
    tokens: Vec<u32>,
    boundaries: Boundaries,
    summarised: Vec<usize>,
    previous: Option<String>,
    /// Tokens of `previous` (0 without one).
    previous_tokens: u64,
    source: Source,
    /// Per message of the history: left out of requests by an exclusion.
    left_out: Vec<bool>,
    /// Per message of the history: excluded or in a tool call unit with an
    /// excluded message (never summarised, rewritten or merged into).
    held: Vec<bool>,
    target_tokens: u32,
    fixed_tokens: u64,
    tokens_before: u64,
    /// Warnings found while preparing (a chosen cut that moved).
    notes: Vec<CompressWarning>,
}

impl Pending {
    /// Head and tail as found for this compression.
    #[must_use]
    pub fn boundaries(&self) -> Boundaries {
        self.boundaries
    }

    /// Tokens the summary should take.
    #[must_use]
    pub fn target_tokens(&self) -> u32 {
        self.target_tokens
    }
}

/// What a summary without a model is made from.
#[derive(Clone, Debug)]
enum Source {
    /// The extractive summariser already ran (in `prepare`): its body and
    /// the counts of its lines.
    Extracted(Summary),
    /// The transcript the model reads, kept for a fallback summary.
    Transcript(Vec<Message>),
}

/// The lifecycle of a compression strategy (DESIGN §7).
pub trait CompressionEngine {
    /// A session starts (or resumes) with these numbers; state is reset.
    fn on_session_start(&mut self, config: EngineConfig);
    /// A response arrived: the provider's `prompt_tokens` (never completion
    /// or reasoning tokens) and strata's estimate of the same request.
    fn on_usage(&mut self, prompt_tokens: u64, estimate: u64);
    /// Whether to compress now, for `trigger`, with the current request
    /// estimate (tokens); records the overflow retry.
    fn should_compress(&mut self, trigger: Trigger, estimate: u64, now_ms: i64) -> Decision;
    /// [`should_compress`](Self::should_compress) for a preflight whose
    /// prepared request leaves whole turns out to fit the window
    /// (`leaves_turns_out`: its pre-limit estimate exceeds what is sent).
    /// Waiting for a reading is then no longer safe: the reading would fit
    /// only because turns were left out, and the next one too, so the
    /// history would never be compressed. Deferral does not apply; the
    /// other rules do.
    fn should_compress_preflight(&mut self, estimate: u64, leaves_turns_out: bool, now_ms: i64) -> Decision {
        match self.should_compress(Trigger::Preflight, estimate, now_ms) {
            Decision::Skip(SkipReason::Deferred) if leaves_turns_out => Decision::Compress,
            decision => decision,
        }
    }
    /// Phases 1–3: pruning, boundaries, summariser input. Errors when there
    /// is nothing worth compressing (a strike for automatic triggers).
    fn prepare(&mut self, trigger: Trigger, input: &CompressionInput<'_>) -> Result<Pending, CompressError> {
        self.prepare_cut(trigger, input, None)
    }
    /// [`prepare`](Self::prepare) with the end of the summarised range
    /// chosen by the user ([`Cut`]) instead of the tail budget; `None` is
    /// `prepare`. Pinned turns still stay after the summary.
    fn prepare_cut(
        &mut self,
        trigger: Trigger,
        input: &CompressionInput<'_>,
        cut: Option<Cut>,
    ) -> Result<Pending, CompressError>;
    /// Phases 3–5 with the summariser's outcome (`None` when no request was
    /// made): the plan to persist, or an abort with nothing changed.
    fn finish(
        &mut self,
        pending: Pending,
        outcome: Option<SummaryOutcome>,
        counter: &dyn TokenCounter,
        now_ms: i64,
    ) -> Result<CompressionPlan, CompressError>;
    /// After a preflight pass was applied: whether another pass should run
    /// (fewer than 3 passes, progress made, still at or over the threshold).
    fn continue_preflight(&mut self, plan: &CompressionPlan) -> bool;
    /// Strikes, lockout and cooldown.
    fn status(&self) -> EngineStatus;
    /// The state to keep between processes (stored with the session).
    fn state(&self) -> EngineState;
    /// Whether an automatic compression of `history` is worth asking for:
    /// something lies outside the protected head and tail, and summarising
    /// it would save at least 10 % of the request. `tokens` are the
    /// messages as the pipeline would send them (oversized ones already
    /// cut: the pre-limit counts), `fixed_tokens` the rest of the request.
    /// When it is not worth it the caller does not ask, so one huge new
    /// message that the pipeline cuts is neither compressed nor a strike.
    /// The saving of free pruning is not counted (an estimate from below).
    /// `dropped` (same order; empty when not known) marks the messages the
    /// request leaves out to fit: never protected.
    fn worth_compressing(
        &self,
        history: &[Message],
        tokens: &[u32],
        dropped: &[bool],
        fixed_tokens: u64,
    ) -> bool;
    /// The session ends; state is dropped.
    fn on_session_end(&mut self);
}

/// How far the preflight estimate may grow past the last reading that fit
/// before it compresses without waiting for the next reading, in tokens:
/// `max(5 % of the threshold, 4,096)` (DESIGN §7), but never more than a
/// fifth of the threshold (the tail budget) when that is smaller. On a small served window
/// (a 3,072-token llama.cpp server: threshold 1,958) a flat 4,096 would
/// exceed the whole window, every preflight would wait for a reading, and
/// the readings always fit because the pipeline leaves older turns out:
/// the history would never be compressed.
#[must_use]
pub fn deferral_slack(threshold: u64) -> u64 {
    (threshold / 20).max(4_096.min(threshold / 5))
}

/// strata's engine: the rules of DESIGN §7.
#[derive(Clone, Debug)]
pub struct DefaultEngine {
    config: EngineConfig,
    status: EngineStatus,
    last_reading: Option<Reading>,
    compacted_since_reading: bool,
    overflow_retry_used: bool,
    passes: u32,
}

impl DefaultEngine {
    /// An engine for a session with `config`.
    #[must_use]
    pub fn new(config: EngineConfig) -> Self {
        Self {
            config,
            status: EngineStatus::default(),
            last_reading: None,
            compacted_since_reading: false,
            overflow_retry_used: false,
            passes: 0,
        }
    }

    /// The configuration in force.
    #[must_use]
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// This engine with a stored state restored.
    #[must_use]
    pub fn with_state(mut self, state: EngineState) -> Self {
        self.status = state.status;
        self.last_reading = state.last_reading;
        self.compacted_since_reading = state.compacted_since_reading;
        self.overflow_retry_used = state.overflow_retry_used;
        self
    }

    /// `prepare` then `finish` with the extractive summariser (no model).
    ///
    /// # Errors
    /// As [`CompressionEngine::prepare`].
    pub fn compress_extractive(
        &mut self,
        trigger: Trigger,
        input: &CompressionInput<'_>,
        now_ms: i64,
    ) -> Result<CompressionPlan, CompressError> {
        let saved = std::mem::replace(&mut self.config.summarizer, SummarizerChoice::Extractive);
        let pending = self.prepare(trigger, input);
        self.config.summarizer = saved;
        self.finish(pending?, None, input.counter, now_ms)
    }

    fn threshold(&self) -> u64 {
        self.config.threshold.effective
    }

    fn strike(&mut self, why: LockReason) {
        self.status.strikes += 1;
        if self.status.strikes >= STRIKES_TO_LOCK {
            self.status.locked = Some(why);
        }
    }

    fn cool_down(&mut self, now_ms: i64, seconds: i64) {
        self.status.cooldown_until_ms = Some(now_ms + seconds * 1_000);
    }
}

/// The turns of `range` (a user message and what follows it up to the next
/// user message); the part before the first user message is a turn too.
/// The messages a compression with `boundaries` would summarise: the
/// middle's turns without a pinned message (an unpinned summary in one
/// still goes), never a message of an excluded unit (`held`), and the
/// summaries after the head; none when a summary would be stranded (pinned,
/// held, or merged into a message) or only summaries would go.
fn summarisable(history: &[Message], boundaries: Boundaries, held: &[bool]) -> Vec<usize> {
    let mut summarised: Vec<usize> = turns(history, boundaries.middle())
        .into_iter()
        .flat_map(|turn| {
            let pinned = history[turn.clone()].iter().any(|m| m.pinned);
            turn.filter(move |&i| {
                !held[i] && (!pinned || (history[i].kind == MessageKind::Summary && !history[i].pinned))
            })
        })
        .collect();
    let mut stranded_summary = false;
    for (i, m) in history.iter().enumerate().skip(boundaries.head_end) {
        if m.kind != MessageKind::Summary || summarised.contains(&i) {
            continue;
        }
        if m.pinned || held[i] || split_summary(&m.content).1.is_some() {
            stranded_summary = true;
        } else {
            summarised.push(i);
        }
    }
    summarised.sort_unstable();
    if stranded_summary
        || summarised
            .iter()
            .all(|&i| history[i].kind == MessageKind::Summary)
    {
        summarised.clear();
    }
    summarised
}

fn turns(history: &[Message], range: std::ops::Range<usize>) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = range.start;
    for i in range.clone() {
        if i > start && history[i].role == Role::User {
            out.push(start..i);
            start = i;
        }
    }
    if start < range.end {
        out.push(start..range.end);
    }
    out
}

impl CompressionEngine for DefaultEngine {
    fn on_session_start(&mut self, config: EngineConfig) {
        *self = Self::new(config);
    }

    fn on_usage(&mut self, prompt_tokens: u64, estimate: u64) {
        let fits = prompt_tokens < self.threshold();
        if self.compacted_since_reading && !fits {
            self.strike(LockReason::StillOverThreshold);
        }
        if fits {
            self.status.strikes = 0;
            self.status.fallbacks_in_row = 0;
            self.status.locked = None;
        }
        self.last_reading = Some(Reading {
            prompt_tokens,
            estimate,
        });
        self.compacted_since_reading = false;
        self.overflow_retry_used = false;
        self.passes = 0;
    }

    fn should_compress(&mut self, trigger: Trigger, estimate: u64, now_ms: i64) -> Decision {
        if trigger == Trigger::Manual {
            return Decision::Compress;
        }
        if !self.config.enabled {
            return Decision::Skip(SkipReason::Disabled);
        }
        if trigger == Trigger::Overflow {
            if self.overflow_retry_used {
                return Decision::Skip(SkipReason::RetryUsed);
            }
            self.overflow_retry_used = true;
            return Decision::Compress;
        }
        if let Some(reason) = &self.status.locked {
            return Decision::Skip(SkipReason::LockedOut(reason.clone()));
        }
        if let Some(until_ms) = self.status.cooldown_until_ms.filter(|u| now_ms < *u) {
            return Decision::Skip(SkipReason::CoolingDown { until_ms });
        }
        let threshold = self.threshold();
        match trigger {
            Trigger::AfterResponse => match self.last_reading {
                Some(r) if r.prompt_tokens >= threshold => Decision::Compress,
                _ => Decision::Skip(SkipReason::BelowThreshold),
            },
            _ => {
                if estimate < threshold {
                    return Decision::Skip(SkipReason::BelowThreshold);
                }
                if self.compacted_since_reading {
                    return Decision::Skip(SkipReason::Deferred);
                }
                let slack = deferral_slack(threshold);
                if let Some(r) = self.last_reading
                    && r.prompt_tokens < threshold
                    && estimate.saturating_sub(r.estimate) <= slack
                {
                    return Decision::Skip(SkipReason::Deferred);
                }
                self.passes = 0;
                Decision::Compress
            }
        }
    }

    fn should_compress_preflight(&mut self, estimate: u64, leaves_turns_out: bool, now_ms: i64) -> Decision {
        match self.should_compress(Trigger::Preflight, estimate, now_ms) {
            Decision::Skip(SkipReason::Deferred) if leaves_turns_out => {
                self.passes = 0;
                Decision::Compress
            }
            decision => decision,
        }
    }

    fn prepare_cut(
        &mut self,
        trigger: Trigger,
        input: &CompressionInput<'_>,
        cut: Option<Cut>,
    ) -> Result<Pending, CompressError> {
        let history = input.messages;
        // Excluded messages are not sent (they cost nothing) and, with the
        // tool call unit they belong to, never summarised or rewritten.
        let left_out = crate::pipeline::exclusions(history).out;
        let held = crate::pipeline::excluded_units(history);
        // A history never counted under this tokenizer is counted on every
        // core.
        let counter = input.counter;
        let sent: Vec<(&Message, bool)> = history.iter().zip(left_out.iter().copied()).collect();
        let uncounted = |m: &Message| m.tokens.as_ref().is_none_or(|t| t.tokenizer != counter.id());
        let tokens: Vec<u32> = crate::tokens::map_each(
            &sent,
            |&(m, out)| {
                if !out && uncounted(m) {
                    crate::tokens::text_bytes(m)
                } else {
                    0
                }
            },
            |&(m, out)| if out { 0 } else { tokens_of(counter, m) },
        );
        // The request's own figures when the caller has them.
        let tokens = match input.sent_tokens.filter(|s| s.len() == history.len()) {
            Some(sent) => sent
                .iter()
                .zip(&left_out)
                .map(|(&t, &out)| if out { 0 } else { t })
                .collect(),
            None => tokens,
        };
        let tokens_before = input.fixed_tokens + tokens.iter().map(|t| u64::from(*t)).sum::<u64>();
        let tail_budget = self.threshold() / 5;
        let mut notes = Vec::new();
        let boundaries = match cut {
            Some(cut) => {
                let (boundaries, moved) = cut_boundaries(history, &tokens, tail_budget, cut)?;
                notes.extend(moved);
                boundaries
            }
            None => {
                let dropped = input.sent_dropped.unwrap_or(&[]);
                let protect = self.config.protect_last_n;
                let found = find_boundaries_sent(history, &tokens, dropped, tail_budget, protect, false);
                // A manual request, or a provider that refused the request
                // as too long (its window is smaller than strata's numbers
                // say), compresses even when the threshold's tail budget
                // covers everything.
                if found.is_empty() && matches!(trigger, Trigger::Manual | Trigger::Overflow) {
                    find_boundaries_sent(history, &tokens, dropped, tail_budget, protect, true)
                } else {
                    found
                }
            }
        };
        let summarised = summarisable(history, boundaries, &held);
        if summarised.is_empty() {
            if trigger.automatic() {
                self.strike(LockReason::NothingToCompress);
            }
            return Err(CompressError::NothingToCompress);
        }
        let pruner = Pruner::new(history, boundaries.tail_start);
        let mut is_summarised = vec![false; history.len()];
        for &i in &summarised {
            is_summarised[i] = true;
        }
        // Rewritten copies are counted where the count is used: the kept
        // ones always (they make `tokens_after`), the summarised ones only
        // when the 10 % rule cannot be decided without their saving.
        let mut view = vec![None; history.len()];
        let mut rewritten = vec![false; history.len()];
        let mut view_tokens = tokens.clone();
        for (i, slot) in view.iter_mut().enumerate() {
            if is_summarised[i] {
                continue;
            }
            let v = pruner.message(i);
            if let Cow::Owned(copy) = &v {
                rewritten[i] = true;
                view_tokens[i] = tokens_of(input.counter, copy);
            }
            *slot = Some(v.into_owned());
        }
        let previous = summarised
            .iter()
            .find(|&&i| history[i].kind == MessageKind::Summary)
            .map(|&i| split_summary(&pruner.message(i).content).0.to_owned());
        let previous_tokens = previous.as_deref().map_or(0, |p| input.counter.count(p) as u64);
        let middle_tokens: u64 = summarised.iter().map(|&i| u64::from(tokens[i])).sum();
        let target_tokens = target_summary_tokens(middle_tokens, self.config.window, previous_tokens);
        let worth_it = |pruned_saving: u64| {
            let saving = (middle_tokens + pruned_saving).saturating_sub(u64::from(target_tokens));
            (saving * 10 >= tokens_before, saving)
        };
        let ten_percent_rule = trigger.automatic() && trigger != Trigger::Overflow;
        if ten_percent_rule && !worth_it(0).0 {
            for &i in &summarised {
                if let Cow::Owned(copy) = pruner.message(i) {
                    view_tokens[i] = tokens_of(input.counter, &copy);
                }
            }
        }
        let pruned_saving: u64 = (0..history.len())
            .map(|i| u64::from(tokens[i].saturating_sub(view_tokens[i])))
            .sum();
        let (enough, saving) = worth_it(pruned_saving);
        if ten_percent_rule && !enough {
            self.strike(LockReason::UnderTenPercent);
            return Err(CompressError::NotWorthIt {
                percent: saving * 100 / tokens_before.max(1),
            });
        }
        let (request, summarizer, source) = match &self.config.summarizer {
            SummarizerChoice::Model(name) => {
                let messages = Transcript::new(&pruner, history, &summarised, Read::Pruned).to_vec();
                let refs: Vec<&Message> = messages.iter().collect();
                let text = summary_input(&refs);
                let request = summary_request(&text, previous.as_deref(), input.topic, target_tokens);
                (
                    Some(request),
                    Summarizer::Model(name.clone()),
                    Source::Transcript(messages),
                )
            }
            SummarizerChoice::Extractive => {
                let transcript = Transcript::new(&pruner, history, &summarised, Read::Whole);
                let body = extractive::summarise(
                    &transcript,
                    &Options {
                        previous: previous.as_deref(),
                        topic: input.topic,
                        budget_tokens: target_tokens,
                        max_chars: None,
                        counter: input.counter,
                    },
                );
                (None, Summarizer::Extractive, Source::Extracted(body))
            }
        };
        let first = &history[summarised[0]];
        Ok(Pending {
            request,
            summarizer,
            trigger,
            topic: input.topic.map(str::to_owned),
            originals: history.iter().map(|m| m.id).collect(),
            rewritten,
            view,
            first_seq: first.seq,
            session_id: first.session_id,
            tokens: view_tokens,
            boundaries,
            summarised,
            previous,
            previous_tokens,
            source,
            left_out,
            held,
            target_tokens,
            fixed_tokens: input.fixed_tokens,
            tokens_before,
            notes,
        })
    }

    fn finish(
        &mut self,
        pending: Pending,
        outcome: Option<SummaryOutcome>,
        counter: &dyn TokenCounter,
        now_ms: i64,
    ) -> Result<CompressionPlan, CompressError> {
        let mut warnings = pending.notes.clone();
        let extract = |max_chars: Option<usize>, budget: u32| match &pending.source {
            Source::Transcript(messages) => {
                let refs: Vec<&Message> = messages.iter().collect();
                extractive_summary(&ExtractiveInput {
                    messages: &refs,
                    previous: pending.previous.as_deref(),
                    topic: pending.topic.as_deref(),
                    budget_tokens: budget,
                    max_chars,
                    counter,
                })
            }
            // Made by `prepare` for the extractive summariser, within the
            // target; a fallback cap (never asked of it) cuts it.
            Source::Extracted(summary) => match max_chars {
                Some(max) => cut_at(&summary.body, max).to_owned(),
                None => summary.body.clone(),
            },
        };
        let failure = match outcome {
            None => None,
            Some(SummaryOutcome::Summary(text)) => match usable_summary(&text) {
                Some(body) => {
                    let tokens = counter.count(&body) as u64;
                    let asked = u64::from(pending.target_tokens);
                    if tokens > SUMMARY_OVER_TARGET * asked {
                        Some(Err(SummaryFailure::Malformed(format!(
                            "the summariser's reply is {} tokens, more than {SUMMARY_OVER_TARGET} times the {} asked for",
                            crate::text::group_digits(tokens),
                            crate::text::group_digits(asked),
                        ))))
                    } else {
                        let earlier = pending.previous_tokens;
                        if tokens * 2 < earlier {
                            warnings.push(CompressWarning::SummaryShrank { tokens, earlier });
                        }
                        self.status.fallbacks_in_row = 0;
                        Some(Ok(body))
                    }
                }
                None if text.trim().is_empty() => Some(Err(SummaryFailure::Malformed(
                    "the summariser returned an empty reply".to_owned(),
                ))),
                None => Some(Err(SummaryFailure::Malformed(
                    "the summariser's reply holds no text".to_owned(),
                ))),
            },
            Some(SummaryOutcome::Failed(f)) => Some(Err(f)),
            Some(SummaryOutcome::Given(text)) => match usable_summary(&text) {
                Some(body) => Some(Ok(body)),
                None => return Err(CompressError::EmptySummary),
            },
        };
        let (body, summarizer) = match failure {
            None => (extract(None, pending.target_tokens), Summarizer::Extractive),
            Some(Ok(body)) => (body, pending.summarizer.clone()),
            Some(Err(SummaryFailure::Auth(why) | SummaryFailure::Network(why))) => {
                if pending.trigger.automatic() {
                    self.cool_down(now_ms, 60);
                }
                return Err(CompressError::Aborted(why));
            }
            Some(Err(f)) => {
                let (why, seconds) = match f {
                    SummaryFailure::Malformed(w) => (w, 30),
                    SummaryFailure::NoModel(w) => (w, 600),
                    SummaryFailure::Other(w) | SummaryFailure::Auth(w) | SummaryFailure::Network(w) => {
                        (w, 60)
                    }
                };
                self.cool_down(now_ms, seconds);
                self.status.fallbacks_in_row += 1;
                if self.status.fallbacks_in_row >= STRIKES_TO_LOCK {
                    self.status.locked = Some(LockReason::FallbacksInRow);
                }
                warnings.push(CompressWarning::Fallback { why: why.clone() });
                let label = FALLBACK_LABEL.trim().replace("{reason}", &why);
                let budget = pending.target_tokens.min(2_000);
                (
                    format!(
                        "{label}\n\n{}",
                        extract(Some(FALLBACK_MAX_CHARS - label.len()), budget)
                    ),
                    Summarizer::Fallback,
                )
            }
        };
        // The extractive body's lines were counted while choosing them.
        let line_tokens = match (&pending.source, &summarizer) {
            (Source::Extracted(summary), Summarizer::Extractive) => Some(&summary.line_tokens),
            _ => None,
        };
        let plan = assemble_plan(
            &pending,
            &body,
            summarizer.clone(),
            warnings,
            counter,
            line_tokens,
            now_ms,
        );
        // Asked for by hand, a compression of short messages is still made
        // (the feedback says the summary is longer); an automatic one that
        // saves nothing is a strike and changes nothing.
        if pending.trigger.automatic() && plan.tokens_after >= plan.tokens_before {
            self.strike(LockReason::NoSaving);
            return Err(CompressError::NoSaving {
                before: plan.tokens_before,
                after: plan.tokens_after,
            });
        }
        self.compacted_since_reading = true;
        // A compression the user asked for that brings the context under
        // the threshold ends a pause: the next reading would clear it anyway.
        if pending.trigger == Trigger::Manual
            && plan.tokens_after < self.threshold()
            && plan.summarizer != Summarizer::Fallback
        {
            self.status.strikes = 0;
            self.status.fallbacks_in_row = 0;
            self.status.locked = None;
        }
        Ok(plan)
    }

    fn continue_preflight(&mut self, plan: &CompressionPlan) -> bool {
        self.passes += 1;
        let progress = plan.messages_after < plan.messages_before
            || u128::from(plan.tokens_after) * 100 < u128::from(plan.tokens_before) * 95;
        if !progress {
            self.strike(LockReason::NoProgress);
            return false;
        }
        self.passes < MAX_PREFLIGHT_PASSES && plan.tokens_after >= self.threshold()
    }

    fn status(&self) -> EngineStatus {
        self.status.clone()
    }

    fn state(&self) -> EngineState {
        EngineState {
            status: self.status.clone(),
            last_reading: self.last_reading,
            compacted_since_reading: self.compacted_since_reading,
            overflow_retry_used: self.overflow_retry_used,
        }
    }

    fn worth_compressing(
        &self,
        history: &[Message],
        tokens: &[u32],
        dropped: &[bool],
        fixed_tokens: u64,
    ) -> bool {
        let boundaries = find_boundaries_sent(
            history,
            tokens,
            dropped,
            self.threshold() / 5,
            self.config.protect_last_n,
            false,
        );
        // What a compression would really summarise: pinned turns and
        // excluded units stay, so they save nothing.
        let held = crate::pipeline::excluded_units(history);
        let summarised = summarisable(history, boundaries, &held);
        if summarised.is_empty() {
            return false;
        }
        let sum = |t: &[u32]| t.iter().map(|&n| u64::from(n)).sum::<u64>();
        let middle: u64 = summarised.iter().map(|&i| u64::from(tokens[i])).sum();
        let total = fixed_tokens + sum(tokens);
        let target = u64::from(target_summary_tokens(middle, self.config.window, 0));
        middle.saturating_sub(target) * 10 >= total
    }

    fn on_session_end(&mut self) {
        self.status = EngineStatus::default();
        self.last_reading = None;
    }
}
