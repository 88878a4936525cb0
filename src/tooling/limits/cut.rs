//! The first defence: one result cut to its [`Limits`], head and tail kept.
//!
//! Counts are characters (Unicode scalar values); a char is never split.
//! A line longer than `max_line_chars` keeps its first `max_line_chars`
//! characters, then [`line_marker`], then its `\n`; when the result is
//! then still over `max_lines` or `max_chars`, about half of each budget
//! goes to whole lines from the start, the rest to whole lines from the
//! end, and one marker line in the middle says how many lines and
//! characters were cut and that the whole output is in the spill file.
//!
//! An elided [`Output`] (a handler kept only its head and tail) gives the
//! text the whole output would give as long as the kept lines come from
//! the complete lines of `head` and `tail`: the first line of `tail` (its
//! start is unknown) is never used, nor is the last line of `head` unless it
//! is long enough to be cut anyway. Its totals count the left-out part,
//! its bytes as characters (exact for ASCII, an upper bound otherwise).

use super::Limits;
use crate::text::group_digits;
use crate::tooling::Output;

/// One result after [`cut`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The text to send: the output itself when within the limits.
    pub text: String,
    /// Whether anything was cut (a long line, or the middle).
    pub truncated: bool,
    /// Characters of the whole output.
    pub total_chars: u64,
    /// Lines of the whole output (a last line without `\n` counts).
    pub total_lines: u64,
}

/// The text that ends a line cut at `max_line_chars`, the same for every
/// line: ` […line cut at 2,000 characters]`.
#[must_use]
pub fn line_marker(limits: &Limits) -> String {
    format!(
        " […line cut at {} characters]",
        group_digits(limits.max_line_chars as u64)
    )
}

/// One line to choose from: its text without the `\n`, and whether it had one.
#[derive(Clone, Copy)]
struct Line<'a> {
    content: &'a str,
    nl: bool,
}

impl<'a> Line<'a> {
    fn of(raw: &'a str) -> Self {
        match raw.strip_suffix('\n') {
            Some(content) => Self { content, nl: true },
            None => Self {
                content: raw,
                nl: false,
            },
        }
    }
}

/// Measures and renders lines under one set of limits.
struct Shape<'a> {
    limits: &'a Limits,
    marker: String,
    marker_chars: usize,
}

impl Shape<'_> {
    /// `(shown chars, original chars shown, original chars)` of `line`,
    /// its `\n` included.
    fn measure(&self, line: Line<'_>) -> (usize, usize, usize) {
        let chars = line.content.chars().count();
        let nl = usize::from(line.nl);
        let max = self.limits.max_line_chars;
        if chars > max {
            (max + self.marker_chars + nl, max + nl, chars + nl)
        } else {
            (chars + nl, chars + nl, chars + nl)
        }
    }

    fn render(&self, line: Line<'_>, out: &mut String) {
        match line.content.char_indices().nth(self.limits.max_line_chars) {
            Some((at, _)) => {
                out.push_str(&line.content[..at]);
                out.push_str(&self.marker);
            }
            None => out.push_str(line.content),
        }
        if line.nl {
            out.push('\n');
        }
    }
}

/// Lines chosen for one side.
#[derive(Default)]
struct Side {
    text: String,
    lines: usize,
    /// Original characters the text shows.
    shown: usize,
}

/// Whole lines of `lines` while they fit `chars` and `lines_budget`; when
/// not even the first fits, its first `chars` characters.
fn pick_head<'a>(
    shape: &Shape<'_>,
    lines: impl Iterator<Item = Line<'a>>,
    chars: usize,
    budget: usize,
) -> Side {
    let mut side = Side::default();
    let mut used = 0;
    for line in lines {
        let (len, shown, _) = shape.measure(line);
        if used + len > chars || side.lines + 1 > budget {
            if side.lines == 0 && budget > 0 && chars > 0 {
                let mut full = String::new();
                shape.render(line, &mut full);
                side.text = full.chars().take(chars).collect();
                side.shown = chars.min(shown);
                side.lines = 1;
            }
            break;
        }
        shape.render(line, &mut side.text);
        used += len;
        side.lines += 1;
        side.shown += shown;
    }
    side
}

/// Whole lines from the end of `lines` (last first) while they fit; when not
/// even the last fits, the end of its text.
fn pick_tail<'a>(
    shape: &Shape<'_>,
    lines: impl Iterator<Item = Line<'a>>,
    chars: usize,
    budget: usize,
) -> Side {
    let mut picked: Vec<Line<'a>> = Vec::new();
    let mut side = Side::default();
    let mut used = 0;
    for line in lines {
        let (len, shown, _) = shape.measure(line);
        if used + len > chars || side.lines + 1 > budget {
            if side.lines == 0 && budget > 0 && chars > usize::from(line.nl) {
                let keep = (chars - usize::from(line.nl)).min(shape.limits.max_line_chars);
                let count = line.content.chars().count();
                side.text = line.content.chars().skip(count.saturating_sub(keep)).collect();
                if line.nl {
                    side.text.push('\n');
                }
                side.shown = side.text.chars().count();
                side.lines = 1;
            }
            break;
        }
        picked.push(line);
        used += len;
        side.lines += 1;
        side.shown += shown;
    }
    for line in picked.into_iter().rev() {
        shape.render(line, &mut side.text);
    }
    side
}

/// The lines of `text` from the last, each with its `\n` and its byte
/// offset in `text`.
fn lines_rev(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut end = text.len();
    std::iter::from_fn(move || {
        if end == 0 {
            return None;
        }
        let body = text[..end].strip_suffix('\n').unwrap_or(&text[..end]);
        let start = body.rfind('\n').map_or(0, |i| i + 1);
        let line = &text[start..end];
        end = start;
        Some((start, line))
    })
}

fn newlines(text: &str) -> u64 {
    text.bytes().filter(|&b| b == b'\n').count() as u64
}

fn chars(text: &str) -> u64 {
    text.chars().count() as u64
}

/// `output` cut to `limits`, the marker naming `spill_path` as where the
/// whole output is (see the module doc).
#[must_use]
pub fn cut(output: &Output, limits: &Limits, spill_path: &str) -> Cut {
    let marker = line_marker(limits);
    let shape = Shape {
        limits,
        marker_chars: marker.chars().count(),
        marker,
    };
    let head_chars = limits.max_chars.div_ceil(2);
    let head_lines = limits.max_lines.div_ceil(2);
    if output.omitted_bytes == 0 {
        let whole;
        let text = if output.tail.is_empty() {
            output.head.as_str()
        } else {
            whole = format!("{}{}", output.head, output.tail);
            whole.as_str()
        };
        return cut_whole(&shape, text, spill_path, head_chars, head_lines);
    }
    // The elided output: the head's complete lines, and its last line when
    // it is cut in any case; the tail's lines but its first.
    let rest_has_nl = output.omitted_lines > 0 || output.tail.contains('\n');
    let mut head_known: Vec<Line<'_>> = output.head.split_inclusive('\n').map(Line::of).collect();
    if let Some(last) = head_known.last_mut().filter(|l| !l.nl) {
        if last.content.chars().count() > limits.max_line_chars {
            last.nl = rest_has_nl;
        } else {
            head_known.pop();
        }
    }
    let head = pick_head(&shape, head_known.into_iter(), head_chars, head_lines);
    let tail_known = lines_rev(&output.tail)
        .take_while(|(start, _)| *start > 0)
        .map(|(_, raw)| Line::of(raw));
    let tail = pick_tail(
        &shape,
        tail_known,
        limits.max_chars.saturating_sub(chars(&head.text) as usize),
        limits.max_lines.saturating_sub(head.lines),
    );
    let total_chars = chars(&output.head) + output.omitted_bytes + chars(&output.tail);
    let ends_open = !output.tail.is_empty() && !output.tail.ends_with('\n');
    let total_lines =
        newlines(&output.head) + output.omitted_lines + newlines(&output.tail) + u64::from(ends_open);
    assemble(&head, &tail, total_chars, total_lines, spill_path, limits)
}

fn cut_whole(shape: &Shape<'_>, text: &str, spill_path: &str, head_chars: usize, head_lines: usize) -> Cut {
    let limits = shape.limits;
    let (mut total_chars, mut total_lines, mut shown, mut any_long) = (0u64, 0u64, 0usize, false);
    for line in text.split_inclusive('\n').map(Line::of) {
        let (len, orig_shown, orig) = shape.measure(line);
        total_chars += orig as u64;
        total_lines += 1;
        shown += len;
        any_long |= orig_shown < orig;
    }
    if total_lines <= limits.max_lines as u64 && shown <= limits.max_chars {
        let text = if any_long {
            let mut out = String::with_capacity(shown);
            for line in text.split_inclusive('\n').map(Line::of) {
                shape.render(line, &mut out);
            }
            out
        } else {
            text.to_owned()
        };
        return Cut {
            text,
            truncated: any_long,
            total_chars,
            total_lines,
        };
    }
    let head = pick_head(
        shape,
        text.split_inclusive('\n').map(Line::of),
        head_chars,
        head_lines,
    );
    // The tail never reaches into the lines the head used.
    let head_end = text
        .split_inclusive('\n')
        .take(head.lines)
        .map(str::len)
        .sum::<usize>();
    let tail = pick_tail(
        shape,
        lines_rev(&text[head_end..]).map(|(_, raw)| Line::of(raw)),
        limits.max_chars.saturating_sub(chars(&head.text) as usize),
        limits.max_lines.saturating_sub(head.lines),
    );
    assemble(&head, &tail, total_chars, total_lines, spill_path, limits)
}

/// Head, the middle marker line, tail.
fn assemble(
    head: &Side,
    tail: &Side,
    total_chars: u64,
    total_lines: u64,
    spill_path: &str,
    limits: &Limits,
) -> Cut {
    let cut_lines = total_lines.saturating_sub((head.lines + tail.lines) as u64);
    let not_shown = total_chars.saturating_sub((head.shown + tail.shown) as u64);
    let complete = head.lines - usize::from(!head.text.is_empty() && !head.text.ends_with('\n'));
    let marker = format!(
        "[… {} lines cut here; {} of {} characters are not shown. The whole output is in {spill_path}: \
         read it with read_file (offset {}, limit up to {}).]",
        group_digits(cut_lines),
        group_digits(not_shown),
        group_digits(total_chars),
        group_digits(complete as u64 + 1),
        group_digits(limits.max_lines as u64),
    );
    let mut text = String::with_capacity(head.text.len() + marker.len() + tail.text.len() + 2);
    text.push_str(&head.text);
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&marker);
    if !tail.text.is_empty() {
        text.push('\n');
        text.push_str(&tail.text);
    }
    Cut {
        text,
        truncated: true,
        total_chars,
        total_lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PATH: &str = "spill/s1/call_1.txt";

    fn small(max_chars: usize, max_lines: usize, max_line_chars: usize) -> Limits {
        Limits {
            max_chars,
            max_lines,
            max_line_chars,
        }
    }

    fn numbered(lines: usize) -> String {
        (1..=lines).map(|i| format!("line {i}\n")).collect()
    }

    /// `text` as a handler that kept `head` and `tail` characters gives it.
    fn elide(text: &str, head: usize, tail: usize) -> Output {
        let chars: Vec<char> = text.chars().collect();
        let middle: String = chars[head..chars.len() - tail].iter().collect();
        Output {
            head: chars[..head].iter().collect(),
            tail: chars[chars.len() - tail..].iter().collect(),
            omitted_bytes: middle.len() as u64,
            omitted_lines: newlines(&middle),
            spilled_to: None,
            ..Output::default()
        }
    }

    #[test]
    fn within_limits_the_text_is_unchanged() {
        let text = "fn main() {}\n  println!(\"日本\");\n";
        let c = cut(&Output::whole(text), &Limits::DEFAULT, PATH);
        assert_eq!(c.text, text);
        assert!(!c.truncated);
        assert_eq!((c.total_chars, c.total_lines), (text.chars().count() as u64, 2));
        let empty = cut(&Output::whole(""), &Limits::DEFAULT, PATH);
        assert_eq!(
            (empty.text.as_str(), empty.truncated, empty.total_lines),
            ("", false, 0)
        );
    }

    #[test]
    fn long_lines_are_cut_with_a_marker_and_keep_their_newline() {
        let limits = small(1_000, 100, 10);
        let c = cut(
            &Output::whole("short\nabcdefghijklmnopqrstuvwxyz\nend"),
            &limits,
            PATH,
        );
        assert!(c.truncated);
        assert_eq!(c.text, "short\nabcdefghij […line cut at 10 characters]\nend");
        assert_eq!((c.total_chars, c.total_lines), (36, 3));
        // Multi-byte characters are never split.
        let c = cut(&Output::whole("é".repeat(12)), &limits, PATH);
        assert_eq!(c.text, format!("{} […line cut at 10 characters]", "é".repeat(10)));
    }

    #[test]
    fn over_the_line_limit_head_and_tail_stay_around_one_marker() {
        let limits = small(100_000, 10, 100);
        let c = cut(&Output::whole(numbered(100)), &limits, PATH);
        assert!(c.truncated);
        let lines: Vec<&str> = c.text.lines().collect();
        assert_eq!(lines.len(), 11);
        assert_eq!(&lines[..5], ["line 1", "line 2", "line 3", "line 4", "line 5"]);
        assert_eq!(
            &lines[6..],
            ["line 96", "line 97", "line 98", "line 99", "line 100"]
        );
        assert_eq!(
            lines[5],
            // 35 + 41 characters shown.
            "[… 90 lines cut here; 716 of 792 characters are not shown. The whole output is in \
             spill/s1/call_1.txt: read it with read_file (offset 6, limit up to 10).]"
        );
        assert_eq!((c.total_chars, c.total_lines), (792, 100));
    }

    #[test]
    fn over_the_char_limit_the_halves_follow_line_boundaries() {
        let text = numbered(5_000); // 43,893 chars in 5,000 lines
        let limits = small(1_000, 2_000, 2_000);
        let c = cut(&Output::whole(text.as_str()), &limits, PATH);
        let (head, rest) = c.text.split_once("[…").unwrap();
        let (_, tail) = rest.split_once("]\n").unwrap();
        assert!(text.starts_with(head) && head.ends_with('\n') && head.chars().count() <= 500);
        assert!(text.ends_with(tail) && tail.starts_with("line "));
        assert!(head.chars().count() + tail.chars().count() <= 1_000);
        assert!(
            head.chars().count() + tail.chars().count() > 960,
            "about the whole budget is used"
        );
    }

    #[test]
    fn the_300k_result_keeps_50k_with_the_spill_path() {
        let text: String = (0..6_000)
            .map(|i| format!("{i:>6} {}\n", "x".repeat(42)))
            .collect();
        assert_eq!(text.chars().count(), 300_000);
        let c = cut(&Output::whole(text.as_str()), &Limits::DEFAULT, PATH);
        assert!(c.truncated);
        let n = c.text.chars().count();
        assert!((49_000..=50_300).contains(&n), "{n}");
        assert!(c.text.lines().count() <= 2_001);
        assert!(c.text.contains("The whole output is in spill/s1/call_1.txt"));
        assert_eq!((c.total_chars, c.total_lines), (300_000, 6_000));
    }

    #[test]
    fn an_elided_output_gives_the_whole_outputs_text_and_totals() {
        let text = numbered(20_000);
        let whole = cut(&Output::whole(text.as_str()), &Limits::DEFAULT, PATH);
        let elided = elide(&text, 60_000, 55_001);
        assert!(elided.is_elided());
        assert_eq!(cut(&elided, &Limits::DEFAULT, PATH), whole);
    }

    #[test]
    fn an_elided_single_long_line_is_cut_like_the_whole() {
        let text = "y".repeat(200_000);
        let limits = small(50_000, 2_000, 2_000);
        let whole = cut(&Output::whole(text.as_str()), &limits, PATH);
        assert_eq!(
            whole.text,
            format!("{} […line cut at 2,000 characters]", "y".repeat(2_000))
        );
        let elided = cut(&elide(&text, 50_000, 50_000), &limits, PATH);
        assert!(elided.text.starts_with(&whole.text));
        assert_eq!((elided.total_chars, elided.total_lines), (200_000, 1));
    }

    #[test]
    fn the_cut_of_an_elided_output_is_always_marked() {
        let out = Output {
            head: "a\n".repeat(10),
            tail: "\nz\n".repeat(10),
            omitted_bytes: 5,
            omitted_lines: 1,
            spilled_to: Some(PATH.into()),
            ..Output::default()
        };
        let c = cut(&out, &Limits::DEFAULT, PATH);
        assert!(c.truncated);
        assert!(c.text.starts_with(&"a\n".repeat(10)));
        assert!(c.text.contains("lines cut here"));
        assert!(c.text.ends_with("z\n"));
        assert_eq!(c.total_lines, 10 + 1 + 20);
        assert_eq!(c.total_chars, 20 + 5 + 30);
    }

    fn limits_strategy() -> impl Strategy<Value = Limits> {
        (1usize..400, 1usize..40, 1usize..120).prop_map(|(c, l, w)| small(c, l, w))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn cut_stays_within_the_limits(text in "[a-cé中 \n]{0,1500}", limits in limits_strategy()) {
            let c = cut(&Output::whole(text.as_str()), &limits, PATH);
            let line_marker = line_marker(&limits).chars().count();
            let marker = c.text.lines().find(|l| l.starts_with("[… ")).map_or(0, |l| l.chars().count());
            // The middle marker and the one or two line ends around it come on top.
            prop_assert!(c.text.chars().count() <= limits.max_chars + marker + 2, "{:?}", c.text);
            prop_assert!(c.text.lines().count() <= limits.max_lines + 1);
            for line in c.text.lines().filter(|l| !l.starts_with("[… ")) {
                prop_assert!(line.chars().count() <= limits.max_line_chars + line_marker, "{:?}", line);
            }
            let first = text.split('\n').next().unwrap_or_default();
            let k = first.chars().count().min(limits.max_line_chars).min(limits.max_chars.div_ceil(2));
            let head: String = text.chars().take(k).collect();
            prop_assert!(c.text.starts_with(&head), "{:?} / {:?}", head, c.text);
            prop_assert_eq!(c.total_chars, text.chars().count() as u64);
            prop_assert_eq!(c.total_lines, text.lines().count() as u64);
            if !c.truncated {
                prop_assert_eq!(&c.text, &text);
            }
        }

        #[test]
        fn elided_outputs_agree_with_the_whole(
            lens in prop::collection::vec(0usize..30, 50..400),
            limits in (40usize..300, 2usize..40).prop_map(|(c, l)| small(c, l, 24)),
            ends_open in any::<bool>(),
        ) {
            let mut text: String = lens.iter().enumerate().map(|(i, &n)| {
                let c = char::from(b'a' + (i % 26) as u8);
                format!("{}\n", c.to_string().repeat(n))
            }).collect();
            if ends_open {
                text.pop();
            }
            let whole = cut(&Output::whole(text.as_str()), &limits, PATH);
            // The handler keeps enough for both halves: the char budget plus
            // two lines, or the line budget plus two lines, whichever is longer.
            let n = text.chars().count();
            let keep_lines = limits.max_lines + 2;
            let by_lines = |t: &str| t.split_inclusive('\n').take(keep_lines).map(|l| l.chars().count()).sum::<usize>();
            let head = (limits.max_chars + 60).max(by_lines(&text));
            let rev: String = text.chars().rev().collect();
            let tail = (limits.max_chars + 60).max(by_lines(&rev) + 1);
            prop_assume!(whole.truncated && head + tail < n);
            prop_assert_eq!(cut(&elide(&text, head, tail), &limits, PATH), whole);
        }
    }
}
