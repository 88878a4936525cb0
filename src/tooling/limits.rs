//! Output limits, spill decisions and previews: hermes' three defences
//! (`tool_output_limits`, `tool_result_storage`; DESIGN §15).
//!
//! (1) Every result is [`cut`] to [`Limits`] (head and tail with a marker);
//! (2) a cut result still over [`Budgets::per_result_chars`] becomes a
//! [`preview`]; (3) while a round's results exceed
//! [`Budgets::per_round_chars`], the largest become previews first.
//! Whenever the text sent is not the whole output, the whole output is
//! spilled to a file the marker names, so nothing a tool printed is lost.
//! `read_file` results are exempt from all three (they page already; a
//! spill → read → spill loop cannot happen). [`shape_round`] is the one
//! entry point, called once per round. All counts are characters (Unicode
//! scalar values); no char is ever split.

mod cut;

pub use cut::{Cut, cut, line_marker};

use super::Output;
use crate::text::group_digits;

/// `text` with every line longer than `max_line_chars` characters split
/// into lines of at most that many (a newline inserted, nothing removed):
/// how a spill file is written, so `read_file`, which cuts long lines,
/// still reaches every character.
#[must_use]
pub fn fold_lines(text: &str, max_line_chars: usize) -> String {
    let max = max_line_chars.max(1);
    let mut out = String::with_capacity(text.len() + text.len() / max);
    for line in text.split_inclusive('\n') {
        let mut count = 0;
        for c in line.chars() {
            if c == '\n' {
                count = 0;
            } else if count == max {
                out.push('\n');
                count = 0;
            }
            if c != '\n' {
                count += 1;
            }
            out.push(c);
        }
    }
    out
}

/// Whether a tool's output is binary rather than text: more than one
/// character in ten a NUL or a replacement character (bytes that were not
/// UTF-8), looked at in its first 8,192 characters. Escape sequences and
/// other controls never make output binary: they are text a terminal acts
/// on, shown to the model as `^[` (see [`crate::text::for_model`]).
#[must_use]
pub fn looks_binary(text: &str) -> bool {
    let (mut seen, mut odd) = (0usize, 0usize);
    for c in text.chars().take(8_192) {
        seen += 1;
        if matches!(c, '\u{FFFD}' | '\0') {
            odd += 1;
        }
    }
    seen > 0 && odd * 10 > seen
}

/// Whether raw bytes are binary rather than text: more than one byte in
/// ten a NUL or part of an invalid UTF-8 sequence, in the first 8 KiB (a
/// character cut at that edge is not counted). Escape sequences never make
/// bytes binary.
#[must_use]
pub fn bytes_look_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(8_192)];
    let mut odd = memchr::memchr_iter(0, head).count();
    let mut chunks = head.utf8_chunks().peekable();
    while let Some(chunk) = chunks.next() {
        // The last invalid run may be a character cut at the 8 KiB edge.
        if chunks.peek().is_some() || head.len() == bytes.len() {
            odd += chunk.invalid().len();
        }
    }
    !head.is_empty() && odd * 10 > head.len()
}

/// The file-name-safe form of a tool call id.
#[must_use]
pub fn spill_name(tool_call_id: &str) -> String {
    tool_call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The output limits of one result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Characters of one result (50,000).
    pub max_chars: usize,
    /// Lines of one result (2,000).
    pub max_lines: usize,
    /// Characters of one line (2,000).
    pub max_line_chars: usize,
}

impl Limits {
    /// hermes' defaults: 50,000 characters, 2,000 lines, 2,000 characters a line.
    pub const DEFAULT: Self = Self {
        max_chars: 50_000,
        max_lines: 2_000,
        max_line_chars: 2_000,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The character budgets of the second and third defence for one window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budgets {
    /// One result over this becomes a preview: 15 % of the window in
    /// characters (window × 4 × 0.15), clamped to 8,000..=100,000.
    pub per_result_chars: usize,
    /// One round's results together: 30 % (window × 4 × 0.30), clamped to
    /// 16,000..=200,000.
    pub per_round_chars: usize,
}

impl Budgets {
    /// The budgets of a window of `window_tokens` tokens (hermes
    /// `budget_for_context_window`: large windows keep the old fixed
    /// 100,000/200,000, small ones are held to their share).
    #[must_use]
    pub fn for_window(window_tokens: u64) -> Self {
        // window × 4 chars a token × 15 % = window × 3/5; × 30 % = window × 6/5.
        let share = |num: u64, den: u64, lo: u64, hi: u64| {
            let chars = (window_tokens.saturating_mul(num) / den).clamp(lo, hi);
            usize::try_from(chars).unwrap_or(usize::MAX)
        };
        Self {
            per_result_chars: share(3, 5, 8_000, 100_000),
            per_round_chars: share(6, 5, 16_000, 200_000),
        }
    }
}

/// Characters of a [`preview`] before its marker.
pub const PREVIEW_CHARS: usize = 1_500;

/// How far before [`PREVIEW_CHARS`] a line end may end the preview instead.
const PREVIEW_SLACK: usize = 300;

/// The first [`PREVIEW_CHARS`] characters of `text` (ending at a line end
/// when one is within 300 characters of the cut), then a marker line giving
/// the full size (`total_chars`) and `spill_path`, telling the model to
/// page the whole output with `read_file` (path, offset, limit).
#[must_use]
pub fn preview(text: &str, total_chars: u64, spill_path: &str) -> String {
    let end = text
        .char_indices()
        .nth(PREVIEW_CHARS)
        .map_or(text.len(), |(at, _)| at);
    let mut head = &text[..end];
    if end < text.len()
        && let Some(nl) = head.rfind('\n')
        && head[nl + 1..].chars().count() <= PREVIEW_SLACK
    {
        head = &head[..=nl];
    }
    let mut out = String::with_capacity(head.len() + 200 + spill_path.len());
    out.push_str(head);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "[… a preview: the result has {} characters. The whole output is in {spill_path}: page it with \
         read_file (path, offset, limit) and read only the parts you need.]",
        group_digits(total_chars),
    ));
    out
}

/// One result of a round, in call order.
#[derive(Clone, Debug)]
pub struct RoundItem<'a> {
    /// What the handler captured.
    pub output: &'a Output,
    /// A `read_file` result: it pages itself and is exempt from all three
    /// defences (sent whole).
    pub paged: bool,
    /// `DATA/spill/<session>/<tool_call_id>.txt`, where the whole output
    /// goes when the text sent is not all of it (the handler's
    /// `output.spilled_to` wins when set).
    pub spill_path: String,
}

/// Whether the whole output must be, or was, written to the spill file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spill {
    /// Nothing to write: the text sent is the whole output.
    None,
    /// Write the whole output (`output.head`, whole in memory) to the item's
    /// `spill_path`, mode 0600.
    Write,
    /// The handler wrote it already, to `output.spilled_to`.
    Written,
}

/// One result as it is sent and stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shaped {
    /// The text of the `tool` message.
    pub text: String,
    /// Whether the text is not the whole output (cut, previewed or both):
    /// the `truncated` badge.
    pub truncated: bool,
    /// Whether the text is a [`preview`] (second or third defence).
    pub previewed: bool,
    /// What to do about the spill file.
    pub spill: Spill,
}

/// The three defences over one round's results, in order, for a window of
/// `window_tokens`: (1) each non-paged result is [`cut`] to `limits`; (2)
/// one over [`Budgets::per_result_chars`] becomes a [`preview`]; (3) while
/// the round's characters exceed [`Budgets::per_round_chars`], the largest
/// non-paged result not yet previewed becomes a preview (ties: the earlier
/// call), as long as that makes it shorter. Paged results count toward the
/// round but are sent whole. Returns one [`Shaped`] per item, in order.
#[must_use]
pub fn shape_round(items: &[RoundItem<'_>], window_tokens: u64, limits: &Limits) -> Vec<Shaped> {
    let budgets = Budgets::for_window(window_tokens);
    let mut shaped = Vec::with_capacity(items.len());
    // Per non-paged item: the cut's total, for a later preview.
    let mut totals: Vec<Option<u64>> = Vec::with_capacity(items.len());
    for item in items {
        if item.paged {
            let mut text = item.output.head.clone();
            text.push_str(&item.output.tail);
            shaped.push(Shaped {
                text,
                truncated: false,
                previewed: false,
                spill: written_or(item.output, Spill::None),
            });
            totals.push(None);
            continue;
        }
        let path = spill_path_of(item);
        let c = cut(item.output, limits, path);
        let mut s = Shaped {
            text: c.text,
            truncated: c.truncated,
            previewed: false,
            spill: Spill::None,
        };
        if s.text.chars().count() > budgets.per_result_chars {
            s.text = preview(&s.text, c.total_chars, path);
            s.truncated = true;
            s.previewed = true;
        }
        shaped.push(s);
        totals.push(Some(c.total_chars));
    }
    let mut sizes: Vec<usize> = shaped.iter().map(|s| s.text.chars().count()).collect();
    let mut total: usize = sizes.iter().sum();
    while total > budgets.per_round_chars {
        let largest = (0..shaped.len())
            .filter(|&i| totals[i].is_some() && !shaped[i].previewed)
            .fold(None, |best: Option<usize>, i| match best {
                Some(b) if sizes[b] >= sizes[i] => Some(b),
                _ => Some(i),
            });
        let Some(i) = largest else { break };
        let text = preview(&shaped[i].text, totals[i].unwrap_or(0), spill_path_of(&items[i]));
        let size = text.chars().count();
        if size >= sizes[i] {
            break;
        }
        total = total - sizes[i] + size;
        sizes[i] = size;
        shaped[i].text = text;
        shaped[i].truncated = true;
        shaped[i].previewed = true;
    }
    for (s, item) in shaped.iter_mut().zip(items) {
        if !item.paged {
            let needed = if s.truncated { Spill::Write } else { Spill::None };
            s.spill = written_or(item.output, needed);
        }
    }
    shaped
}

/// Where the markers say the whole output is.
fn spill_path_of<'a>(item: &'a RoundItem<'_>) -> &'a str {
    item.output.spilled_to.as_deref().unwrap_or(&item.spill_path)
}

/// [`Spill::Written`] when the handler spilled the output, else `otherwise`.
fn written_or(output: &Output, otherwise: Spill) -> Spill {
    if output.spilled_to.is_some() {
        Spill::Written
    } else {
        otherwise
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_bytes_are_told_by_nul_bytes_and_invalid_utf8_only() {
        assert!(bytes_look_binary(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0"));
        assert!(bytes_look_binary(&[0xff, 0xfe, 0x80, 0x81, b'a', b'b', b'c']));
        assert!(!bytes_look_binary("naïve 日本語\n".as_bytes()));
        assert!(!bytes_look_binary(
            b"\x1b]0;owned\x07\x1b[2J\x1b[31mred\x1b[0m\r\x08"
        ));
        assert!(!bytes_look_binary(b""));
        // A character cut at the 8 KiB edge is not held against the text.
        let mut text = "a".repeat(8_191).into_bytes();
        text.extend_from_slice("日本".as_bytes());
        assert!(!bytes_look_binary(&text));
    }

    #[test]
    fn binary_output_is_told_from_text() {
        assert!(looks_binary("PK\u{3}\u{4}\0\0rest"));
        assert!(!looks_binary("héllo \0 world, one NUL in text"));
        assert!(looks_binary(&"\u{FFFD}\u{1}ab".repeat(100)));
        assert!(!looks_binary("plain text\twith tabs\r\nand lines\n"));
        assert!(!looks_binary("naïve 日本語 ünïcødé"));
        assert!(!looks_binary(""));
        // A short, control-heavy output is text (52 bytes, most of them escapes).
        assert!(!looks_binary(
            "\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[H\u{1b}[31m\u{1b}[1m\u{1b}[0mhi\u{1b}[K\u{8}\u{8}"
        ));
    }

    #[test]
    fn folding_splits_long_lines_and_loses_nothing() {
        let text = format!("short\n{}\nend", "é".repeat(12));
        let folded = fold_lines(&text, 5);
        assert_eq!(folded, "short\nééééé\nééééé\néé\nend");
        assert_eq!(folded.replace('\n', ""), text.replace('\n', ""));
        assert_eq!(fold_lines("ab\ncd\n", 2), "ab\ncd\n", "lines at the limit stay");
    }

    /// `chars` characters in lines of 50 (`"NNNNNN xxx…\n"`).
    fn result(chars: usize) -> String {
        assert_eq!(chars % 50, 0);
        (0..chars / 50)
            .map(|i| format!("{i:>6} {}\n", "x".repeat(42)))
            .collect()
    }

    fn item<'a>(output: &'a Output, paged: bool, id: &str) -> RoundItem<'a> {
        RoundItem {
            output,
            paged,
            spill_path: format!("spill/s1/{}.txt", spill_name(id)),
        }
    }

    fn len(s: &Shaped) -> usize {
        s.text.chars().count()
    }

    #[test]
    fn spill_names_are_file_safe() {
        assert_eq!(spill_name("call_9f-A"), "call_9f-A");
        assert_eq!(spill_name("../x/y:z é"), "___x_y_z__");
    }

    #[test]
    fn defaults_are_hermes_limits() {
        assert_eq!(Limits::default(), Limits::DEFAULT);
        assert_eq!(
            (
                Limits::DEFAULT.max_chars,
                Limits::DEFAULT.max_lines,
                Limits::DEFAULT.max_line_chars
            ),
            (50_000, 2_000, 2_000)
        );
    }

    #[test]
    fn budgets_scale_with_the_window_within_their_clamps() {
        let b = |w| {
            let b = Budgets::for_window(w);
            (b.per_result_chars, b.per_round_chars)
        };
        assert_eq!(b(8_000), (8_000, 16_000));
        assert_eq!(b(64_000), (38_400, 76_800));
        assert_eq!(b(128_000), (76_800, 153_600));
        assert_eq!(b(200_000), (100_000, 200_000));
        assert_eq!(b(1_000_000), (100_000, 200_000));
        assert_eq!(b(0), (8_000, 16_000));
        assert_eq!(b(u64::MAX), (100_000, 200_000));
    }

    #[test]
    fn a_preview_is_1500_chars_ending_at_a_line_and_says_how_to_page() {
        let text = result(10_000);
        let p = preview(&text, 10_000, "spill/s1/c.txt");
        let (head, marker) = p.rsplit_once('\n').unwrap();
        assert!(text.starts_with(head));
        // 30 lines of 50 = 1,500 chars end exactly at a line end.
        assert_eq!(head.chars().count() + 1, 1_500);
        assert_eq!(
            marker,
            "[… a preview: the result has 10,000 characters. The whole output is in spill/s1/c.txt: page it \
             with read_file (path, offset, limit) and read only the parts you need.]"
        );
        let one_line = "é".repeat(5_000);
        let p = preview(&one_line, 5_000, "p");
        assert!(p.starts_with(&"é".repeat(PREVIEW_CHARS)));
        assert_eq!(p.lines().next().unwrap().chars().count(), PREVIEW_CHARS);
        // A line end far from the cut is not used.
        let lopsided = format!("ab\n{}", "z".repeat(3_000));
        assert_eq!(preview(&lopsided, 3_003, "p").lines().next().unwrap(), "ab");
        let lopsided = format!("{}\n{}", "a".repeat(100), "z".repeat(3_000));
        assert_eq!(
            preview(&lopsided, 3_101, "p").lines().nth(1).unwrap().len(),
            1_399
        );
    }

    #[test]
    fn a_300k_result_is_cut_at_128k_and_previewed_at_8k() {
        let out = Output::whole(result(300_000));
        let at_128k = shape_round(&[item(&out, false, "c1")], 128_000, &Limits::DEFAULT);
        let s = &at_128k[0];
        assert!((49_000..=50_300).contains(&len(s)), "{}", len(s));
        assert!(s.truncated && !s.previewed);
        assert_eq!(s.spill, Spill::Write);
        assert!(s.text.contains("spill/s1/c1.txt: read it with read_file"));

        let at_8k = shape_round(&[item(&out, false, "c1")], 8_000, &Limits::DEFAULT);
        let s = &at_8k[0];
        assert!(s.truncated && s.previewed);
        assert_eq!(s.spill, Spill::Write);
        let (head, marker) = s.text.rsplit_once('\n').unwrap();
        assert_eq!(head.chars().count() + 1, PREVIEW_CHARS);
        assert!(out.head.starts_with(head));
        assert!(marker.contains("300,000 characters") && marker.contains("spill/s1/c1.txt"));
    }

    #[test]
    fn three_80k_results_at_64k_fit_the_round_as_previews() {
        let outs: Vec<Output> = (0..3).map(|_| Output::whole(result(80_000))).collect();
        let items: Vec<RoundItem<'_>> = outs
            .iter()
            .enumerate()
            .map(|(i, o)| item(o, false, &format!("c{i}")))
            .collect();
        let shaped = shape_round(&items, 64_000, &Limits::DEFAULT);
        let total: usize = shaped.iter().map(len).sum();
        assert!(total <= Budgets::for_window(64_000).per_round_chars);
        for (i, s) in shaped.iter().enumerate() {
            assert!(s.previewed && s.truncated, "{i}");
            assert_eq!(s.spill, Spill::Write);
            assert!(s.text.contains(&format!("spill/s1/c{i}.txt")));
        }
    }

    #[test]
    fn over_the_round_budget_the_largest_becomes_a_preview_first() {
        // Each under 38,400 (one result at 64k), together over 76,800.
        let outs = [30_000, 32_000, 31_000, 1_000].map(|n| Output::whole(result(n)));
        let items: Vec<RoundItem<'_>> = outs
            .iter()
            .enumerate()
            .map(|(i, o)| item(o, false, &format!("c{i}")))
            .collect();
        let shaped = shape_round(&items, 64_000, &Limits::DEFAULT);
        let previewed: Vec<bool> = shaped.iter().map(|s| s.previewed).collect();
        assert_eq!(previewed, [false, true, false, false]);
        assert_eq!(shaped[0].text, outs[0].head);
        assert_eq!(shaped[0].spill, Spill::None);
        assert!(!shaped[0].truncated);
        assert_eq!(shaped[1].spill, Spill::Write);
        assert!(shaped.iter().map(len).sum::<usize>() <= 76_800);
    }

    #[test]
    fn a_paged_result_is_never_touched() {
        let read = Output::whole(result(50_000));
        let big = Output::whole(result(300_000));
        for window in [8_000, 64_000, 128_000] {
            let shaped = shape_round(
                &[item(&read, true, "r"), item(&big, false, "b")],
                window,
                &Limits::DEFAULT,
            );
            assert_eq!(shaped[0].text, read.head, "{window}");
            assert!(!shaped[0].truncated && !shaped[0].previewed);
            assert_eq!(shaped[0].spill, Spill::None);
            assert!(shaped[1].truncated);
        }
        // A paged result alone over every budget stays whole too.
        let shaped = shape_round(&[item(&big, true, "r")], 8_000, &Limits::DEFAULT);
        assert_eq!(shaped[0].text, big.head);
    }

    #[test]
    fn a_handler_spilled_output_is_named_and_not_written_again() {
        let out = Output {
            head: result(60_000),
            tail: result(60_000),
            omitted_bytes: 1_000_000,
            omitted_lines: 20_000,
            spilled_to: Some("spill/s1/streamed.txt".into()),
            ..Output::default()
        };
        let shaped = shape_round(&[item(&out, false, "c1")], 128_000, &Limits::DEFAULT);
        assert_eq!(shaped[0].spill, Spill::Written);
        assert!(shaped[0].truncated);
        assert!(shaped[0].text.contains("spill/s1/streamed.txt"));
        assert!(!shaped[0].text.contains("c1.txt"));
    }

    #[test]
    fn small_results_that_fit_are_sent_whole() {
        let outs = [Output::whole("ok\n"), Output::whole("")];
        let items: Vec<RoundItem<'_>> = outs.iter().map(|o| item(o, false, "c")).collect();
        let shaped = shape_round(&items, 8_000, &Limits::DEFAULT);
        assert_eq!(shaped[0].text, "ok\n");
        assert_eq!(shaped[1].text, "");
        assert!(
            shaped
                .iter()
                .all(|s| !s.truncated && !s.previewed && s.spill == Spill::None)
        );
        // Many small results over the round budget: previewing makes none shorter, so none is.
        let many: Vec<Output> = (0..20).map(|_| Output::whole(result(1_000))).collect();
        let items: Vec<RoundItem<'_>> = many.iter().map(|o| item(o, false, "c")).collect();
        let shaped = shape_round(&items, 8_000, &Limits::DEFAULT);
        assert!(shaped.iter().all(|s| !s.previewed && s.spill == Spill::None));
    }
}
