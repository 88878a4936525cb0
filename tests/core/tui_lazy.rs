//! The lazily laid out surfaces of the full-screen app show what a full
//! layout would: the request inspector over a 50,000-line body (top, the
//! middle after many PageDowns, the end, a resize that keeps the line on
//! top), and a reply streamed in many deltas, which must look exactly like
//! the same text laid out whole.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::tui as tui_support;

use crossterm::event::KeyCode;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use strata::domain::{Message, MessageStatus, Role};
use strata::runtime::service::ServiceEvent;
use strata::tui::{App, AppEvent, RequestView};
use tui_support::*;

const LINES: usize = 50_000;

/// The screen's rows as text.
fn rows(app: &App, w: u16, h: u16) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal
        .draw(|f| strata::tui::draw(app, f.area(), f.buffer_mut()))
        .unwrap();
    let buf = terminal.backend().buffer();
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect()
}

/// The rows inside the overlay's frame (its borders cut off).
fn inside(app: &App, w: u16, h: u16) -> Vec<String> {
    let all = rows(app, w, h);
    let top = all.iter().position(|r| r.contains("┌")).unwrap();
    let bottom = all.iter().rposition(|r| r.contains("└")).unwrap();
    all[top + 1..bottom]
        .iter()
        .map(|r| {
            let start = r.find('│').unwrap() + '│'.len_utf8();
            let end = r.rfind('│').unwrap();
            r[start..end].trim_end().to_owned()
        })
        .collect()
}

/// Line `i` of the body: 151 characters without spaces (two rows at 98
/// columns, three at 66).
fn body_line(i: usize) -> String {
    format!("{i:05}:{}", "x".repeat(145))
}

fn inspector(w: u16, h: u16) -> App {
    let mut app = app_with(w, h, Vec::new(), None);
    type_text(&mut app, "/inspect");
    app.handle(key(KeyCode::Enter));
    let json: Vec<String> = (0..LINES).map(body_line).collect();
    app.handle(ServiceEvent::Request(Box::new(RequestView {
        json: json.join("\n"),
        report: Vec::new(),
        prepared_tokens: 2_000_000,
    })));
    app
}

#[test]
fn a_50000_line_request_scrolls_to_the_right_rows_at_the_top_middle_and_end() {
    let (w, h) = (120, 36);
    let mut app = inspector(w, h);
    // 120×36: the frame is 100×30, so 98 columns and 28 rows of text; each
    // body line takes two rows after the two heading rows.
    let top = inside(&app, w, h);
    assert_eq!(top.len(), 28);
    assert_eq!(top[0], "estimated input 2M tokens");
    assert_eq!(top[2], body_line(0)[..98]);
    assert_eq!(top[3], body_line(0)[98..]);
    assert_eq!(top[27], body_line(12)[98..]);

    // PageDown moves ten rows; 7,000 of them is past the 65,535 rows a
    // `u16` offset could reach.
    for _ in 0..7_000 {
        app.handle(key(KeyCode::PageDown));
    }
    let middle = inside(&app, w, h);
    // Row 70,000 is the first row of body line (70,000 - 2) / 2.
    assert_eq!(middle[0], body_line(34_999)[..98]);
    assert_eq!(middle[1], body_line(34_999)[98..]);
    assert_eq!(middle[27], body_line(35_012)[98..]);
    app.handle(key(KeyCode::Up));
    assert_eq!(inside(&app, w, h)[0], body_line(34_998)[98..]);

    app.handle(key(KeyCode::End));
    let end = inside(&app, w, h);
    assert_eq!(
        end[27],
        body_line(LINES - 1)[98..],
        "the last row is at the bottom"
    );
    assert_eq!(end[0], body_line(LINES - 14)[..98]);
    // Past the end is the end; one row up from it is one row up.
    app.handle(key(KeyCode::PageDown));
    assert_eq!(inside(&app, w, h), end);
    app.handle(key(KeyCode::Up));
    assert_eq!(inside(&app, w, h)[27], body_line(LINES - 1)[..98]);

    app.handle(key(KeyCode::Home));
    assert_eq!(inside(&app, w, h), top);
}

#[test]
fn a_resize_wraps_the_inspector_again_with_the_same_line_on_top() {
    let mut app = inspector(120, 36);
    inside(&app, 120, 36);
    for _ in 0..100 {
        app.handle(key(KeyCode::PageDown));
    }
    let wide = inside(&app, 120, 36);
    assert_eq!(wide[0], body_line(499)[..98]);
    // 80×24: a 68×20 frame, 66 columns; a body line takes three rows, and
    // the line on top stays on top.
    app.handle(AppEvent::Resize {
        width: 80,
        height: 24,
    });
    let narrow = inside(&app, 80, 24);
    assert_eq!(narrow.len(), 18);
    assert_eq!(narrow[0], body_line(499)[..66]);
    assert_eq!(narrow[1], body_line(499)[66..132]);
    assert_eq!(narrow[2], body_line(499)[132..]);
    assert_eq!(narrow[3], body_line(500)[..66]);
    assert!(narrow.iter().all(|r| r.chars().count() <= 66));
    // And back: the wide layout is the same as before.
    app.handle(AppEvent::Resize {
        width: 120,
        height: 36,
    });
    assert_eq!(inside(&app, 120, 36), wide);
}

/// A long Markdown reply: headings, prose, lists, code, tables, quotes.
fn reply() -> String {
    let mut t = String::new();
    for i in 0..120 {
        t.push_str(&format!(
            "## Step {i}\n\nThe **pipeline** keeps the prompt byte-stable so the cache hits; see `prepare()` \
             and [the design](https://example.com/{i}). This sentence wraps across rows.\n\n"
        ));
        match i % 5 {
            0 => t.push_str("```rust\nfn main() {\n\n    let x = 1;\n}\n```\n\n"),
            1 => t.push_str(
                "- first\n- second with `code`\n  - nested\n\n  more of second\n\n1. one\n2. two\n\n",
            ),
            2 => t.push_str("| layer | tokens |\n|---|---:|\n| project | 1204 |\n| 中文 | 🙂 |\n\n"),
            3 => t.push_str("> quoted\nlazy continuation\n\n---\n"),
            _ => t.push_str("    indented code\n\n    more code\nafter\n\n"),
        }
    }
    t
}

#[test]
fn a_reply_streamed_in_many_deltas_looks_like_the_same_text_laid_out_whole() {
    let (w, h) = (80, 24);
    let text = reply();
    let mut streamed = app_with(w, h, Vec::new(), None);
    let mut at = 0;
    let mut n = 0usize;
    while at < text.len() {
        let mut end = (at + 1 + n % 23).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        streamed.handle(ServiceEvent::Delta {
            text: text[at..end].to_owned(),
            now_ms: n as i64,
        });
        at = end;
        n += 1;
        if n.is_multiple_of(50) {
            // Draw along the way, as the app does, so the cache is used.
            rows(&streamed, w, h);
        }
    }
    assert!(n > 1_000, "{n} deltas");
    // The same text as one message drawn whole (same header: streaming).
    let mut m = Message::new(session_id(1), Role::Assistant, text.clone(), 0);
    m.status = MessageStatus::Streaming;
    let mut whole = app_with(w, h, vec![m], None);
    for _ in 0..40 {
        assert_eq!(rows(&streamed, w, h)[1..22], rows(&whole, w, h)[1..22]);
        streamed.handle(AppEvent::Wheel(37));
        whole.handle(AppEvent::Wheel(37));
    }
    // A resize lays the reply out again, still the same.
    for a in [&mut streamed, &mut whole] {
        a.handle(AppEvent::Resize {
            width: 61,
            height: 24,
        });
    }
    assert_eq!(rows(&streamed, 61, 24)[1..22], rows(&whole, 61, 24)[1..22]);
}
