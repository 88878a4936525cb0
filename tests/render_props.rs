//! Property: rendering any Markdown-like text at any width never panics and
//! never produces a line wider than the width.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use std::collections::HashMap;
use strata::render::{Highlight, HighlightKey, HighlightedCode, render_markdown};

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
}
