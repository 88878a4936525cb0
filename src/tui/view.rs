//! Drawing the main screen from the app state: header, chat pane, context
//! pane, composer, status bar, and the open overlay on top. Reads the state
//! only; every size below 80×24 degrades by dropping parts (1 row: the
//! composer; 2: plus the status bar; 3: plus the header; the context pane
//! needs 60 columns).

use super::app::App;
use super::keymap::Action;
use super::{context_pane, fmt, menu, overlay, slash, theme};
use crate::conversation::Phase;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Draws the whole screen into `buf` over `area`.
pub fn draw(app: &App, area: Rect, buf: &mut Buffer) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let h = area.height;
    let composer_rows = u16::try_from(app.composer.lines().len())
        .unwrap_or(u16::MAX)
        .clamp(1, 5)
        .min(h.saturating_sub(3).max(1));
    let row = |y: u16, height: u16| Rect {
        x: area.x,
        y: area.y + y,
        width: area.width,
        height,
    };
    match h {
        1 => composer(app, row(0, 1), buf),
        2 => {
            composer(app, row(0, 1), buf);
            status(app, row(1, 1), buf);
        }
        3 => {
            header(app, row(0, 1), buf);
            composer(app, row(1, 1), buf);
            status(app, row(2, 1), buf);
        }
        _ => {
            let body_h = h - 2 - composer_rows;
            header(app, row(0, 1), buf);
            body(app, row(1, body_h), buf);
            if let Some((commands, selected)) = app.slash_menu() {
                menu::render(&commands, selected, row(1, body_h), buf);
            }
            composer(app, row(1 + body_h, composer_rows), buf);
            status(app, row(h - 1, 1), buf);
        }
    }
    if let Some(o) = &app.overlay {
        overlay::render(o, app.context.as_ref(), &app.keymap, area, buf);
    }
    if let Some(q) = app.rewrite_question() {
        confirm(
            " prompt cache ",
            &[q.sentence()],
            "Enter confirms · Esc cancels",
            area,
            buf,
        );
    }
    if let Some(mut lines) = app.attach_question() {
        let keys = super::app::ATTACH_KEYS;
        if !confirm_fits(&lines, keys, area) {
            // `y` allows nothing now: say so where it is seen, first.
            lines.insert(0, ATTACH_TOO_SMALL.to_owned());
        }
        confirm(" attach ", &lines, keys, area, buf);
    }
}

/// The attach box's first line while the terminal is too small to show
/// every file it lists and its keys.
const ATTACH_TOO_SMALL: &str =
    "Too small to list them all: enlarge the terminal to allow them, n sends without, Esc edits.";

/// A small centred box titled `title` asking to confirm what `lines`
/// say, with its `keys` under them.
/// The width of the box [`confirm`] draws in `area`, or `None` when
/// `area` is too small for one, and the rows its `lines` wrap to.
fn confirm_size(lines: &[String], area: Rect) -> Option<(u16, u16)> {
    let width = area.width.saturating_sub(4).min(64);
    if width < 20 || area.height < 6 {
        return None;
    }
    let text_rows: usize = lines
        .iter()
        .map(|l| fmt::width(l).div_ceil(usize::from(width - 2)).max(1))
        .sum();
    Some((width, u16::try_from(text_rows).unwrap_or(u16::MAX)))
}

/// Whether [`confirm`] shows every one of `lines` and the `keys` line in
/// `area`: a question whose answer allows what it lists is answerable only
/// then.
#[must_use]
pub(crate) fn confirm_fits(lines: &[String], keys: &str, area: Rect) -> bool {
    confirm_size(lines, area).is_some_and(|(width, text_rows)| {
        let key_rows =
            u16::try_from(fmt::width(keys).div_ceil(usize::from(width - 2)).max(1)).unwrap_or(u16::MAX);
        // Borders, the blank line, the keys and a row of slack.
        text_rows.saturating_add(key_rows).saturating_add(4) <= area.height
    })
}

fn confirm(title: &str, lines: &[String], keys: &str, area: Rect, buf: &mut Buffer) {
    use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};
    let Some((width, text_rows)) = confirm_size(lines, area) else {
        return;
    };
    // One row of slack: words wrap earlier than characters.
    let height = text_rows.saturating_add(5).min(area.height);
    let rect = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    Clear.render(rect, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(title.to_owned(), theme::title()));
    let inner = block.inner(rect);
    block.render(rect, buf);
    let mut text: Vec<Line<'static>> = lines.iter().map(|l| Line::raw(l.clone())).collect();
    text.push(Line::default());
    text.push(Line::styled(keys.to_owned(), theme::dim()));
    Paragraph::new(text).wrap(Wrap { trim: true }).render(inner, buf);
}

fn body(app: &App, area: Rect, buf: &mut Buffer) {
    if app.context_visible() && area.height > 0 {
        let pane_w = (area.width / 3).clamp(28, 44);
        let chat = Rect {
            width: area.width - pane_w,
            ..area
        };
        let pane = Rect {
            x: area.x + chat.width,
            width: pane_w,
            ..area
        };
        app.chat.render(chat, buf);
        let live = context_pane::Live {
            draft_tokens: app.draft_tokens,
            streaming_tokens: app
                .chat
                .streaming
                .as_ref()
                .map_or(0, super::chat::Streaming::tokens),
            stale: &app.stale,
            detail: app.detail,
        };
        context_pane::render(app.context.as_ref(), live, pane, buf);
    } else {
        app.chat.render(area, buf);
    }
}

fn header(app: &App, area: Rect, buf: &mut Buffer) {
    let title = app
        .session
        .as_ref()
        .map(|s| s.title.clone())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "new session".to_owned());
    let mut parts = vec![format!(" strata · {title}")];
    if !app.header.model.is_empty() {
        parts.push(app.header.model.clone());
        let mut p = app.header.provider.clone();
        if app.header.embedded {
            p.push_str(" (embedded)");
        }
        parts.push(p);
    } else {
        parts.push("connecting…".to_owned());
    }
    let text = parts.join(" · ");
    buf.set_style(area, theme::header());
    buf.set_string(
        area.x,
        area.y,
        fmt::cut(&text, usize::from(area.width)),
        theme::header(),
    );
}

fn composer(app: &App, area: Rect, buf: &mut Buffer) {
    if area.width < 3 {
        return;
    }
    for y in 0..area.height {
        let mark = if y == 0 { "› " } else { "  " };
        buf.set_string(area.x, area.y + y, mark, theme::dim());
    }
    let text_area = Rect {
        x: area.x + 2,
        width: area.width - 2,
        ..area
    };
    (&app.composer).render(text_area, buf);
}

fn status(app: &App, area: Rect, buf: &mut Buffer) {
    if let Some(q) = app.question() {
        buf.set_style(area, theme::status());
        let line = Line::from(Span::styled(format!(" {q} "), theme::status()));
        buf.set_line(area.x, area.y, &line, area.width);
        return;
    }
    let mut spans: Vec<Span<'static>> = Vec::new();
    if app.busy {
        let rate = app
            .chat
            .streaming
            .as_ref()
            .and_then(|s| s.rate(app.now_ms))
            .map_or_else(String::new, |r| format!(" {r:.0} tok/s"));
        let spinner = SPINNER[app.spinner % SPINNER.len()];
        let label = match &app.phase {
            Some((Phase::Preparing, _)) => "preparing".to_owned(),
            Some((Phase::StartingServers { ready, total }, since)) => format!(
                "waiting for MCP servers {ready}/{total} {} · Esc sends without them",
                elapsed(app.now_ms, *since)
            ),
            Some((Phase::Compressing(_), since)) => format!("compressing {}", elapsed(app.now_ms, *since)),
            Some((Phase::Connecting, since)) => format!("connecting {}", elapsed(app.now_ms, *since)),
            Some((Phase::WaitingForFirstToken, since)) => {
                format!("waiting for the first token {}", elapsed(app.now_ms, *since))
            }
            Some((Phase::ReadingPrompt { done, total }, since)) => format!(
                "reading the prompt {} of {} tokens {}",
                fmt::tokens(*done),
                fmt::tokens(*total),
                elapsed(app.now_ms, *since)
            ),
            Some((Phase::Retrying { attempt, max, reason }, since)) => {
                format!(
                    "retry {attempt}/{max} {} · {}",
                    elapsed(app.now_ms, *since),
                    crate::render::defuse(reason)
                )
            }
            Some((Phase::RunningTool { name, others }, since)) => {
                let more = if *others > 0 {
                    format!(" +{others}")
                } else {
                    String::new()
                };
                format!("running {name}{more} {}", elapsed(app.now_ms, *since))
            }
            Some((Phase::AwaitingApproval { name }, since)) => {
                format!("waiting for approval of {name} {}", elapsed(app.now_ms, *since))
            }
            Some((Phase::Streaming | Phase::Done, _)) => format!("streaming{rate}"),
            None if app.chat.streaming.as_ref().is_some_and(|s| !s.text.is_empty()) => {
                format!("streaming{rate}")
            }
            // Sent; the service has not said more yet.
            None => "preparing".to_owned(),
        };
        spans.push(Span::raw(format!(" {spinner} {label} ")));
    } else if let Some(w) = &app.working {
        let spinner = SPINNER[app.spinner % SPINNER.len()];
        let stop = if w.cancellable { " · Esc stops" } else { "" };
        spans.push(Span::raw(format!(
            " {spinner} {} {}{stop} ",
            w.label,
            elapsed(app.now_ms, w.since)
        )));
    } else {
        spans.push(Span::raw(" idle "));
    }
    let draft = app.draft();
    if let Some(n) = &app.notice {
        let style = if n.error { theme::error() } else { theme::status() };
        spans.push(Span::styled(
            format!("· {} ", crate::render::defuse(&n.text)),
            style,
        ));
    } else if let Some(p) = &app.progress {
        spans.push(Span::raw(format!("· {p} ")));
    } else if draft.starts_with('/') && app.slash_menu().is_none() {
        let names: Vec<String> = slash::candidates(&draft)
            .iter()
            .map(|c| format!("/{}", c.name()))
            .collect();
        if !names.is_empty() {
            spans.push(Span::raw(format!("· {} ", names.join(" "))));
        }
    } else if let Some((c, left)) = app
        .context
        .as_ref()
        .filter(|c| c.compression_helps)
        .and_then(|c| super::cache_view::tokens_before_compression(c).map(|left| (c, left)))
    {
        let turns = super::cache_view::turns_left(c, left);
        spans.push(Span::styled(
            format!(
                "· ⚠ {} · /compress now ",
                super::cache_view::warning_text(left, turns)
            ),
            theme::warning(),
        ));
    } else if let Some(u) = &app.last_usage {
        let show = |v: Option<u64>| v.map_or_else(|| "–".to_owned(), fmt::tokens);
        spans.push(Span::raw(format!(
            "· prompt {} · completion {} · cached {} ",
            show(u.prompt_tokens),
            show(u.completion_tokens),
            show(u.cache_read_tokens)
        )));
    }
    let left: String = spans.iter().map(|s| s.content.as_ref()).collect();
    let opens = app
        .has_folds()
        .then(|| app.keymap.label_for(Action::ToggleSummaries))
        .flatten();
    let selected = app
        .selecting()
        .then(|| app.chat.selected.and_then(|id| app.chat.position(id)))
        .flatten();
    let hints = if let Some(pos) = selected {
        format!(
            "message {pos} · ↑↓ move · p pin · x exclude · e edit · c compress to here · Enter open · Esc back "
        )
    } else if app.selecting() {
        "↑↓ move · Enter open · Esc back ".to_owned()
    } else if app.editing().is_some() {
        "Enter resends · Esc cancels the edit ".to_owned()
    } else if app.chat.tools.selected.is_some() {
        "↑↓ select · Enter expand · Esc back ".to_owned()
    } else if app.busy {
        "Ctrl-C cancel · F1 help ".to_owned()
    } else if let Some(key) = opens {
        format!("{key} opens the paste · Enter send ")
    } else {
        "Enter send · F1 help ".to_owned()
    };
    let room = usize::from(area.width);
    let hints = match selected {
        Some(pos) if fmt::width(&left) + fmt::width(&hints) > room => {
            format!("message {pos} · p pin · x exclude · e edit · c compress · Esc ")
        }
        _ => hints,
    };
    let pad = room.saturating_sub(fmt::width(&left) + fmt::width(&hints));
    if pad > 0 {
        spans.push(Span::raw(" ".repeat(pad)));
        spans.push(Span::styled(hints, theme::status()));
    }
    buf.set_style(area, theme::status());
    buf.set_line(
        area.x,
        area.y,
        &Line::from(spans).style(theme::status()),
        area.width,
    );
}

/// Seconds from `since` to `now` (unix ms), as `12s`.
fn elapsed(now_ms: i64, since_ms: i64) -> String {
    format!("{}s", (now_ms - since_ms).max(0) / 1_000)
}
