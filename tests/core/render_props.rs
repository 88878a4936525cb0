//! Properties: rendering any Markdown-like text at any width never panics
//! and never produces a line wider than the width; laying it out as it
//! streams in ([`MarkdownStream`], any chunks) gives the same lines as
//! laying out the whole text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use std::collections::HashMap;
use strata::render::{
    Highlight, HighlightKey, HighlightedCode, MarkdownStream, NoHighlights, render_markdown,
};

/// Pieces that exercise the block and inline rules, wide characters and
/// controls.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("# ".to_owned()),
        Just("### ".to_owned()),
        Just("- ".to_owned()),
        Just("1. ".to_owned()),
        Just("> ".to_owned()),
        Just("   ".to_owned()),
        Just("\n".to_owned()),
        Just("\n\n".to_owned()),
        Just("```rust\n".to_owned()),
        Just("```\n".to_owned()),
        Just("**".to_owned()),
        Just("*".to_owned()),
        Just("`".to_owned()),
        Just("~~".to_owned()),
        Just("[link](http://x.y/z)".to_owned()),
        Just("| a | b |\n|---|--:|\n| 中文 | 👨‍👩‍👧 |\n".to_owned()),
        Just("- [ ] ".to_owned()),
        Just("---\n".to_owned()),
        Just("<b>html</b>".to_owned()),
        Just("\t".to_owned()),
        Just("\u{1b}[31m".to_owned()),
        Just("e\u{301}".to_owned()),
        Just("日本語".to_owned()),
        Just("🇫🇷👍🏽".to_owned()),
        "[a-z]{1,30}",
        "[a-zA-Z0-9 ]{0,12}",
        any::<char>().prop_map(String::from),
    ]
}

fn doc() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..40).prop_map(|v| v.concat())
}

/// Pieces that start, continue and end blocks across lines: what decides
/// where a streaming text may be cut.
fn block_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\n".to_owned()),
        Just("\n\n".to_owned()),
        Just("# ".to_owned()),
        Just("- ".to_owned()),
        Just("  - ".to_owned()),
        Just("2. ".to_owned()),
        Just("> ".to_owned()),
        Just("  ".to_owned()),
        Just("    ".to_owned()),
        Just("```\n".to_owned()),
        Just("  ```py\n".to_owned()),
        Just("~~~~\n".to_owned()),
        Just("===\n".to_owned()),
        Just("---\n".to_owned()),
        Just("| a | b |\n".to_owned()),
        Just("|---|---|\n".to_owned()),
        Just("|--".to_owned()),
        Just("<!--\n".to_owned()),
        Just("-->\n".to_owned()),
        Just("<div>\n".to_owned()),
        Just("<pre>\n".to_owned()),
        Just("</pre>\n".to_owned()),
        Just("[r]: http://x.y\n".to_owned()),
        Just("[link][r]".to_owned()),
        Just("*".to_owned()),
        Just("`".to_owned()),
        Just("日本語 🙂".to_owned()),
        "[a-z]{1,12}( [a-z]{1,8}){0,6}",
    ]
}

fn block_doc() -> impl Strategy<Value = String> {
    prop::collection::vec(block_piece(), 0..60).prop_map(|v| v.concat())
}

/// `text` fed to one stream in chunks of the given byte sizes (cycled, at
/// character boundaries); the lines it ends with.
fn streamed(text: &str, chunks: &[usize], width: u16) -> Vec<ratatui::text::Line<'static>> {
    let mut s = MarkdownStream::new();
    let (mut settled, mut tail) = (Vec::new(), Vec::new());
    let mut end = 0;
    for size in chunks.iter().cycle() {
        end = (end + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let step = s.step(&text[..end], width);
        if step.reset {
            settled.clear();
        }
        settled.extend(step.settled);
        tail = step.tail;
        if end == text.len() {
            break;
        }
    }
    settled.extend(tail);
    settled
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn rendering_never_panics_and_every_line_fits(text in doc(), width in 0u16..=120) {
        let r = render_markdown(&text, width, &HashMap::<HighlightKey, Highlight>::new());
        for line in &r.lines {
            prop_assert!(line.width() <= usize::from(width), "{} > {width}: {line:?}", line.width());
        }
    }

    #[test]
    fn highlighted_code_fits_too(code in "[a-z 中👍\t]{0,200}", width in 1u16..=40) {
        let text = format!("```rust\n{code}\n```\n");
        let key = HighlightKey::of(&format!("{code}\n"), "rust");
        let styled = HighlightedCode {
            lines: vec![vec![(ratatui::style::Style::default(), code.replace('\t', "    "))]],
        };
        let mut map = HashMap::new();
        map.insert(key, Highlight::Styled(std::sync::Arc::new(styled)));
        let r = render_markdown(&text, width, &map);
        prop_assert!(r.pending.is_empty());
        for line in &r.lines {
            prop_assert!(line.width() <= usize::from(width));
        }
    }

    #[test]
    fn streaming_in_any_chunks_lays_out_like_the_whole_text(
        text in block_doc(),
        chunks in prop::collection::vec(1usize..40, 1..8),
        width in 1u16..=60,
    ) {
        let want = render_markdown(&text, width, &NoHighlights).lines;
        prop_assert_eq!(streamed(&text, &chunks, width), want, "{:?}", text);
    }

    #[test]
    fn streaming_any_markdown_lays_out_like_the_whole_text(
        text in doc(),
        chunks in prop::collection::vec(1usize..20, 1..6),
        width in 1u16..=80,
    ) {
        let want = render_markdown(&text, width, &NoHighlights).lines;
        prop_assert_eq!(streamed(&text, &chunks, width), want, "{:?}", text);
    }
}
