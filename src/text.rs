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
/// formatting character (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069).
#[must_use]
pub fn is_terminal_control(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// A bidirectional formatting character: it reorders the text around it
/// on screen (the "Trojan Source" characters).
const fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// An invisible character that can hide text or split a word without a
/// trace: zero-width space, word joiner, invisible operators, the byte
/// order mark, the Mongolian vowel separator, and the Unicode tag block
/// (U+E0000–U+E007F, "ASCII smuggling"). Zero-width joiner and non-joiner
/// are left alone: emoji sequences and Persian and Indic text need them.
const fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{180e}' | '\u{200b}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{e0000}'..='\u{e007f}'
    )
}

/// Whether [`visible`] would change `c` (newline and tab aside).
#[must_use]
pub fn needs_showing(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c) || is_invisible(c)
}

/// `text` as it may reach a terminal: the one function for every byte
/// strata did not write itself (tool output, model text, titles, MCP
/// messages, error causes). Nothing in it can act on the terminal:
///
/// - C0 controls as `^X` caret notation (ESC as `^[`, a lone CR as `^M`,
///   DEL as `^?`); newline and tab are kept, and a CR just before a newline
///   is dropped (a CRLF line ending);
/// - C1 controls (U+0080–U+009F, `\u{9b}` is a one-character CSI) as
///   `\u{9b}`;
/// - bidirectional overrides and isolates, zero-width and tag characters as
///   `\u{202e}` and the like, so text cannot reorder or hide itself.
///
/// Borrowed when there is nothing to change.
#[must_use]
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    let plain = |b: u8| (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\t';
    if text.bytes().all(plain) || !text.chars().any(needs_showing) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            '\u{7f}' => out.push_str("^?"),
            c if needs_showing(c) => {
                use std::fmt::Write as _;
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Tool output as a model should read it: SGR sequences (colours and
/// text attributes, `ESC [ … m`) removed, since they carry no meaning for
/// a model and cost tokens, and everything else made [`visible`] (a title
/// change or a screen clear shows as `^[]0;…^G`, `^[[2J`, so the model
/// sees what the command tried to do).
#[must_use]
pub fn for_model(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\u{1b}') {
        return visible(text);
    }
    let mut kept = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\u{1b}') {
        kept.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match sgr_len(after) {
            Some(n) => rest = &after[n..],
            None => {
                kept.push('\u{1b}');
                rest = after;
            }
        }
    }
    kept.push_str(rest);
    std::borrow::Cow::Owned(visible(&kept).into_owned())
}

/// The length of an SGR sequence's body after its ESC (`[`, parameters of
/// digits, `;` and `:`, then `m`), or `None` when `after` does not start
/// one.
fn sgr_len(after: &str) -> Option<usize> {
    let body = after.strip_prefix('[')?;
    let params = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || matches!(b, b';' | b':'))
        .count();
    (body.as_bytes().get(params) == Some(&b'm')).then_some(params + 2)
}

/// `text` without [`is_terminal_control`] characters, line breaks and tabs
/// kept when `keep_lines` (a `\r` is dropped either way). For text that
/// becomes part of strata's own words (a title, a topic); text shown as it
/// came goes through [`visible`].
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
    fn untrusted_text_is_made_visible() {
        assert_eq!(visible("plain\ttext\n"), "plain\ttext\n");
        assert!(matches!(visible("plain\ttext\n"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(visible("\u{1b}]0;owned\u{7}\u{1b}[2Jx"), "^[]0;owned^G^[[2Jx");
        assert_eq!(visible("a\rb\r\nc\u{7f}"), "a^Mb\nc^?");
        assert_eq!(visible("\u{9b}x"), "\\u{9b}x");
        assert_eq!(
            visible("abc\u{202e}fed\u{200b}\u{feff}"),
            "abc\\u{202e}fed\\u{200b}\\u{feff}"
        );
        assert_eq!(visible("\u{e0041}"), "\\u{e0041}");
        // Emoji sequences and scripts keep their joiners.
        assert_eq!(visible("👩\u{200d}💻 日本"), "👩\u{200d}💻 日本");
    }

    #[test]
    fn a_model_reads_output_without_colours_and_with_other_escapes_visible() {
        let out = "\u{1b}[1;31merror\u{1b}[0m: \u{1b}]0;owned\u{7}\u{1b}[2Jdone\u{1b}[m\u{1b}";
        assert_eq!(for_model(out), "error: ^[]0;owned^G^[[2Jdone^[");
        assert_eq!(for_model("plain"), "plain");
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
