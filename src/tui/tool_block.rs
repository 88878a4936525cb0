//! Tool blocks in the chat pane: each tool call of an assistant message is
//! a block under it, filled by the call's result message (which is not
//! shown on its own) and, while its round runs, by what the service tells
//! of it ([`ToolEvent`](crate::runtime::service::ToolEvent)s, kept as
//! [`LiveCall`]s). A block shows the tool's name, a one-line argument
//! summary, its state (queued, waiting for approval, running with the
//! elapsed time and the live tail of its output, or how it ended), the
//! duration, the result's tokens and badges (`truncated`, `preview`,
//! `spilled → path`, and what the pipeline did to the result). Collapsed it
//! takes one or two rows; expanded it shows the diff of the file it
//! changed and the result text.
//!
//! Layouts are cached per call and width with everything they depend on
//! in their key; a running call's key holds its elapsed seconds and the
//! revision of its live state, so it is laid out again once a second or
//! when its output moves, and a finished one never again. Drawing only
//! fills this memo.

use super::theme::ToolTone;
use super::{fmt, theme};
use crate::domain::{Message, MessageId, ToolCall, ToolResultMeta, ToolStatus};
use crate::render::plain_lines;
use crate::tooling::sandbox::{Label, describe};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use std::cell::{Ref, RefCell};
use std::collections::{HashMap, HashSet};

/// Leading cells of a block's header row.
const INDENT: &str = "  ";
/// Leading cells of a block's body rows, the gutter included.
const GUTTER: &str = "    │ ";

/// What the app learned of one call while its round runs.
#[derive(Clone, Debug, Default)]
pub struct LiveCall {
    /// The service's one-line argument summary.
    pub summary: Option<String>,
    /// An approval was asked and not answered yet.
    pub asked: bool,
    /// It was answered without running — refused, denied by the user, or
    /// found to fail — with this status (its result follows with the
    /// round).
    pub answered: Option<ToolStatus>,
    /// How it ended, once it ran.
    pub status: Option<ToolStatus>,
    /// When it started running, unix ms.
    pub started_ms: Option<i64>,
    /// When it finished running, unix ms.
    pub finished_ms: Option<i64>,
    /// Its latest output (the shell's last lines).
    pub tail: String,
    /// The diff of the file it changed.
    pub diff: Option<String>,
    /// Bumped on every change (part of the layout's key).
    pub rev: u64,
}

/// Where a call is, as its block shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallState {
    /// The turn runs; nothing happened to the call yet.
    Queued,
    /// It waits for the user's approval.
    Asking,
    /// It runs, for this many seconds so far.
    Running(i64),
    /// It ran for this many ms and ended so; its result is stored with
    /// the round.
    Finished(u64, ToolStatus),
    /// Its result is stored: how it ended (`None` for a result without
    /// strata's record, as in imported histories) and how long it ran, ms.
    Done(Option<ToolStatus>, Option<u64>),
    /// No result, and no turn runs to give it one.
    NoResult,
}

impl CallState {
    fn label(self) -> (String, ToolTone) {
        match self {
            Self::Queued => ("queued".into(), ToolTone::Quiet),
            Self::Asking => ("? waiting for approval".into(), ToolTone::Attention),
            Self::Running(secs) => (format!("● running {secs}s"), ToolTone::Running),
            Self::Finished(_, ToolStatus::Ok) => ("✓ finished".into(), ToolTone::Ok),
            Self::Finished(_, status) => Self::Done(Some(status), None).label(),
            Self::Done(status, _) => match status {
                Some(ToolStatus::Ok) => ("✓ ok".into(), ToolTone::Ok),
                Some(ToolStatus::Error) => ("✗ error".into(), ToolTone::Failed),
                Some(ToolStatus::Denied) => ("⊘ denied".into(), ToolTone::Attention),
                Some(ToolStatus::Interrupted) => ("! interrupted".into(), ToolTone::Attention),
                Some(ToolStatus::NotRun) => ("– not run".into(), ToolTone::Quiet),
                None => ("✓ done".into(), ToolTone::Ok),
            },
            Self::NoResult => ("– no result".into(), ToolTone::Quiet),
        }
    }

    fn duration_ms(self) -> Option<u64> {
        match self {
            Self::Finished(ms, _) | Self::Done(_, Some(ms)) => Some(ms),
            _ => None,
        }
    }

    /// Whether the collapsed block shows the first line of the result
    /// (it says what went wrong).
    fn tells_why(self) -> bool {
        matches!(
            self,
            Self::Done(
                Some(ToolStatus::Error | ToolStatus::Denied | ToolStatus::Interrupted | ToolStatus::NotRun),
                _
            )
        )
    }
}

/// Everything a block's layout depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Key {
    width: u16,
    expanded: bool,
    selected: bool,
    state: CallState,
    arguments: usize,
    result: Option<(MessageId, usize, Option<u32>, Option<ToolResultMeta>)>,
    report: Option<String>,
    rev: u64,
}

#[derive(Debug)]
struct Cached {
    key: Key,
    lines: Vec<Line<'static>>,
}

/// The tool blocks' state: live calls, which blocks are expanded, the
/// selected one, the clock and whether a turn runs, and the layout cache.
#[derive(Debug, Default)]
pub struct ToolBlocks {
    /// What arrived of the calls of the round that runs (and the diffs of
    /// earlier ones), by call id.
    pub live: HashMap<String, LiveCall>,
    /// Calls whose blocks are expanded.
    pub expanded: HashSet<String>,
    /// The selected block's call (`Some` while the blocks have the keys).
    pub selected: Option<String>,
    /// Now, unix ms (for the elapsed time of running calls).
    pub now_ms: i64,
    /// Whether a turn runs (a call without a result may still get one).
    pub turn_running: bool,
    /// The key that expands the selected block, as its hint shows it.
    pub toggle_key: String,
    cache: RefCell<HashMap<(MessageId, String), Cached>>,
}

/// One block's inputs, found by the chat pane.
pub struct Inputs<'a> {
    /// The message that made the call (call ids may repeat across turns).
    pub caller: MessageId,
    /// The call.
    pub call: &'a ToolCall,
    /// Its result message, once stored.
    pub result: Option<&'a Message>,
    /// What the pipeline did to the result (`pruned`, ...), as a badge.
    pub report: Option<String>,
}

impl ToolBlocks {
    /// The live state of `id`, made when missing; its revision is bumped.
    pub fn live_mut(&mut self, id: &str) -> &mut LiveCall {
        let live = self.live.entry(id.to_owned()).or_default();
        live.rev += 1;
        live
    }

    /// Forgets what belongs to calls not in `keep`.
    pub fn retain(&mut self, keep: &HashMap<String, usize>) {
        self.live.retain(|id, _| keep.contains_key(id));
        self.expanded.retain(|id| keep.contains_key(id));
        self.cache.get_mut().retain(|(_, id), _| keep.contains_key(id));
        if self.selected.as_ref().is_some_and(|id| !keep.contains_key(id)) {
            self.selected = None;
        }
    }

    /// Expands the block of `id`, or collapses it.
    pub fn toggle(&mut self, id: &str) {
        if !self.expanded.remove(id) {
            self.expanded.insert(id.to_owned());
        }
    }

    /// Where the call is.
    #[must_use]
    pub fn state(&self, call: &ToolCall, result: Option<&Message>) -> CallState {
        let live = self.live.get(&call.id);
        if let Some(r) = result {
            return match &r.tool {
                Some(meta) => CallState::Done(Some(meta.status), shown_duration(meta, live)),
                None => CallState::Done(None, None),
            };
        }
        if let Some(status) = live.and_then(|l| l.answered) {
            return CallState::Done(Some(status), None);
        }
        if !self.turn_running {
            return CallState::NoResult;
        }
        match live {
            Some(LiveCall {
                started_ms: Some(s),
                finished_ms: Some(f),
                status,
                ..
            }) => CallState::Finished(
                u64::try_from(f - s).unwrap_or(0),
                status.unwrap_or(ToolStatus::Ok),
            ),
            Some(LiveCall {
                started_ms: Some(s), ..
            }) => CallState::Running((self.now_ms - s).max(0) / 1_000),
            Some(l) if l.asked => CallState::Asking,
            _ => CallState::Queued,
        }
    }

    /// Lays the block of `inputs` out at `width` unless the cache holds
    /// it; returns its height in rows.
    pub fn ensure(&self, inputs: &Inputs<'_>, width: u16) -> usize {
        let call = inputs.call;
        let live = self.live.get(&call.id);
        let selected = self.selected.as_deref() == Some(call.id.as_str());
        let key = Key {
            width,
            expanded: self.expanded.contains(&call.id),
            selected,
            state: self.state(call, inputs.result),
            arguments: call.arguments.len(),
            result: inputs.result.map(|r| {
                (
                    r.id,
                    r.content.len(),
                    r.tokens.as_ref().map(|t| t.tokens),
                    r.tool.clone(),
                )
            }),
            report: inputs.report.clone(),
            rev: live.map_or(0, |l| l.rev),
        };
        let block = (inputs.caller, call.id.clone());
        if let Some(c) = self.cache.borrow().get(&block)
            && c.key == key
        {
            return c.lines.len();
        }
        let hint = selected.then_some(self.toggle_key.as_str());
        let lines = layout(inputs, live, &key, hint);
        let height = lines.len();
        self.cache.borrow_mut().insert(block, Cached { key, lines });
        height
    }

    /// The laid out blocks, by call id (borrowed while drawing).
    pub fn laid_out(&self) -> LaidOut<'_> {
        LaidOut(self.cache.borrow())
    }
}

/// How long a finished call ran, as its block shows it: the result's
/// duration, except that a duration of 0 (an interrupted call whose run
/// was not measured) gives way to the time the block saw it run, and
/// shows nothing when it saw none and the call did not run to its end.
fn shown_duration(meta: &ToolResultMeta, live: Option<&LiveCall>) -> Option<u64> {
    if meta.duration_ms != Some(0) {
        return meta.duration_ms;
    }
    let seen = live
        .and_then(|l| Some(l.finished_ms? - l.started_ms?))
        .and_then(|ms| u64::try_from(ms).ok())
        .filter(|ms| *ms > 0);
    seen.or_else(|| matches!(meta.status, ToolStatus::Ok | ToolStatus::Error).then_some(0))
}

/// The cached layouts, borrowed.
pub struct LaidOut<'a>(Ref<'a, HashMap<(MessageId, String), Cached>>);

impl LaidOut<'_> {
    /// Row `k` of the block of call `id` of message `caller`.
    #[must_use]
    pub fn row(&self, caller: MessageId, id: &str, k: usize) -> Option<&Line<'static>> {
        self.0.get(&(caller, id.to_owned())).and_then(|c| c.lines.get(k))
    }
}

/// The one-line argument summary: the service's, or made from the
/// arguments; a summary that only repeats the name adds nothing.
fn summary(call: &ToolCall, live: Option<&LiveCall>) -> String {
    let text = live.and_then(|l| l.summary.clone()).unwrap_or_else(|| {
        let arguments = serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null);
        crate::tooling::schema::summary(&call.name, &arguments)
    });
    if text == call.name { String::new() } else { text }
}

/// A badge of a result: what the output limits and the pipeline did.
enum Badge {
    /// Where a `shell` command ran: `sandboxed (workspace, no network)`,
    /// `outside the sandbox`, `not sandboxed: …`.
    Sandbox(String),
    Truncated,
    Preview,
    Spilled(String),
    Report(String),
}

impl Badge {
    /// The badges of a result.
    fn of(meta: Option<&ToolResultMeta>, report: Option<&str>) -> Vec<Self> {
        let mut out = Vec::new();
        if let Some(m) = meta {
            if let Some(label) = m.sandbox.as_deref().and_then(Label::parse) {
                out.push(Self::Sandbox(describe(label, m.network)));
            }
            if m.truncated {
                out.push(Self::Truncated);
            }
            if m.previewed {
                out.push(Self::Preview);
            }
            if let Some(path) = &m.spilled_to {
                out.push(Self::Spilled(path.clone()));
            }
        }
        out.extend(report.map(|r| Self::Report(r.to_owned())));
        out
    }

    /// Its text; a spilled path is cut from the left to `path_room` cells
    /// (its file name says the most).
    fn text(&self, path_room: usize) -> String {
        match self {
            Self::Sandbox(words) => words.clone(),
            Self::Truncated => "truncated".to_owned(),
            Self::Preview => "preview".to_owned(),
            Self::Spilled(path) => format!("spilled → {}", fmt::cut_left(path, path_room)),
            Self::Report(r) => r.clone(),
        }
    }
}

fn width_of(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| fmt::width(&s.content)).sum()
}

/// Badge spans within `room` cells (at least the spilled file's name).
fn badge_spans(badges: &[Badge], room: usize) -> Vec<Span<'static>> {
    // Each badge is drawn as " text " after a space.
    let others: usize = badges
        .iter()
        .filter(|b| !matches!(b, Badge::Spilled(_)))
        .map(|b| fmt::width(&b.text(0)) + 3)
        .sum();
    let path_room = room.saturating_sub(others + fmt::width("spilled → ") + 3).max(12);
    let mut out = Vec::new();
    for b in badges {
        out.push(Span::raw(" "));
        out.push(Span::styled(format!(" {} ", b.text(path_room)), theme::badge()));
    }
    out
}

/// The block's rows (see the module doc).
fn layout(inputs: &Inputs<'_>, live: Option<&LiveCall>, key: &Key, hint: Option<&str>) -> Vec<Line<'static>> {
    let call = inputs.call;
    let width = usize::from(key.width);
    let meta = inputs.result.and_then(|r| r.tool.as_ref());
    let (label, tone) = key.state.label();
    let marker = if key.expanded { "▾ " } else { "▸ " };
    let name_style = if key.selected {
        theme::tool_name().patch(theme::selected())
    } else {
        theme::tool_name()
    };
    let pre = vec![
        Span::raw(INDENT),
        Span::styled(marker, name_style),
        Span::styled(call.name.clone(), name_style),
    ];
    let mut post = vec![Span::raw("  "), Span::styled(label, theme::tool_state(tone))];
    if let Some(ms) = key.state.duration_ms() {
        post.push(Span::styled(format!(" · {}", fmt::duration(ms)), theme::dim()));
    }
    if let Some(t) = inputs.result.and_then(|r| r.tokens.as_ref()) {
        post.push(Span::styled(
            format!(" · {} tok", fmt::tokens(u64::from(t.tokens))),
            theme::dim(),
        ));
    }
    let hint = hint.map(|k| {
        let what = if key.expanded { "collapses" } else { "expands" };
        Span::styled(format!("  ({k} {what})"), theme::dim())
    });
    let badges = Badge::of(meta, inputs.report.as_deref());
    let summary = summary(call, live);
    let fixed = width_of(&pre) + width_of(&post) + hint.as_ref().map_or(0, |h| fmt::width(&h.content));
    let badges_w = width_of(&badge_spans(&badges, usize::MAX));
    let want_summary = if summary.is_empty() {
        0
    } else {
        1 + fmt::width(&summary).min(12)
    };
    let inline = badges.is_empty() || fixed + badges_w + want_summary <= width;
    let room = width.saturating_sub(fixed + if inline { badges_w } else { 0 });
    let mut header = pre;
    if !summary.is_empty() && room > 1 {
        header.push(Span::raw(format!(" {}", fmt::cut(&summary, room - 1))));
    }
    header.extend(post);
    if inline {
        header.extend(badge_spans(&badges, width));
    }
    header.extend(hint);
    let mut lines = vec![Line::from(header)];
    if !inline {
        let mut row = vec![Span::raw("   ")];
        row.extend(badge_spans(&badges, width.saturating_sub(3)));
        lines.push(Line::from(row));
    }
    let body_width = u16::try_from(width.saturating_sub(fmt::width(GUTTER)))
        .unwrap_or(u16::MAX)
        .max(1);
    let tail = live.map_or("", |l| l.tail.as_str());
    if !key.expanded {
        let first = |text: &str| text.lines().find(|l| !l.trim().is_empty()).map(str::to_owned);
        let last = |text: &str| {
            text.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_owned)
        };
        let line = match (key.state, inputs.result) {
            (CallState::Running(_) | CallState::Finished(..), _) => last(tail),
            (state, Some(r)) if state.tells_why() => first(&r.content),
            _ => None,
        };
        if let Some(text) = line {
            let text = crate::render::defuse(&text);
            lines.push(gutter(Line::styled(
                fmt::cut(&text, usize::from(body_width)),
                theme::dim(),
            )));
        }
        return lines;
    }
    let diff = live.and_then(|l| l.diff.as_deref()).filter(|d| !d.is_empty());
    if let Some(diff) = diff {
        for row in diff.lines() {
            lines.extend(
                plain_lines(row, body_width, diff_style(row))
                    .into_iter()
                    .map(gutter),
            );
        }
    }
    match inputs.result {
        Some(r) => {
            // A result that repeats the diff drawn above (`edit_file`'s)
            // shows it once.
            let content = match diff {
                Some(diff) if r.content.contains(diff) => {
                    std::borrow::Cow::Owned(r.content.replacen(diff, "", 1).trim_end().to_owned())
                }
                _ => std::borrow::Cow::Borrowed(r.content.as_str()),
            };
            lines.extend(
                plain_lines(&content, body_width, Style::new())
                    .into_iter()
                    .map(gutter),
            );
        }
        None if !tail.is_empty() => {
            lines.extend(
                plain_lines(tail, body_width, theme::dim())
                    .into_iter()
                    .map(gutter),
            );
        }
        None => lines.push(gutter(Line::styled("(no output yet)", theme::dim()))),
    }
    if let Some(m) = meta
        && let Some(path) = &m.spilled_to
    {
        let text = format!(
            "the whole output ({} characters) is in {path}",
            crate::text::group_digits(m.output_chars)
        );
        let w = u16::try_from(width.saturating_sub(4)).unwrap_or(u16::MAX).max(1);
        lines.extend(
            plain_lines(&text, w, theme::dim())
                .into_iter()
                .map(|l| indent_by("    ", l)),
        );
    }
    lines
}

/// The style of one diff row by its first characters.
#[must_use]
pub fn diff_style(row: &str) -> Style {
    if row.starts_with("+++") || row.starts_with("---") || row.starts_with("@@") {
        theme::diff_header()
    } else if row.starts_with('+') {
        theme::diff_added()
    } else if row.starts_with('-') {
        theme::diff_removed()
    } else {
        Style::new()
    }
}

/// A body row behind the block's gutter.
fn gutter(l: Line<'static>) -> Line<'static> {
    let mut spans = vec![Span::raw("    "), Span::styled("│ ", theme::dim())];
    spans.extend(l.spans);
    let mut line = Line::from(spans);
    line.style = l.style;
    line
}

fn indent_by(by: &'static str, l: Line<'static>) -> Line<'static> {
    let mut spans = vec![Span::raw(by)];
    spans.extend(l.spans);
    let mut line = Line::from(spans);
    line.style = l.style;
    line
}
