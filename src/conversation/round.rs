//! The tool round of a turn (DESIGN §15 "Loop"): a reply with `tool_calls`
//! becomes one [`Effect::RunTool`] per call that may run, an
//! [`Effect::AskApproval`] for a call that must ask first, and a result for
//! every call — ok, error, denied, interrupted or not run — stored in call
//! order as `tool` messages once the whole round has answered; then the
//! turn's next model request follows.
//!
//! Scheduling is decided here, not by the runtime: calls are taken in call
//! order; read-only calls run concurrently, at most [`MAX_CONCURRENT`] at
//! once; a call that writes or runs a program waits for the calls before it
//! and runs alone; an approval is asked only when nothing runs. Arguments
//! that are not JSON and unknown tool names become error results the model
//! reads, without running anything.

use super::{Conversation, Effect, Phase, TurnNotice};
use crate::domain::{Message, Role, ToolCall, ToolResultMeta, ToolStatus};
use crate::tooling::approval::{self, DeniedBy, Policy, Rule, Rules, Verdict};
use crate::tooling::deferred::{Bridge, resolve_call};
use crate::tooling::limits::{self, Limits, RoundItem, Spill};
use crate::tooling::sandbox::Confinement;
use crate::tooling::schema::ToolSet;
use crate::tooling::{Access, Output};
use serde_json::Value;

/// Read-only calls of one round that run at once, at most.
pub const MAX_CONCURRENT: usize = 8;
/// Tool rounds of one turn (`[tools] max_rounds`), by default.
pub const DEFAULT_MAX_ROUNDS: u32 = 50;

/// The tools a conversation offers and the rules they run under.
#[derive(Clone, Debug)]
pub struct Tools {
    /// The tools and their schemas (the request's `tools` array).
    pub set: ToolSet,
    /// `[tools] approval` as it applies to this client (headless: `ask`
    /// acts as `read-only`).
    pub policy: Policy,
    /// `[tools] allow` and `deny`.
    pub rules: Rules,
    /// `[tools] max_rounds`.
    pub max_rounds: u32,
    /// The per-result output limits.
    pub limits: Limits,
    /// `DATA/spill/<session>` as a path string: spill files are
    /// `<spill_dir>/<tool_call_id>.txt`.
    pub spill_dir: String,
    /// The tools array when some tools are deferred (the built-ins, the
    /// direct MCP tools and the three bridge tools); `None` sends `set`.
    /// Calls are looked up in `set` first, so a deferred tool still runs
    /// when the model names it, directly or through `tool_call`.
    pub request: Option<ToolSet>,
    /// The sandbox `shell` commands run in: what a call asking to leave
    /// it is measured against.
    pub sandbox: Confinement,
}

impl Tools {
    /// The tools the request carries.
    #[must_use]
    pub fn offered(&self) -> &ToolSet {
        self.request.as_ref().unwrap_or(&self.set)
    }
}

/// The user's answer to an [`Effect::AskApproval`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Run this call.
    Once,
    /// Run this call, and calls like it until strata exits
    /// ([`approval::grant_for`]).
    UntilExit,
    /// Do not run it; the reason, if any, goes to the model.
    Deny {
        /// The user's reason.
        reason: Option<String>,
    },
    /// Not asked: the runtime's dry run of the call (the diff of an edit,
    /// the line of a note) found that it would fail, so it is answered
    /// with that error instead of being offered for approval.
    WouldFail {
        /// The sentence the call would fail with.
        error: String,
    },
}

/// How a call the runtime ran ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolRun {
    /// `Ok` or `Error`.
    pub status: ToolStatus,
    /// The raw output, before the limits.
    pub output: Output,
    /// `read_file`: the result pages itself and is never spilled.
    pub paged: bool,
    /// How long it ran, milliseconds.
    pub duration_ms: u64,
    /// `shell`: the sandbox it ran in.
    pub sandbox: Option<crate::tooling::sandbox::RanIn>,
}

/// A call's place in the round.
#[derive(Debug)]
enum State {
    Waiting,
    Asking,
    /// Started at this time, unix ms.
    Running(i64),
    Done(ToolRun),
}

#[derive(Debug)]
struct RoundCall {
    /// The call as the model wrote it (its id pairs the result).
    call: ToolCall,
    /// What runs: the call itself, or the tool a `tool_call` bridge names
    /// (same id, that tool's name and arguments).
    runs: ToolCall,
    arguments: Value,
    access: Access,
    state: State,
}

/// The round in progress.
#[derive(Debug)]
pub(super) struct Round {
    calls: Vec<RoundCall>,
    /// The first call not yet started, asked or answered.
    next: usize,
    running: usize,
    /// A call that writes or runs a program is running.
    exclusive: bool,
}

fn answer(status: ToolStatus, text: impl Into<String>) -> State {
    State::Done(ToolRun {
        status,
        output: Output::whole(text),
        paged: false,
        duration_ms: 0,
        sandbox: None,
    })
}

impl Round {
    /// A round over `calls`; arguments are parsed and names looked up now.
    fn new(calls: Vec<ToolCall>, tools: &Tools) -> Self {
        let set = &tools.set;
        let calls = calls
            .into_iter()
            .map(|call| {
                let parsed = parse_arguments(&call.arguments);
                // `tool_call` stands for the tool it names: that tool's
                // access, approval and handler, the bridge call's id.
                if call.name == Bridge::Call.name() && tools.request.is_some() {
                    return bridged(call, parsed, set);
                }
                let spec = set.get(&call.name).or_else(|| tools.request.as_ref()?.get(&call.name));
                let runs = call.clone();
                let (arguments, access, state) = match (parsed, spec) {
                    (_, None) => (Value::Null, Access::ReadOnly, answer(ToolStatus::Error, unknown_tool(&call.name, tools))),
                    (Err(e), Some(spec)) => (
                        Value::Null,
                        spec.access,
                        answer(
                            ToolStatus::Error,
                            format!(
                                "The arguments of this `{}` call are not valid JSON ({e}); call it again with a JSON object that matches its schema.",
                                call.name
                            ),
                        ),
                    ),
                    (Ok(arguments), Some(spec)) => (arguments, spec.access, State::Waiting),
                };
                RoundCall {
                    call,
                    runs,
                    arguments,
                    access,
                    state,
                }
            })
            .collect();
        Self {
            calls,
            next: 0,
            running: 0,
            exclusive: false,
        }
    }

    fn is_done(&self) -> bool {
        self.calls.iter().all(|c| matches!(c.state, State::Done(_)))
    }

    fn position(&self, tool_call_id: &str) -> Option<usize> {
        self.calls.iter().position(|c| c.call.id == tool_call_id)
    }
}

/// A `tool_call` bridge call resolved to the tool it names, or an error
/// result the model reads.
fn bridged(call: ToolCall, parsed: Result<Value, String>, set: &ToolSet) -> RoundCall {
    let parsed = parsed.map_err(|e| {
        format!(
            "The arguments of this `tool_call` call are not valid JSON ({e}); call it again as {{\"name\": \"server__tool\", \"arguments\": {{...}}}}."
        )
    });
    let resolved = parsed.and_then(|args| {
        resolve_call(set, &args).map(|(spec, inner)| (spec.name.clone(), spec.access, inner))
    });
    match resolved {
        Ok((name, access, inner)) => RoundCall {
            runs: ToolCall {
                id: call.id.clone(),
                name,
                arguments: inner.to_string(),
            },
            call,
            arguments: inner,
            access,
            state: State::Waiting,
        },
        Err(text) => RoundCall {
            runs: call.clone(),
            call,
            arguments: Value::Null,
            access: Access::ReadOnly,
            state: answer(ToolStatus::Error, text),
        },
    }
}

fn parse_arguments(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("the arguments must be a JSON object".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// The result of a call to a tool the session does not offer: switched
/// off, or no such tool (the tools of the request are named; deferred ones
/// are found with `tool_search`).
fn unknown_tool(name: &str, tools: &Tools) -> String {
    let set = tools.offered();
    if tools
        .set
        .specs()
        .iter()
        .any(|e| e.spec.name == name && !e.enabled)
    {
        return format!(
            "The tool `{name}` is switched off for this session (the user can switch it on with /tools on {name}); do not call it, choose another approach."
        );
    }
    let names: Vec<&str> = set
        .array()
        .iter()
        .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
        .collect();
    format!(
        "There is no tool named `{name}`; the tools available are: {}.",
        names.join(", ")
    )
}

impl Conversation {
    /// The reply just stored asked for `calls`: the round starts, or, past
    /// `max_rounds` or with tools off, every call is answered `not_run` and
    /// the turn ends.
    pub(super) fn start_round(&mut self, calls: Vec<ToolCall>, now_ms: i64) -> Vec<Effect> {
        let rounds = self.active.as_ref().map_or(0, |a| a.rounds);
        let Some(tools) = self.tools.as_ref() else {
            let mut effects = self.answer_all(
                calls,
                ToolStatus::NotRun,
                "Not run: tools are off in this session.",
                now_ms,
            );
            effects.extend(self.end_turn());
            return effects;
        };
        if rounds >= tools.max_rounds {
            let max = tools.max_rounds;
            let mut effects = self.answer_all(
                calls,
                ToolStatus::NotRun,
                &format!("Not run: this turn reached its limit of {max} tool rounds ([tools] max_rounds)."),
                now_ms,
            );
            effects.push(Effect::ShowError(TurnNotice::MaxRounds { max }));
            effects.extend(self.end_turn());
            return effects;
        }
        let round = Round::new(calls, tools);
        if let Some(active) = self.active.as_mut() {
            active.round = Some(round);
        }
        self.advance(now_ms)
    }

    /// Starts, asks or answers as many calls as the rules allow now; ends
    /// the round when every call has its result.
    fn advance(&mut self, now_ms: i64) -> Vec<Effect> {
        let mut effects = Vec::new();
        let Some(tools) = self.tools.as_ref() else {
            return effects;
        };
        let Some(round) = self.active.as_mut().and_then(|a| a.round.as_mut()) else {
            return effects;
        };
        while round.next < round.calls.len() && !round.exclusive {
            let i = round.next;
            let c = &mut round.calls[i];
            match c.state {
                State::Done(_) => {
                    round.next += 1;
                    continue;
                }
                State::Asking | State::Running(_) => break,
                State::Waiting => {}
            }
            let verdict = approval::decide_in(
                c.access,
                &c.runs.name,
                &c.arguments,
                tools.policy,
                &tools.rules,
                &self.grants,
                &tools.sandbox,
            );
            let alone = c.access != Access::ReadOnly;
            match verdict {
                Verdict::Deny { reason } => {
                    let refused = approval::refusal(&c.runs.name, &c.arguments).is_some();
                    let text = match approval::deny_rule(&tools.rules, &c.runs.name, &c.arguments) {
                        _ if refused => approval::denied_text(&c.runs.name, Some(&reason), DeniedBy::Refused),
                        Some(rule) => {
                            approval::denied_text(&c.runs.name, None, DeniedBy::Rule(rule.to_string()))
                        }
                        None => approval::denied_text(&c.runs.name, Some(&reason), DeniedBy::ReadOnly),
                    };
                    c.state = answer(ToolStatus::Denied, text);
                    effects.push(Effect::ToolAnswered {
                        tool_call_id: c.call.id.clone(),
                        status: ToolStatus::Denied,
                    });
                    round.next += 1;
                }
                Verdict::Run if !alone => {
                    if round.running >= MAX_CONCURRENT {
                        break;
                    }
                    c.state = State::Running(now_ms);
                    round.running += 1;
                    round.next += 1;
                    effects.push(run_effect(c));
                }
                Verdict::Run | Verdict::Ask if round.running > 0 => break,
                Verdict::Run => {
                    c.state = State::Running(now_ms);
                    round.running += 1;
                    round.exclusive = true;
                    round.next += 1;
                    effects.push(run_effect(c));
                }
                Verdict::Ask => {
                    c.state = State::Asking;
                    effects.push(Effect::Phase(Phase::AwaitingApproval {
                        name: c.runs.name.clone(),
                    }));
                    effects.push(Effect::AskApproval {
                        call: c.runs.clone(),
                        arguments: c.arguments.clone(),
                        access: c.access,
                    });
                    return effects;
                }
            }
        }
        if round.is_done() {
            effects.extend(self.finish_round(now_ms));
        } else if let Some(phase) = running_phase(round) {
            effects.insert(0, Effect::Phase(phase));
        }
        effects
    }

    /// A call the runtime ran finished.
    pub(super) fn tool_finished(&mut self, tool_call_id: &str, run: ToolRun, now_ms: i64) -> Vec<Effect> {
        let Some(round) = self.active.as_mut().and_then(|a| a.round.as_mut()) else {
            return Vec::new();
        };
        let Some(i) = round.position(tool_call_id) else {
            return Vec::new();
        };
        if !matches!(round.calls[i].state, State::Running(_)) {
            return Vec::new();
        }
        if round.calls[i].access != Access::ReadOnly {
            round.exclusive = false;
        }
        round.calls[i].state = State::Done(run);
        round.running = round.running.saturating_sub(1);
        self.advance(now_ms)
    }

    /// The user answered the approval asked for `tool_call_id`.
    pub(super) fn approved(&mut self, tool_call_id: &str, approval: Approval, now_ms: i64) -> Vec<Effect> {
        let sandbox = self.tools.as_ref().map(|t| t.sandbox.clone()).unwrap_or_default();
        let Some(round) = self.active.as_mut().and_then(|a| a.round.as_mut()) else {
            return Vec::new();
        };
        let Some(i) = round.position(tool_call_id) else {
            return Vec::new();
        };
        let c = &mut round.calls[i];
        if !matches!(c.state, State::Asking) {
            return Vec::new();
        }
        round.next = i + 1;
        let mut effects = Vec::new();
        match approval {
            Approval::Deny { reason } => {
                c.state = answer(
                    ToolStatus::Denied,
                    approval::denied_text(&c.runs.name, reason.as_deref(), DeniedBy::User),
                );
                effects.push(Effect::ToolAnswered {
                    tool_call_id: c.call.id.clone(),
                    status: ToolStatus::Denied,
                });
            }
            Approval::WouldFail { error } => {
                c.state = answer(ToolStatus::Error, error);
                effects.push(Effect::ToolAnswered {
                    tool_call_id: c.call.id.clone(),
                    status: ToolStatus::Error,
                });
            }
            Approval::Once | Approval::UntilExit => {
                // Leaving the sandbox is allowed once, never granted.
                let leaving = sandbox.leaving(&c.runs.name, &c.arguments).is_some();
                if approval == Approval::UntilExit && !leaving {
                    self.grants.push(approval::grant_for(&c.runs.name, &c.arguments));
                }
                c.state = State::Running(now_ms);
                round.running += 1;
                round.exclusive = c.access != Access::ReadOnly;
                effects.push(run_effect(c));
                if let Some(phase) = running_phase(round) {
                    effects.insert(0, Effect::Phase(phase));
                }
                return effects;
            }
        }
        effects.extend(self.advance(now_ms));
        effects
    }

    /// Every call has its result: the results are stored in call order
    /// (limited and spilled as [`limits::shape_round`] decides) and the
    /// turn's next request follows.
    fn finish_round(&mut self, now_ms: i64) -> Vec<Effect> {
        let Some(round) = self.active.as_mut().and_then(|a| a.round.take()) else {
            return Vec::new();
        };
        let results = round
            .calls
            .into_iter()
            .map(|c| match c.state {
                State::Done(run) => (c.call, run),
                State::Waiting | State::Asking | State::Running(_) => {
                    let run = ToolRun {
                        status: ToolStatus::Interrupted,
                        output: Output::whole("Interrupted before it finished."),
                        paged: false,
                        duration_ms: 0,
                        sandbox: None,
                    };
                    (c.call, run)
                }
            })
            .collect();
        let mut effects = self.store_results(results, now_ms);
        if let Some(active) = self.active.as_mut() {
            active.rounds += 1;
            active.overflow_retried = false;
        }
        effects.push(Effect::Phase(Phase::Preparing));
        effects.extend(self.request(true, now_ms));
        effects
    }

    /// The turn is cancelled during a round: calls that finished keep their
    /// results, the others are answered `interrupted`; all are stored.
    pub(super) fn cancel_round(&mut self, now_ms: i64) -> Vec<Effect> {
        let Some(round) = self.active.as_mut().and_then(|a| a.round.take()) else {
            return Vec::new();
        };
        let results = round
            .calls
            .into_iter()
            .map(|c| {
                let (why, started) = match c.state {
                    State::Done(run) => return (c.call, run),
                    State::Running(at) => (
                        "Interrupted: the user cancelled the turn while this call ran.",
                        at,
                    ),
                    State::Waiting | State::Asking => (
                        "Interrupted: the user cancelled the turn before this call ran.",
                        now_ms,
                    ),
                };
                let run = ToolRun {
                    status: ToolStatus::Interrupted,
                    output: Output::whole(why),
                    paged: false,
                    duration_ms: u64::try_from(now_ms - started).unwrap_or(0),
                    sandbox: None,
                };
                (c.call, run)
            })
            .collect();
        self.store_results(results, now_ms)
    }

    /// Answers every call of `calls` with the same `status` and `text`.
    pub(super) fn answer_all(
        &mut self,
        calls: Vec<ToolCall>,
        status: ToolStatus,
        text: &str,
        now_ms: i64,
    ) -> Vec<Effect> {
        let results = calls
            .into_iter()
            .map(|call| {
                let run = ToolRun {
                    status,
                    output: Output::whole(text),
                    paged: false,
                    duration_ms: 0,
                    sandbox: None,
                };
                (call, run)
            })
            .collect();
        self.store_results(results, now_ms)
    }

    /// Shapes one round's results to the window and stores them as `tool`
    /// messages in call order (spill files first).
    fn store_results(&mut self, results: Vec<(ToolCall, ToolRun)>, now_ms: i64) -> Vec<Effect> {
        let (limits, spill_dir) = self.tools.as_ref().map_or_else(
            || (Limits::DEFAULT, String::new()),
            |t| (t.limits, t.spill_dir.clone()),
        );
        let paths: Vec<String> = results
            .iter()
            .map(|(call, run)| {
                run.output
                    .spilled_to
                    .clone()
                    .unwrap_or_else(|| format!("{spill_dir}/{}.txt", limits::spill_name(&call.id)))
            })
            .collect();
        // Binary output is not sent: the model reads a line giving its real
        // size, its guessed type and where the whole of it is.
        let binary: Vec<Option<Output>> = results
            .iter()
            .zip(&paths)
            .map(|((_, run), path)| binary_line(&run.output, run.paged, path).map(Output::whole))
            .collect();
        let items: Vec<RoundItem<'_>> = results
            .iter()
            .zip(&paths)
            .zip(&binary)
            .map(|(((_, run), path), shown)| RoundItem {
                output: shown.as_ref().unwrap_or(&run.output),
                paged: run.paged,
                spill_path: path.clone(),
            })
            .collect();
        let shaped = limits::shape_round(&items, self.window, &limits);
        let mut effects = Vec::new();
        for ((((call, run), mut shaped), path), shown) in
            results.into_iter().zip(shaped).zip(paths).zip(binary)
        {
            if shown.is_some() {
                shaped.truncated = true;
                shaped.spill = match (&run.output.spilled_to, &run.output.binary) {
                    (Some(_), _) => Spill::Written,
                    // The handler could not save the raw bytes; it said so.
                    (None, Some(_)) => Spill::None,
                    (None, None) => Spill::Write,
                };
            }
            let folded = shown.is_none() && (shaped.spill == Spill::Write || run.output.folded);
            let spilled_to = match shaped.spill {
                Spill::None => None,
                Spill::Write => {
                    let text = if shown.is_none() {
                        limits::fold_lines(&run.output.head, limits.max_line_chars)
                    } else {
                        run.output.head.clone()
                    };
                    effects.push(Effect::WriteSpill {
                        path: path.clone(),
                        text,
                    });
                    Some(path)
                }
                Spill::Written => Some(path),
            };
            let output_chars = run.output.binary.as_ref().map_or_else(
                || {
                    u64::try_from(run.output.head.chars().count() + run.output.tail.chars().count())
                        .unwrap_or(u64::MAX)
                        .saturating_add(run.output.omitted_bytes)
                },
                |b| b.bytes,
            );
            let mut text = shaped.text;
            if let Some(path) = spilled_to.as_deref().filter(|p| !text.contains(*p)) {
                // Only long lines were cut: the marker must still say
                // where every character is.
                let lines = if folded {
                    format!("long lines folded at {} characters", limits.max_line_chars)
                } else {
                    format!(
                        "lines over {} characters are cut by read_file there too",
                        limits.max_line_chars
                    )
                };
                text.push_str(&format!(
                    "\n[the whole output is in {path}, {lines}; page it with read_file]"
                ));
            }
            let mut message = Message::new(self.session.id, Role::Tool, text, now_ms);
            message.tool_call_id = Some(call.id.clone());
            message.tool = Some(ToolResultMeta {
                name: call.name,
                status: run.status,
                truncated: shaped.truncated,
                previewed: shaped.previewed,
                spilled_to,
                output_chars,
                duration_ms: Some(run.duration_ms),
                sandbox: run.sandbox.map(|r| r.label.as_str().to_owned()),
                network: run.sandbox.is_some_and(|r| r.network),
            });
            // Counted now with the session's counter, so the result's size
            // is known the moment it is stored (and the cache has it).
            let tokens = crate::tokens::message_tokens(self.counter.as_ref(), &message);
            message.tokens = Some(crate::domain::TokenCount {
                tokenizer: self.counter.id().to_owned(),
                tokens,
            });
            self.messages.push(message.clone());
            effects.push(Effect::SaveMessage(message));
        }
        effects
    }

    /// Grants made with "allow until strata exits" so far.
    #[must_use]
    pub fn grants(&self) -> &[Rule] {
        &self.grants
    }
}

fn run_effect(c: &RoundCall) -> Effect {
    Effect::RunTool {
        call: c.runs.clone(),
        arguments: c.arguments.clone(),
        access: c.access,
    }
}

fn running_phase(round: &Round) -> Option<Phase> {
    let mut running = round
        .calls
        .iter()
        .filter(|c| matches!(c.state, State::Running(_)));
    let first = running.next()?;
    Some(Phase::RunningTool {
        name: first.runs.name.clone(),
        others: running.count(),
    })
}

/// The line a binary output is sent as, or `None` for text: the handler's
/// verdict on the raw bytes ([`Output::binary`], with the real size and a
/// guessed type, and the handler's own notes such as the exit code after
/// it), else [`limits::looks_binary`] on the decoded text. Paged results
/// are never binary.
fn binary_line(output: &Output, paged: bool, path: &str) -> Option<String> {
    if paged {
        return None;
    }
    match &output.binary {
        Some(b) => {
            let size = crate::text::group_digits(b.bytes);
            let whole = if output.spilled_to.is_some() {
                format!("; the whole output, byte for byte, is in {path}")
            } else {
                String::new()
            };
            let notes = output.head.trim();
            let sep = if notes.is_empty() { "" } else { "\n" };
            Some(format!(
                "[binary output ({}), {size} bytes: not shown{whole}]{sep}{notes}",
                b.kind
            ))
        }
        None if limits::looks_binary(&output.head) => {
            let bytes = output.head.len() as u64 + output.tail.len() as u64 + output.omitted_bytes;
            let size = crate::text::group_digits(bytes);
            Some(format!(
                "[binary output, {size} bytes: not shown; the whole output is in {path}]"
            ))
        }
        None => None,
    }
}
