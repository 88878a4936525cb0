//! The approval overlay: a tool call waiting for the user's answer. It
//! shows the tool, its one-line summary and its detail in full (the
//! command, the diff of the edit, or the new content of the file), a plain
//! warning that strata does not confine `shell`, and the choices: allow
//! once (`y`), allow until strata exits (`a`, naming what that allows),
//! deny (`n`, then an optional reason typed on one line, which goes to the
//! model), and Esc to deny without a reason. Only its view state lives
//! here; the app turns keys into answers.

use super::super::pager::{Item, Pager, key_of};
use super::super::tool_block::diff_style;
use super::super::{fmt, theme};
use crate::runtime::service::ApprovalRequest;
use crate::tooling::Access;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

/// What the overlay says of `shell` before it may run.
const UNCONFINED: &str = "strata does not confine this command: it runs in the workspace with your \
     permissions and can read or change anything you can.";

/// What the overlay says of a file change before it is made.
const UNDOABLE: &str = "The file's previous content is kept: /undo-edit restores it.";

/// A call waiting for approval, with the overlay's view state.
#[derive(Clone, Debug)]
pub struct ApprovalPrompt {
    /// The call and what it would do.
    pub request: ApprovalRequest,
    /// The reason being typed after `n` (`None`: the choices are shown).
    pub reason: Option<String>,
    /// Scroll position and layout of the detail.
    pub pager: Pager,
}

impl ApprovalPrompt {
    /// The overlay for `request`, showing its choices.
    #[must_use]
    pub fn new(request: ApprovalRequest) -> Self {
        Self {
            request,
            reason: None,
            pager: Pager::default(),
        }
    }
}

/// The detail as a document: a heading rule, then its lines (an edit's
/// diff coloured by line).
fn detail_doc(r: &ApprovalRequest) -> Vec<Item> {
    let text = &r.detail;
    let (first, rest_at) = match text.find('\n') {
        Some(i) => (&text[..i], i + 1),
        None => (text.as_str(), text.len()),
    };
    let mut out = Vec::new();
    let rule = |head: String| Item::Rule(Box::new((head, theme::dim())));
    match r.call.name.as_str() {
        "shell" => {
            out.push(rule("── command ".to_owned()));
            Item::lines_of(text, 0, text.len(), &mut out);
        }
        "edit_file" => {
            out.push(rule(format!("── edit of {first} ")));
            let mut at = rest_at;
            for piece in text[rest_at..].split_inclusive('\n') {
                let body = piece.strip_suffix('\n').unwrap_or(piece);
                out.push(Item::Styled(at, at + body.len(), diff_style(body)));
                at += piece.len();
            }
        }
        "write_file" => {
            out.push(rule(format!("── new content of {first} ")));
            Item::lines_of(text, rest_at, text.len(), &mut out);
        }
        _ => {
            out.push(rule("── arguments ".to_owned()));
            Item::lines_of(text, 0, text.len(), &mut out);
        }
    }
    out
}

/// The rows above the detail: the call, and what to know before answering.
fn head_lines(r: &ApprovalRequest, width: u16) -> Vec<Line<'static>> {
    let mut out = vec![Line::from(vec![
        Span::styled(r.call.name.clone(), theme::tool_name()),
        Span::raw(" "),
        Span::raw(r.summary.clone()),
    ])];
    match r.access {
        Access::Run => out.extend(crate::render::plain_lines(UNCONFINED, width, theme::warning())),
        Access::Write => out.extend(crate::render::plain_lines(UNDOABLE, width, theme::dim())),
        Access::ReadOnly => {}
    }
    out.push(Line::default());
    out
}

/// The rows below the detail: the choices, or the reason being typed.
fn choice_lines(p: &ApprovalPrompt, width: u16) -> Vec<Line<'static>> {
    let key = |k: &str| Span::styled(format!("{k:<4} "), theme::title());
    match &p.reason {
        None => vec![
            Line::from(vec![key("y"), Span::raw("allow once")]),
            Line::from(vec![
                key("a"),
                Span::raw("allow "),
                Span::styled(p.request.grant.clone(), theme::title()),
                Span::raw(" until strata exits"),
            ]),
            Line::from(vec![
                key("n"),
                Span::raw("deny, with a reason for the model   "),
                key("Esc"),
                Span::raw("deny"),
            ]),
        ],
        Some(text) => vec![
            Line::from(vec![
                Span::raw("reason for the model: "),
                // The end of a long reason, where the typing is.
                Span::raw(fmt::cut_left(text, usize::from(width).saturating_sub(24))),
                Span::styled("▏", theme::dim()),
            ]),
            Line::from(vec![
                key("Enter"),
                Span::raw("deny with this reason (or none)   "),
                key("Esc"),
                Span::raw("back"),
            ]),
        ],
    }
}

/// Draws the prompt inside the overlay's frame: the head from the top, the
/// choices at the bottom (they keep their rows on a small screen), the
/// detail scrolling between them.
pub(super) fn render(p: &ApprovalPrompt, area: Rect, buf: &mut Buffer) {
    let choices = choice_lines(p, area.width);
    let head = head_lines(&p.request, area.width);
    let rows = usize::from(area.height);
    let choice_rows = choices.len().min(rows);
    let head_rows = head.len().min(rows - choice_rows);
    let detail_rows = rows - choice_rows - head_rows;
    let row = |i: usize| area.y + u16::try_from(i).unwrap_or(u16::MAX);
    for (i, line) in head.iter().take(head_rows).enumerate() {
        buf.set_line(area.x, row(i), line, area.width);
    }
    // One blank row between the detail and the choices when there is room.
    let gap = usize::from(detail_rows > 2);
    if detail_rows > gap {
        let r = &p.request;
        p.pager.render(
            key_of((&r.call.id, r.detail.len())),
            &r.detail,
            || detail_doc(r),
            Rect {
                x: area.x,
                y: row(head_rows),
                width: area.width,
                height: u16::try_from(detail_rows - gap).unwrap_or(u16::MAX),
            },
            buf,
        );
    }
    for (i, line) in choices.iter().take(choice_rows).enumerate() {
        let y = row(rows - choice_rows + i);
        buf.set_line(area.x, y, &fmt_line(line, area.width), area.width);
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
