//! Markdown rendering for the chat pane: the lines it draws (insta
//! snapshots, reviewed when they change), highlighting arriving after a
//! plain first draw, the size limit, wide characters at odd widths, tiny
//! widths, and defused escape sequences.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ratatui::style::{Color, Modifier};
use ratatui::text::Line;
use std::collections::HashMap;
use std::time::Duration;
use strata::render::{
    Highlight, HighlightKey, HighlightLookup, Highlighter, MAX_HIGHLIGHT_LINES, NoHighlights, WrapCache,
    content_hash, markdown_lines, plain_lines, render_markdown,
};

/// The lines as text, one per row, with `⏎` marking where each ends (so
/// trailing spaces show).
fn text(lines: &[Line<'_>]) -> String {
    lines
        .iter()
        .map(|l| {
            format!(
                "{}⏎",
                l.spans.iter().map(|s| s.content.as_ref()).collect::<String>()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_fits(lines: &[Line<'_>], width: u16) {
    for l in lines {
        assert!(
            l.width() <= usize::from(width),
            "line {:?} is {} wide, more than {width}",
            text(std::slice::from_ref(l)),
            l.width()
        );
    }
}

fn span_with<'a>(lines: &'a [Line<'_>], needle: &str) -> &'a ratatui::text::Span<'a> {
    lines
        .iter()
        .flat_map(|l| l.spans.iter())
        .find(|s| s.content.contains(needle))
        .unwrap_or_else(|| panic!("no span contains {needle:?}"))
}

const DOC: &str = "# Title\n\nA paragraph with *emphasis*, **strong** text, `inline code` and a [link](https://example.com/x) that wraps.\n\n## Steps\n\n1. First step\n2. Second step, long enough to wrap onto another line\n   - nested bullet\n   - [x] done task\n\n> A quoted remark\n> over two lines.\n\n---\n\nEnd.\n";

#[test]
fn headings_lists_quotes_and_links_at_40_columns() {
    let lines = markdown_lines(DOC, 40, &NoHighlights);
    assert_fits(&lines, 40);
    insta::assert_snapshot!(text(&lines));
    let title = span_with(&lines, "# Title");
    assert!(title.style.add_modifier.contains(Modifier::BOLD));
    assert!(
        span_with(&lines, "emphasis")
            .style
            .add_modifier
            .contains(Modifier::ITALIC)
    );
    assert!(
        span_with(&lines, "strong")
            .style
            .add_modifier
            .contains(Modifier::BOLD)
    );
    assert!(
        span_with(&lines, "link")
            .style
            .add_modifier
            .contains(Modifier::UNDERLINED)
    );
}

#[test]
fn a_table_in_columns_and_as_records_when_narrow() {
    let table = "| Name | Tokens | Note |\n|:-----|-------:|------|\n| project | 1,204 | AGENTS.md and CLAUDE.md |\n| memory | 88 | |\n";
    let wide = markdown_lines(table, 60, &NoHighlights);
    assert_fits(&wide, 60);
    let narrow = markdown_lines(table, 36, &NoHighlights);
    assert_fits(&narrow, 36);
    let tiny = markdown_lines(table, 20, &NoHighlights);
    assert_fits(&tiny, 20);
    insta::assert_snapshot!(format!("{}\n\n{}\n\n{}", text(&wide), text(&narrow), text(&tiny)));
}

const CODE: &str = "Before.\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\nAfter.\n";

#[test]
fn code_renders_plain_until_its_highlight_arrives_then_coloured() {
    let none: HashMap<HighlightKey, Highlight> = HashMap::new();
    let before = render_markdown(CODE, 40, &none);
    assert_eq!(before.pending.len(), 1, "the block waits for its highlight");
    let plain = span_with(&before.lines, "fn main");
    assert!(
        !matches!(plain.style.fg, Some(Color::Rgb(..))),
        "plain before: {plain:?}"
    );

    let mut highlighter = Highlighter::spawn();
    let keys = highlighter.request_markdown(CODE);
    assert_eq!(keys, before.pending);
    for _ in 0..60 {
        if highlighter.lookup(keys[0]) != Highlight::Pending {
            break;
        }
        highlighter.wait(Duration::from_secs(1));
    }
    let after = render_markdown(CODE, 40, &highlighter);
    assert!(after.pending.is_empty());
    assert_eq!(text(&before.lines), text(&after.lines), "same text, new colours");
    let coloured = after
        .lines
        .iter()
        .flat_map(|l| l.spans.iter())
        .filter(|s| matches!(s.style.fg, Some(Color::Rgb(..))))
        .count();
    assert!(
        coloured >= 3,
        "highlighted code has coloured spans: {:?}",
        after.lines
    );
    insta::assert_snapshot!(text(&after.lines));

    // The cache re-renders exactly the message that waited.
    let mut cache = WrapCache::new(1_000);
    let key = content_hash(CODE);
    let first = cache.get_or_render(key, 40, |w| render_markdown(CODE, w, &none));
    assert!(!matches!(
        span_with(&first, "fn main").style.fg,
        Some(Color::Rgb(..))
    ));
    assert_eq!(cache.highlights_arrived(&keys), 1);
    let second = cache.get_or_render(key, 40, |w| render_markdown(CODE, w, &highlighter));
    assert_eq!(text(&first), text(&second));
    assert_ne!(first, second);
}

fn long_block(lines: usize) -> String {
    let mut s = String::from("```rust\n");
    for i in 0..lines {
        s.push_str(&format!("let value_{i} = compute({i}) + offset; // line {i}\n"));
    }
    s.push_str("```\n");
    s
}

#[test]
fn a_1000_line_block_draws_every_line_plain_while_pending() {
    let text_1000 = long_block(1_000);
    let r = render_markdown(&text_1000, 80, &HashMap::new());
    assert_eq!(r.lines.len(), 1_002, "fences plus every line");
    assert_eq!(r.pending.len(), 1);
    assert_fits(&r.lines, 80);
    assert_eq!(
        text(&r.lines[..3]),
        "```rust⏎\nlet value_0 = compute(0) + offset; // line 0⏎\nlet value_1 = compute(1) + offset; // line 1⏎"
    );
}

#[test]
fn a_block_over_the_limit_is_never_highlighted() {
    let huge = long_block(MAX_HIGHLIGHT_LINES + 1);
    let r = render_markdown(&huge, 80, &HashMap::new());
    assert!(r.pending.is_empty(), "never waits for a highlight");
    let mut highlighter = Highlighter::spawn();
    let keys = highlighter.request_markdown(&huge);
    assert_eq!(highlighter.lookup(keys[0]), Highlight::Plain);
}

const WIDE: &str = "中文字符和日本語のテキストが混ざった文。🙂 emoji 👨‍👩‍👧 family and flags 🇫🇷🇯🇵 with a thumbs 👍🏽 up.\n\n- 한국어 목록 항목입니다\n\n```\n代码 = \"宽字符\"  # 注释\n```\n";

#[test]
fn cjk_and_emoji_wrap_within_odd_widths() {
    let mut out = String::new();
    for width in [7u16, 9, 13] {
        let lines = markdown_lines(WIDE, width, &NoHighlights);
        assert_fits(&lines, width);
        out.push_str(&format!("width {width}:\n{}\n\n", text(&lines)));
    }
    insta::assert_snapshot!(out);
}

#[test]
fn tiny_widths_do_not_panic_and_fit() {
    for width in [0u16, 1, 2, 3] {
        for doc in [DOC, CODE, WIDE, "> > > - 1. deep\n"] {
            let lines = markdown_lines(doc, width, &NoHighlights);
            assert_fits(&lines, width);
            if width == 0 {
                assert!(lines.is_empty());
            } else {
                assert!(!lines.is_empty());
            }
        }
    }
    assert_eq!(text(&markdown_lines("日本", 1, &NoHighlights)), "…⏎\n…⏎");
}

#[test]
fn escape_sequences_in_text_and_code_are_defused() {
    let hostile = "Clear \u{1b}[2J the screen \u{1b}]0;title\u{7}\n\n```sh\necho \u{1b}[31mred\u{9b}\n```\n";
    let lines = markdown_lines(hostile, 80, &NoHighlights);
    let all = text(&lines);
    assert!(!all.chars().any(|c| c.is_control() && c != '\n'), "{all:?}");
    assert!(all.contains("^[[2J"));
    assert!(all.contains("\\u{9b}"));
}

#[test]
fn an_unclosed_fence_while_streaming_renders_as_code() {
    let partial = "Here:\n\n```python\ndef f():\n    return 1";
    let r = render_markdown(partial, 30, &HashMap::new());
    assert_eq!(
        text(&r.lines),
        "Here:⏎\n⏎\n```python⏎\ndef f():⏎\n    return 1⏎\n```⏎"
    );
}

#[test]
fn plain_text_keeps_its_lines_and_markup_characters() {
    let style = ratatui::style::Style::default().fg(Color::Green);
    let lines = plain_lines("# not a heading\n\n  two  spaces kept\tand a tab", 12, style);
    assert_fits(&lines, 12);
    assert_eq!(
        text(&lines),
        "# not a⏎\nheading⏎\n⏎\n  two⏎\nspaces kept⏎\nand a tab⏎"
    );
    assert!(
        lines
            .iter()
            .flat_map(|l| l.spans.iter())
            .all(|s| s.style == style)
    );
    assert!(plain_lines("x", 0, style).is_empty());
}

#[test]
fn html_blocks_show_as_text_line_by_line() {
    let lines = markdown_lines("<div>\nhtml block\n</div>\n\nafter", 30, &NoHighlights);
    assert_eq!(text(&lines), "<div>⏎\nhtml block⏎\n</div>⏎\n⏎\nafter⏎");
}
