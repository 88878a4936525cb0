//! Text truncation for the reduce and limit stages: cutting the middle of
//! fenced code blocks and `<details>` blocks, and cutting the middle of a
//! long text with a marker that says how much was cut. Pure string work;
//! counting the result is the caller's business.

use regex::Regex;
use std::sync::LazyLock;

/// Lines kept at each end of a block whose middle is cut.
pub(crate) const BLOCK_KEEP_LINES: usize = 10;

/// What replaces the middle of a block (DESIGN §6).
pub(crate) const BLOCK_MARKER: &str = "[...]";

/// A tool result longer than this many bytes is long: its middle may be cut.
pub(crate) const TOOL_RESULT_LONG_BYTES: usize = 8_000;

/// Bytes kept from the start of a long tool result.
pub(crate) const TOOL_RESULT_HEAD_BYTES: usize = 4_000;

/// Bytes kept from the end of a long tool result.
pub(crate) const TOOL_RESULT_TAIL_BYTES: usize = 2_000;

/// The marker between head and tail; `{cut_lines}`, `{cut_chars}`,
/// `{total_chars}` and `{what}` are filled in.
const MIDDLE_CUT: &str = include_str!("../../assets/prompts/middle_cut.md");

/// The literals that can open a block, searched for in one pass.
static BLOCK_OPENERS: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"```|~~~|<details").ok());

/// Whether `text` may hold a block [`cut_blocks`] could shorten (a cheap
/// scan; `cut_blocks` decides). One multi-literal pass over the text: three
/// separate `contains` calls cost most of a warm preparation.
pub(crate) fn may_have_blocks(text: &str) -> bool {
    match BLOCK_OPENERS.as_ref() {
        Some(re) => re.is_match(text),
        None => text.contains("```") || text.contains("~~~") || text.contains("<details"),
    }
}

/// How a block opens.
#[derive(Clone, Copy)]
enum Opener {
    /// A code fence of `len` times `ch` (backtick or tilde).
    Fence { ch: char, len: usize },
    /// A `<details>` element; the depth after its opening line.
    Details { depth: i64 },
}

/// The fence run at the start of `trimmed`, if it is at least three long.
fn fence_run(trimmed: &str) -> Option<(char, usize)> {
    let ch = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = trimmed.chars().take_while(|c| *c == ch).count();
    (len >= 3).then_some((ch, len))
}

fn details_balance(line: &str) -> i64 {
    line.matches("<details").count() as i64 - line.matches("</details>").count() as i64
}

fn opener(line: &str) -> Option<Opener> {
    let trimmed = line.trim_start();
    if let Some((ch, len)) = fence_run(trimmed) {
        return Some(Opener::Fence { ch, len });
    }
    if trimmed.starts_with("<details") {
        let depth = details_balance(line);
        return (depth > 0).then_some(Opener::Details { depth });
    }
    None
}

/// Index of the line closing the block opened by `open`, searching from
/// `from`; `lines.len()` when the block is never closed.
fn closer(lines: &[&str], from: usize, open: Opener) -> usize {
    match open {
        Opener::Fence { ch, len } => (from..lines.len())
            .find(|&i| {
                let t = lines[i].trim();
                fence_run(t).is_some_and(|(c, n)| c == ch && n >= len && t.chars().all(|x| x == ch))
            })
            .unwrap_or(lines.len()),
        Opener::Details { mut depth } => {
            for (i, line) in lines.iter().enumerate().skip(from) {
                depth += details_balance(line);
                if depth <= 0 {
                    return i;
                }
            }
            lines.len()
        }
    }
}

/// `text` with the middle of every fenced code block and `<details>` block
/// longer than `2 × BLOCK_KEEP_LINES` lines replaced by a `[...]` line; the
/// opening and closing lines and the first and last 10 lines inside are
/// kept byte for byte. `None` when no block is that long. An unclosed block
/// runs to the end of the text.
pub(crate) fn cut_blocks(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        out.push_str(line);
        let Some(open) = opener(line) else {
            i += 1;
            continue;
        };
        let end = closer(&lines, i + 1, open);
        let inner = &lines[i + 1..end];
        if inner.len() > 2 * BLOCK_KEEP_LINES {
            inner[..BLOCK_KEEP_LINES].iter().for_each(|l| out.push_str(l));
            out.push_str(BLOCK_MARKER);
            out.push('\n');
            inner[inner.len() - BLOCK_KEEP_LINES..]
                .iter()
                .for_each(|l| out.push_str(l));
            changed = true;
        } else {
            inner.iter().for_each(|l| out.push_str(l));
        }
        if let Some(close) = lines.get(end) {
            out.push_str(close);
        }
        i = end + 1;
    }
    changed.then_some(out)
}

/// The largest char boundary of `text` at or before `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest char boundary of `text` at or after `at`.
fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// `text` keeping about `head` bytes from its start and `tail` bytes from
/// its end, with a marker line between them saying how many lines and
/// characters of how many were cut from this `what` ("tool result",
/// "message"). Cuts snap to line ends when one is near (within half the
/// kept size) and never split a character. `None` when nothing would be
/// cut.
pub(crate) fn cut_middle(text: &str, head: usize, tail: usize, what: &str) -> Option<String> {
    if text.len() <= head.saturating_add(tail) {
        return None;
    }
    let mut h = floor_boundary(text, head);
    if let Some(nl) = text[..h].rfind('\n').filter(|&p| p + 1 >= h / 2) {
        h = nl + 1;
    }
    let mut t = ceil_boundary(text, text.len() - tail);
    if let Some(nl) = text[t..].find('\n').filter(|&p| p <= tail / 2) {
        t += nl + 1;
    }
    if t <= h {
        return None;
    }
    let cut = &text[h..t];
    let lines = cut.matches('\n').count();
    // A cut inside one line says characters only, not "0 lines".
    let template = if lines == 0 {
        MIDDLE_CUT
            .trim_end()
            .replace("{cut_lines} lines (", "")
            .replace(" characters)", " characters")
    } else {
        MIDDLE_CUT.trim_end().to_owned()
    };
    let marker = template
        .replace("{cut_lines}", &lines.to_string())
        .replace("{cut_chars}", &cut.chars().count().to_string())
        .replace("{total_chars}", &text.chars().count().to_string())
        .replace("{what}", what);
    let mut out = String::with_capacity(h + marker.len() + (text.len() - t) + 2);
    out.push_str(&text[..h]);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&marker);
    out.push('\n');
    out.push_str(&text[t..]);
    Some(out)
}

/// The head-and-tail cut of a long tool result, `None` when it is not long.
pub(crate) fn cut_tool_result(text: &str) -> Option<String> {
    if text.len() <= TOOL_RESULT_LONG_BYTES {
        return None;
    }
    cut_middle(
        text,
        TOOL_RESULT_HEAD_BYTES,
        TOOL_RESULT_TAIL_BYTES,
        "tool result",
    )
}

/// Shrinks `text`, whose message costs `got` tokens, by cutting its middle
/// (two thirds of what is kept from the head, one third from the tail)
/// until `tokens((head, tail), copy) <= room`, where `tokens` counts the
/// whole message with the copy cut to keep `head` and `tail` bytes. Tries
/// proportional sizes a few times, then the marker alone. `None` when even
/// that does not fit. The copy and its count are returned.
pub(crate) fn shrink_to_fit(
    text: &str,
    got: u32,
    what: &str,
    room: u32,
    tokens: &mut dyn FnMut((usize, usize), &str) -> u32,
) -> Option<(String, u32)> {
    if got <= room {
        return Some((text.to_owned(), got));
    }
    let mut got = got;
    let mut keep = text.len();
    for _ in 0..8 {
        let ratio = f64::from(room) / f64::from(got.max(1)) * 0.9;
        keep = ((keep as f64 * ratio) as usize).min(keep.saturating_sub(1));
        if keep == 0 {
            break;
        }
        let (head, tail) = (keep * 2 / 3, keep / 3);
        let Some(copy) = cut_middle(text, head, tail, what) else {
            break;
        };
        got = tokens((head, tail), &copy);
        if got <= room {
            return Some((copy, got));
        }
    }
    let copy = cut_middle(text, 0, 0, what)?;
    let n = tokens((0, 0), &copy);
    (n <= room).then_some((copy, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(prefix: &str, n: usize) -> String {
        (0..n).map(|i| format!("{prefix}{i}\n")).collect()
    }

    #[test]
    fn long_code_fence_keeps_ten_lines_at_each_end() {
        let text = format!("before\n```rust\n{}```\nafter", numbered("line ", 50));
        let cut = cut_blocks(&text).unwrap();
        let want = format!(
            "before\n```rust\n{}[...]\n{}```\nafter",
            numbered("line ", 10),
            (40..50).map(|i| format!("line {i}\n")).collect::<String>()
        );
        assert_eq!(cut, want);
    }

    #[test]
    fn short_blocks_and_plain_text_are_left_alone() {
        let text = format!("```\n{}```\n", numbered("x", 20));
        assert_eq!(cut_blocks(&text), None);
        assert_eq!(cut_blocks(&numbered("plain ", 500)), None);
    }

    #[test]
    fn details_block_is_cut_and_nested_details_close_it_only_at_depth_zero() {
        let inner = format!("<details>\n{}</details>\n", numbered("n", 3));
        let text = format!(
            "<details>\n<summary>log</summary>\n{inner}{}</details>\ntail\n",
            numbered("d", 40)
        );
        let cut = cut_blocks(&text).unwrap();
        assert!(cut.starts_with("<details>\n<summary>log</summary>\n<details>\n"));
        assert!(cut.contains("[...]\n"));
        assert!(cut.ends_with("d39\n</details>\ntail\n"));
        assert_eq!(cut.lines().count(), 1 + 10 + 1 + 10 + 2);
    }

    #[test]
    fn fence_inside_a_fence_of_another_length_does_not_close_it() {
        let text = format!("````\n```\n{}```\n````\n", numbered("c", 30));
        let cut = cut_blocks(&text).unwrap();
        assert!(cut.starts_with("````\n```\n"));
        assert!(cut.ends_with("c29\n```\n````\n"));
    }

    #[test]
    fn unclosed_fence_runs_to_the_end() {
        let text = format!("```\n{}", numbered("u", 25));
        let cut = cut_blocks(&text).unwrap();
        assert!(cut.ends_with("[...]\nu15\nu16\nu17\nu18\nu19\nu20\nu21\nu22\nu23\nu24\n"));
    }

    #[test]
    fn middle_cut_says_what_was_cut_and_keeps_whole_characters() {
        let text = "é".repeat(10_000);
        let cut = cut_middle(&text, 1_001, 999, "tool result").unwrap();
        assert!(cut.starts_with(&"é".repeat(500)));
        // One line: characters only, never "0 lines".
        assert!(
            cut.contains("[... strata cut 9001 of 10000 characters from the middle of this tool result"),
            "{cut}"
        );
        assert!(!cut.contains("0 lines"), "{cut}");
        assert!(cut.len() < 2_300);
    }

    #[test]
    fn middle_cut_snaps_to_line_ends() {
        let text = numbered("row ", 2_000);
        let cut = cut_middle(&text, 100, 100, "tool result").unwrap();
        let first_marker = cut
            .lines()
            .position(|l| l.starts_with("[... strata cut"))
            .unwrap();
        assert!(cut.lines().take(first_marker).all(|l| l.starts_with("row ")));
        assert!(cut.ends_with("row 1999\n"));
        // Head: rows 0-14 (95 bytes); tail: rows 1989-1999 (99 bytes).
        assert!(cut.contains("strata cut 1974 lines"), "{cut}");
    }

    #[test]
    fn tool_results_are_long_only_above_the_limit() {
        assert_eq!(cut_tool_result(&"a".repeat(TOOL_RESULT_LONG_BYTES)), None);
        let long = "a".repeat(TOOL_RESULT_LONG_BYTES + 1);
        assert!(
            cut_tool_result(&long).unwrap().len() < TOOL_RESULT_HEAD_BYTES + TOOL_RESULT_TAIL_BYTES + 200
        );
    }

    #[test]
    fn shrink_to_fit_reaches_the_room_or_gives_up() {
        let mut by_len = |_: (usize, usize), s: &str| s.len() as u32;
        let text = "word ".repeat(10_000);
        let got = text.len() as u32;
        let (copy, n) = shrink_to_fit(&text, got, "message", 1_000, &mut by_len).unwrap();
        assert!(n <= 1_000 && n == copy.len() as u32);
        assert!(copy.starts_with("word word"));
        assert_eq!(shrink_to_fit(&text, got, "message", 20, &mut by_len), None);
        let (same, n) = shrink_to_fit("short", 5, "message", 5, &mut by_len).unwrap();
        assert_eq!((same.as_str(), n), ("short", 5));
    }
}
