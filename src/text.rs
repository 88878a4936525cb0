//! Layer 0: small pure text helpers shared by the prompt, transcripts and
//! the command line. No I/O.

/// `1234567` → `1,234,567`.
#[must_use]
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Whether `c` can change how a terminal shows the text around it: a
/// control character (escape sequences start with one) or a bidirectional
/// formatting character (U+200E/F, U+202A–U+202E, U+2066–U+2069).
#[must_use]
pub fn is_terminal_control(c: char) -> bool {
    c.is_control() || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` without [`is_terminal_control`] characters, line breaks and tabs
/// kept when `keep_lines` (a `\r` is dropped either way).
#[must_use]
pub fn strip_terminal_controls(text: &str, keep_lines: bool) -> String {
    text.chars()
        .filter(|&c| !is_terminal_control(c) || (keep_lines && matches!(c, '\n' | '\t')))
        .collect()
}

/// A Markdown code fence longer than any run of backticks in `text` (at
/// least three), so fenced content can never close the fence early.
#[must_use]
pub fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_are_stripped() {
        let text = "wid\u{1b}]0;PWNED\u{7}gets\u{1b}[2J \u{202e}evil\r\n\tok";
        assert_eq!(strip_terminal_controls(text, false), "wid]0;PWNEDgets[2J evilok");
        assert_eq!(
            strip_terminal_controls(text, true),
            "wid]0;PWNEDgets[2J evil\n\tok"
        );
    }

    #[test]
    fn digits_are_grouped_by_thousands() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1_000), "1,000");
        assert_eq!(group_digits(1_234_567), "1,234,567");
    }

    #[test]
    fn fences_outgrow_backtick_runs() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("a ```` b"), "`````");
    }
}
