//! The approval overlay: a tool call waiting for the user's answer. It
//! shows the tool and its one-line summary, a plain warning that strata
//! does not confine `shell` (or that a file change can be undone) with
//! why the call asks (the rule that gave an MCP tool its access, the file
//! a memory note goes to, a credential-looking file to be read), the
//! detail under a heading (the command; the diff of an edit or a write
//! under the file's path, or the sentence the call would fail with), and
//! the choices: allow once (`y`), allow until strata exits (`a`, naming
//! what that allows), deny (`n`, then an optional reason typed on one
//! line, which goes to the model), and Esc to deny without a reason.
//!
//! On a small screen the detail keeps its rows before anything optional:
//! the blank rows go first, then the choices shrink to one line, the
//! warning to one line, and the call's row and the heading go. When the
//! detail does not fit, a `↓ more (N lines)` row says how much is below
//! (and above, once scrolled). A screen that cannot show one line of it
//! says so instead, and [`shows_detail`] is false: the app then does not
//! allow the call on `y` or `a`. Only view state lives here; the app turns
//! keys into answers.

mod layout;

use super::super::pager::{Item, Pager, key_of};
use super::super::tool_block::diff_style;
use super::super::{fmt, theme};
use crate::render::plain_lines;
use crate::runtime::service::ApprovalRequest;
use crate::tooling::Access;
use layout::{Plan, Rows, Warning};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

/// What the overlay says of `shell` before it may run.
const UNCONFINED: &str = "strata does not confine this command: it runs in the workspace with your \
     permissions and can read or change anything you can.";

/// [`UNCONFINED`] on one line, shorter and shorter.
const UNCONFINED_SHORT: [&str; 3] = [
    "not confined: runs with your permissions",
    "not confined by strata",
    "unconfined",
];

/// A sandbox sentence on one line, shorter and shorter.
const SANDBOX_SHORT: [&str; 3] = ["see the sandbox", "sandbox", "sandbox"];

/// What the overlay says of an MCP server's tool that is not read-only.
const MCP_SERVER: &str = "This tool runs in its MCP server with the server's own access; \
     strata neither confines nor can undo what it does.";

/// [`MCP_SERVER`] on one line, shorter and shorter.
const MCP_SERVER_SHORT: [&str; 3] = [
    "runs in its MCP server; not undoable",
    "runs in its MCP server",
    "MCP tool",
];

/// What the overlay says of a file change before it is made.
const UNDOABLE: &str = "The file's previous content is kept: /undo-edit restores it.";

/// [`UNDOABLE`] on one line, shorter and shorter.
const UNDOABLE_SHORT: [&str; 3] = ["/undo-edit restores the file", "/undo-edit undoes it", "undoable"];

/// [`ApprovalRequest::why`] of a `memory` note on one line, shorter and
/// shorter.
const MEMORY_SHORT: [&str; 3] = [
    "goes into every new session's prompt",
    "kept for every session",
    "memory note",
];

/// [`ApprovalRequest::why`] of a credential read on one line, shorter and
/// shorter.
const CREDENTIAL_SHORT: [&str; 3] = [
    "looks like a credential; sent to the model",
    "looks like a credential",
    "credential",
];

/// How the preview of an edit or a write starts when the call would fail.
const WOULD_FAIL: &str = "This call would fail";

/// A call waiting for approval, with the overlay's view state.
#[derive(Clone, Debug)]
pub struct ApprovalPrompt {
    /// The call and what it would do.
    pub request: ApprovalRequest,
    /// The reason being typed after `n` (`None`: the choices are shown).
    pub reason: Option<String>,
    /// `a` was pressed once for a risky grant: the warning shows and a
    /// second `a` allows.
    pub confirming: bool,
    /// Scroll position and layout of the detail.
    pub pager: Pager,
    /// The detail's heading: its lead (`── edit of `) and the path it
    /// names (empty for a command).
    heading: (&'static str, String),
}

impl ApprovalPrompt {
    /// The overlay for `request`, showing its choices.
    #[must_use]
    pub fn new(request: ApprovalRequest) -> Self {
        let heading = heading(&request);
        Self {
            request,
            reason: None,
            confirming: false,
            pager: Pager::default(),
            heading,
        }
    }
}

/// The heading over the detail; an edit or a write names the call's `path`
/// argument (or its summary when the arguments have none).
fn heading(r: &ApprovalRequest) -> (&'static str, String) {
    let path = || {
        serde_json::from_str::<serde_json::Value>(&r.call.arguments)
            .ok()
            .and_then(|v| v.get("path")?.as_str().map(str::to_owned))
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| r.summary.clone())
    };
    match r.call.name.as_str() {
        "shell" => ("── command ", String::new()),
        "edit_file" => ("── edit of ", path()),
        "write_file" => ("── write of ", path()),
        "memory" => ("── note ", String::new()),
        _ => ("── arguments ", String::new()),
    }
}

/// Whether the detail is the sentence an edit or a write would fail with.
fn would_fail(r: &ApprovalRequest) -> bool {
    matches!(r.call.name.as_str(), "edit_file" | "write_file" | "memory") && r.detail.starts_with(WOULD_FAIL)
}

/// The detail as a document: the command or the arguments as they are, a
/// diff coloured by line, a would-fail sentence in the error style.
fn detail_doc(r: &ApprovalRequest) -> Vec<Item> {
    let text = &r.detail;
    let mut out = Vec::new();
    let styled = |style: &dyn Fn(&str) -> ratatui::style::Style, out: &mut Vec<Item>| {
        let mut at = 0;
        for piece in text.split_inclusive('\n') {
            let body = piece.strip_suffix('\n').unwrap_or(piece);
            out.push(Item::Styled(at, at + body.len(), style(body)));
            at += piece.len();
        }
    };
    if would_fail(r) {
        styled(&|_| theme::error(), &mut out);
    } else if matches!(r.call.name.as_str(), "edit_file" | "write_file") {
        styled(&diff_style, &mut out);
    } else {
        Item::lines_of(text, 0, text.len(), &mut out);
    }
    if out.is_empty() {
        let nothing = match r.call.name.as_str() {
            "shell" => "(an empty command)",
            "edit_file" | "write_file" => "(no change to the file)",
            _ => "(no arguments)",
        };
        out.push(Item::line(Line::styled(nothing, theme::dim())));
    }
    out
}

fn detail_key(r: &ApprovalRequest) -> u64 {
    key_of((&r.call.id, r.detail.len()))
}

/// Rows of the whole detail at `width`.
fn detail_rows(p: &ApprovalPrompt, width: u16) -> usize {
    let r = &p.request;
    p.pager.rows(detail_key(r), &r.detail, || detail_doc(r), width)
}

/// The plan for `width`×`height` cells (see [`layout::plan`]); `None`
/// when not one row of the detail can show.
fn plan(p: &ApprovalPrompt, width: u16, height: u16) -> Option<Plan> {
    if width == 0 {
        return None;
    }
    let rows = Rows {
        detail: detail_rows(p, width),
        warning: warning_lines(&p.request, Warning::Full, width).len(),
        choices: choice_rows(p),
    };
    layout::plan(rows, usize::from(height))
}

/// Whether the overlay shows at least one line of the detail (with a hint
/// when there is more) inside a frame of `width`×`height` cells: the app
/// allows a call only then.
#[must_use]
pub(super) fn shows_detail(p: &ApprovalPrompt, width: u16, height: u16) -> bool {
    plan(p, width, height).is_some()
}

/// The warning's rows at `width`: what the kind of call risks, and why it
/// asks ([`ApprovalRequest::why`]: the rule an MCP tool's access came from,
/// where a memory note goes, what a credential read sends).
fn warning_lines(r: &ApprovalRequest, warning: Warning, width: u16) -> Vec<Line<'static>> {
    let why = r.why.trim();
    let sandboxed;
    let (lead, short, style) = match r.access {
        _ if r.call.name == "memory" => ("", MEMORY_SHORT, theme::warning()),
        Access::Run if r.sandbox.is_some() => {
            sandboxed = r.sandbox.clone().unwrap_or_default();
            let style = if r.leaves_sandbox
                || sandboxed.starts_with("not sandboxed")
                || sandboxed.contains("outside")
            {
                theme::warning()
            } else {
                theme::dim()
            };
            (sandboxed.as_str(), SANDBOX_SHORT, style)
        }
        Access::Run if r.call.name.contains("__") => (MCP_SERVER, MCP_SERVER_SHORT, theme::warning()),
        Access::Run => (UNCONFINED, UNCONFINED_SHORT, theme::warning()),
        Access::Write => (UNDOABLE, UNDOABLE_SHORT, theme::dim()),
        Access::ReadOnly if !why.is_empty() => ("", CREDENTIAL_SHORT, theme::warning()),
        Access::ReadOnly => return Vec::new(),
    };
    let full = match (lead, why) {
        (lead, "") => lead.to_owned(),
        ("", why) => why.to_owned(),
        (lead, why) => format!("{lead} {why}"),
    };
    match warning {
        Warning::Full => plain_lines(&full, width, style),
        Warning::Line => {
            let fits = |t: &&str| fmt::width(t) <= usize::from(width);
            let text = std::iter::once(full.as_str())
                .chain(short)
                .find(fits)
                .unwrap_or(short[short.len() - 1]);
            vec![Line::styled(fmt::cut(text, usize::from(width)), style)]
        }
    }
}

/// The call's row: its name and summary.
fn title_line(r: &ApprovalRequest) -> Line<'static> {
    Line::from(vec![
        Span::styled(r.call.name.clone(), theme::tool_name()),
        Span::raw(" "),
        Span::raw(r.summary.clone()),
    ])
}

/// The heading as a rule across `width` cells; a long path is cut from
/// the left (its file name says the most).
fn heading_line((lead, path): &(&'static str, String), width: u16) -> Line<'static> {
    let width = usize::from(width);
    let whole = if path.is_empty() {
        (*lead).to_owned()
    } else {
        format!("{lead}{path} ")
    };
    // The path keeps at least a few cells, or the whole is cut.
    let room = width.saturating_sub(fmt::width(lead) + 1);
    let text = if fmt::width(&whole) <= width {
        whole
    } else if !path.is_empty() && room >= 6 {
        format!("{lead}{} ", fmt::cut_left(path, room))
    } else {
        fmt::cut(&whole, width)
    };
    let fill = width.saturating_sub(fmt::width(&text));
    Line::styled(format!("{text}{}", "─".repeat(fill)), theme::dim())
}

/// The row under a detail that does not fit: how much is below and above,
/// as much of it as fits `width`.
fn hint_line((above, below): (usize, usize), width: u16) -> Line<'static> {
    let lines = |n: usize| {
        if n == 1 {
            "1 line".to_owned()
        } else {
            format!("{n} lines")
        }
    };
    let first = if below > 0 {
        format!("↓ more ({})", lines(below))
    } else {
        format!("↑ {} above", lines(above))
    };
    let also = (below > 0 && above > 0).then(|| format!(" · {above} above"));
    let keys = " · ↑↓ scroll";
    let short = if below > 0 {
        format!("↓ {below} more")
    } else {
        format!("↑ {above} above")
    };
    let candidates = [
        format!("{first}{}{keys}", also.as_deref().unwrap_or("")),
        format!("{first}{}", also.as_deref().unwrap_or("")),
        first,
        short.clone(),
    ];
    let text = candidates
        .into_iter()
        .find(|t| fmt::width(t) <= usize::from(width))
        .unwrap_or(short);
    Line::styled(text, theme::title())
}

/// Rows of the choices (or of the reason being typed) when not compact.
fn choice_rows(p: &ApprovalPrompt) -> usize {
    if p.reason.is_some() { 2 } else { 3 }
}

/// The rows below the detail: the choices, or the reason being typed; on
/// one line when `compact`.
fn choice_lines(p: &ApprovalPrompt, compact: bool, width: u16) -> Vec<Line<'static>> {
    let key = |k: &str| Span::styled(format!("{k:<4} "), theme::title());
    let reason_line = |head: &str, text: &str| {
        Line::from(vec![
            Span::raw(head.to_owned()),
            // The end of a long reason, where the typing is.
            Span::raw(fmt::cut_left(
                text,
                usize::from(width).saturating_sub(fmt::width(head) + 2),
            )),
            Span::styled("▏", theme::dim()),
        ])
    };
    // A call that only asks for the network still runs in the sandbox.
    let network_only = p
        .request
        .sandbox
        .as_deref()
        .is_some_and(|s| s.starts_with("uses the network"));
    let once = if network_only {
        "once, with the network"
    } else {
        "once, outside the sandbox"
    };
    match (&p.reason, compact) {
        (None, true) if p.request.leaves_sandbox => vec![Line::from(vec![
            Span::styled("y", theme::title()),
            Span::raw(fmt::cut(
                &format!(" {once} · "),
                usize::from(width).saturating_sub(7),
            )),
            Span::styled("n", theme::title()),
            Span::raw(" deny"),
        ])],
        (None, true) if p.request.grant.is_empty() => vec![Line::from(vec![
            Span::styled("y", theme::title()),
            Span::raw(" once · "),
            Span::styled("n", theme::title()),
            Span::raw(" deny"),
        ])],
        (None, true) if p.confirming => vec![Line::from(vec![
            Span::styled("a", theme::title()),
            Span::styled(
                fmt::cut(
                    &format!(" again: {} may delete files", p.request.grant),
                    usize::from(width).saturating_sub(1),
                ),
                theme::warning(),
            ),
        ])],
        (None, true) => vec![compact_choices(&p.request.grant, width)],
        (None, false) if p.request.leaves_sandbox => vec![
            Line::from(vec![
                key("y"),
                Span::styled(format!("allow {once}"), theme::warning()),
            ]),
            Line::styled(
                "     (leaving the sandbox is never allowed until exit)",
                theme::dim(),
            ),
            Line::from(vec![
                key("n"),
                Span::raw("deny, with a reason for the model   "),
                key("Esc"),
                Span::raw("deny"),
            ]),
        ],
        (None, false) => vec![
            Line::from(vec![key("y"), Span::raw("allow once")]),
            grant_line(p, key("a")),
            Line::from(vec![
                key("n"),
                Span::raw("deny, with a reason for the model   "),
                key("Esc"),
                Span::raw("deny"),
            ]),
        ],
        (Some(text), true) => vec![reason_line("reason: ", text)],
        (Some(text), false) => vec![
            reason_line("reason for the model: ", text),
            Line::from(vec![
                key("Enter"),
                Span::raw("deny with this reason (or none)   "),
                key("Esc"),
                Span::raw("back"),
            ]),
        ],
    }
}

/// The `a` choice: the lasting rule it allows; for a risky one, that it
/// asks twice, and after one `a` the warning; for a command no prefix
/// rule could match, why there is none.
fn grant_line(p: &ApprovalPrompt, key: Span<'static>) -> Line<'static> {
    let r = &p.request;
    if r.grant.is_empty() {
        return Line::styled(
            "     (no lasting rule: a command prefix never matches this command)",
            theme::dim(),
        );
    }
    if p.confirming {
        return Line::from(vec![
            key,
            Span::styled(
                format!(
                    "again: {} may delete or rewrite files, or run any command",
                    r.grant
                ),
                theme::warning(),
            ),
        ]);
    }
    let mut spans = vec![
        key,
        Span::raw("allow "),
        Span::styled(r.grant.clone(), theme::title()),
        Span::raw(" until strata exits"),
    ];
    if r.grant_risky {
        spans.push(Span::styled(" (asks twice)", theme::dim()));
    }
    Line::from(spans)
}

/// The choices on one line: the longest wording that fits `width` (what
/// `a` allows is named when it fits).
fn compact_choices(grant: &str, width: u16) -> Line<'static> {
    let until = format!(" {grant} until exit · ");
    let wordings: [[(&str, &str); 3]; 4] = [
        [("y", " once · "), ("a", &until), ("n", " deny")],
        [("y", " once · "), ("a", " until exit · "), ("n", " deny")],
        [("y", "/"), ("a", " allow · "), ("n", " deny")],
        [("y", "/"), ("a", "/"), ("n", "")],
    ];
    let fits = |w: &&[(&str, &str); 3]| {
        w.iter()
            .map(|(k, t)| fmt::width(k) + fmt::width(t))
            .sum::<usize>()
            <= usize::from(width)
    };
    let chosen = wordings.iter().find(fits).unwrap_or(&wordings[3]);
    Line::from(
        chosen
            .iter()
            .flat_map(|(k, t)| {
                [
                    Span::styled((*k).to_owned(), theme::title()),
                    Span::raw((*t).to_owned()),
                ]
            })
            .collect::<Vec<_>>(),
    )
}

/// Draws the prompt inside the overlay's frame as [`plan`] shares the rows:
/// the head from the top, the detail and its hint under it, the choices at
/// the bottom.
pub(super) fn render(p: &ApprovalPrompt, area: Rect, buf: &mut Buffer) {
    let Some(plan) = plan(p, area.width, area.height) else {
        too_small(p, area, buf);
        return;
    };
    let r = &p.request;
    let level = plan.level;
    let mut y = area.y;
    let put = |line: &Line<'static>, y: &mut u16, buf: &mut Buffer| {
        buf.set_line(area.x, *y, &fmt_line(line, area.width), area.width);
        *y += 1;
    };
    if level.title {
        put(&title_line(r), &mut y, buf);
    }
    for line in warning_lines(r, level.warning, area.width) {
        put(&line, &mut y, buf);
    }
    if level.blanks > 0 {
        y += 1;
    }
    if level.heading {
        put(&heading_line(&p.heading, area.width), &mut y, buf);
    }
    let rows = u16::try_from(plan.detail).unwrap_or(u16::MAX);
    p.pager.render(
        detail_key(r),
        &r.detail,
        || detail_doc(r),
        Rect {
            x: area.x,
            y,
            width: area.width,
            height: rows,
        },
        buf,
    );
    y += rows;
    if plan.hint {
        put(&hint_line(p.pager.around(), area.width), &mut y, buf);
    }
    let choices = choice_lines(p, level.compact, area.width);
    let first = area.y + area.height - u16::try_from(choices.len()).unwrap_or(0);
    for (y, line) in (first..).zip(&choices) {
        buf.set_line(area.x, y, &fmt_line(line, area.width), area.width);
    }
}

/// What the overlay says when not one line of the detail fits: enlarge
/// the terminal; only denying is offered (and the reason being typed keeps
/// the last row).
fn too_small(p: &ApprovalPrompt, area: Rect, buf: &mut Buffer) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let what = match p.request.call.name.as_str() {
        "shell" => "the command",
        "edit_file" | "write_file" => "the change",
        _ => "the call",
    };
    let deny = if p.reason.is_some() {
        "Enter denies"
    } else {
        "n or Esc denies"
    };
    let reason = p
        .reason
        .is_some()
        .then(|| choice_lines(p, true, area.width))
        .filter(|_| area.height >= 2)
        .unwrap_or_default();
    let rows = usize::from(area.height) - reason.len();
    // The longest wording that fits the rows.
    let wordings = [
        format!("Enlarge the terminal to see {what} before allowing it; {deny}."),
        format!("Enlarge the terminal to see {what}."),
        format!("Enlarge to see {what}."),
        "Enlarge the terminal.".to_owned(),
        "Too small.".to_owned(),
    ];
    let lines = wordings
        .iter()
        .map(|w| plain_lines(w, area.width, theme::warning()))
        .find(|l| l.len() <= rows)
        .unwrap_or_else(|| plain_lines("Too small.", area.width, theme::warning()));
    for (y, line) in (area.y..).zip(lines.iter().take(rows)) {
        buf.set_line(area.x, y, &fmt_line(line, area.width), area.width);
    }
    for line in &reason {
        buf.set_line(
            area.x,
            area.y + area.height - 1,
            &fmt_line(line, area.width),
            area.width,
        );
    }
}

/// `line` as drawn in `width` cells (cut with `…` rather than silently).
fn fmt_line(line: &Line<'static>, width: u16) -> Line<'static> {
    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    if fmt::width(&text) <= usize::from(width) {
        return line.clone();
    }
    let mut left = usize::from(width);
    let mut spans = Vec::new();
    for s in &line.spans {
        let w = fmt::width(&s.content);
        if w < left {
            spans.push(s.clone());
            left -= w;
        } else {
            spans.push(Span::styled(fmt::cut(&s.content, left), s.style));
            break;
        }
    }
    Line::from(spans)
}
