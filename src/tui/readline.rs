//! The composer's editing keys, as shell and readline users know them, on
//! the composer's text widget. Cursor moves and deletions go by grapheme
//! cluster (a family emoji or a letter with combining accents is one
//! step), words are runs of letters and digits (Alt-B, Alt-F, Alt-D) or,
//! for Ctrl-W, runs of anything but whitespace. Kills (Ctrl-W, Ctrl-K,
//! Ctrl-U, Alt-D) go to the widget's yank buffer for Ctrl-Y; single
//! deletions leave it alone. At a line's start or end, deletions join it
//! with its neighbour, as the composer holds several lines.
//!
//! | key | does |
//! |---|---|
//! | Ctrl-A, Home / Ctrl-E, End | line start / end |
//! | Ctrl-B, Left / Ctrl-F, Right | one grapheme back / forward |
//! | Alt-B, Ctrl-Left / Alt-F, Ctrl-Right | one word back / forward |
//! | Backspace, Ctrl-H / Delete, Ctrl-D | delete the grapheme before / under the cursor |
//! | Ctrl-W, Alt-Backspace | delete back to the previous whitespace |
//! | Alt-D | delete to the end of the word |
//! | Ctrl-K / Ctrl-U | delete to the end / start of the line |
//! | Ctrl-Y | insert the last deleted text |
//!
//! Keys bound in the key map come first: this only sees the keys the map
//! leaves to the composer.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::{CursorMove, TextArea};
use unicode_segmentation::UnicodeSegmentation;

/// Help's rows for the composer's keys: `(keys, what they do)`.
pub const HELP: &[(&str, &str)] = &[
    ("Ctrl-A / Ctrl-E", "start / end of the line"),
    ("Alt-B / Alt-F", "word back / forward"),
    ("Ctrl-W", "delete the word before the cursor"),
    ("Alt-D", "delete the word after the cursor"),
    ("Ctrl-K / Ctrl-U", "delete to the end / start of the line"),
    ("Ctrl-D", "delete the character under the cursor"),
    ("Ctrl-Y", "insert the last deleted text"),
];

/// What an editing key did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edited {
    /// The text changed.
    Text,
    /// Only the cursor moved (or nothing happened).
    Cursor,
}

/// Applies `key` when it is one of the editing keys above; `None` for any
/// other key (the caller hands it to the widget's own input).
pub fn edit(area: &mut TextArea<'_>, key: &KeyEvent) -> Option<Edited> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let changed = |c: bool| if c { Edited::Text } else { Edited::Cursor };
    let letter = match key.code {
        KeyCode::Char(c) => Some(c.to_ascii_lowercase()),
        _ => None,
    };
    Some(match (key.code, letter, ctrl, alt) {
        (_, Some('a'), true, false) | (KeyCode::Home, ..) => {
            area.move_cursor(CursorMove::Head);
            Edited::Cursor
        }
        (_, Some('e'), true, false) | (KeyCode::End, ..) => {
            area.move_cursor(CursorMove::End);
            Edited::Cursor
        }
        (_, Some('b'), true, false) | (KeyCode::Left, _, false, false) => {
            back(area);
            Edited::Cursor
        }
        (_, Some('f'), true, false) | (KeyCode::Right, _, false, false) => {
            forward(area);
            Edited::Cursor
        }
        (_, Some('b'), false, true) | (KeyCode::Left, _, true, false) => {
            word_back(area);
            Edited::Cursor
        }
        (_, Some('f'), false, true) | (KeyCode::Right, _, true, false) => {
            word_forward(area);
            Edited::Cursor
        }
        (_, Some('h'), true, false) | (KeyCode::Backspace, _, false, false) => changed(delete_back(area)),
        (_, Some('d'), true, false) | (KeyCode::Delete, _, false, false) => changed(delete_forward(area)),
        (_, Some('w'), true, false) | (KeyCode::Backspace, _, false, true) => changed(rubout(area)),
        (_, Some('d'), false, true) => changed(kill_word(area)),
        (_, Some('k'), true, false) => changed(area.delete_line_by_end()),
        (_, Some('u'), true, false) => changed(area.delete_line_by_head()),
        (_, Some('y'), true, false) => changed(area.paste()),
        _ => return None,
    })
}

/// The cursor's line and its column in characters.
fn at(area: &TextArea<'_>) -> (String, usize, usize) {
    let ratatui_textarea::DataCursor(row, col) = area.cursor();
    let line = area.lines().get(row).cloned().unwrap_or_default();
    (line, row, col)
}

/// The byte offset of character column `col` of `line`.
fn byte_of(line: &str, col: usize) -> usize {
    line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)
}

/// The character column of byte offset `byte` of `line`.
fn col_of(line: &str, byte: usize) -> usize {
    line.get(..byte).map_or(0, |s| s.chars().count())
}

/// The column where the grapheme before `col` starts.
#[must_use]
pub fn grapheme_before(line: &str, col: usize) -> usize {
    let b = byte_of(line, col);
    line[..b]
        .grapheme_indices(true)
        .next_back()
        .map_or(0, |(i, _)| col_of(line, i))
}

/// The column where the grapheme at `col` ends.
#[must_use]
pub fn grapheme_after(line: &str, col: usize) -> usize {
    let b = byte_of(line, col);
    line[b..]
        .graphemes(true)
        .next()
        .map_or(col, |g| col + g.chars().count())
}

/// Moves the cursor to `col` of its line.
fn jump(area: &mut TextArea<'_>, col: usize) {
    let ratatui_textarea::DataCursor(row, now) = area.cursor();
    match (u16::try_from(row), u16::try_from(col)) {
        (Ok(r), Ok(c)) => area.move_cursor(CursorMove::Jump(r, c)),
        _ => {
            let (step, n) = if col < now {
                (CursorMove::Back, now - col)
            } else {
                (CursorMove::Forward, col - now)
            };
            for _ in 0..n {
                area.move_cursor(step);
            }
        }
    }
}

fn back(area: &mut TextArea<'_>) {
    let (line, _, col) = at(area);
    if col == 0 {
        area.move_cursor(CursorMove::Back);
    } else {
        jump(area, grapheme_before(&line, col));
    }
}

fn forward(area: &mut TextArea<'_>) {
    let (line, _, col) = at(area);
    let next = grapheme_after(&line, col);
    if next == col {
        area.move_cursor(CursorMove::Forward);
    } else {
        jump(area, next);
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The column of the start of the word before `col` (readline's
/// backward-word): over non-word characters, then over the word.
fn word_start(line: &str, col: usize) -> usize {
    let chars: Vec<char> = line.chars().collect();
    let mut i = col.min(chars.len());
    while i > 0 && !is_word(chars[i - 1]) {
        i -= 1;
    }
    while i > 0 && is_word(chars[i - 1]) {
        i -= 1;
    }
    i
}

/// The column of the end of the word at or after `col` (readline's
/// forward-word).
fn word_end(line: &str, col: usize) -> usize {
    let chars: Vec<char> = line.chars().collect();
    let mut i = col.min(chars.len());
    while i < chars.len() && !is_word(chars[i]) {
        i += 1;
    }
    while i < chars.len() && is_word(chars[i]) {
        i += 1;
    }
    i
}

fn word_back(area: &mut TextArea<'_>) {
    let (line, _, col) = at(area);
    if col == 0 {
        area.move_cursor(CursorMove::Back);
    } else {
        jump(area, word_start(&line, col));
    }
}

fn word_forward(area: &mut TextArea<'_>) {
    let (line, _, col) = at(area);
    let end = word_end(&line, col);
    if end == col {
        area.move_cursor(CursorMove::Forward);
    } else {
        jump(area, end);
    }
}

/// Deletes the `n` characters before the cursor; `kill` puts them in the
/// yank buffer.
fn delete_before(area: &mut TextArea<'_>, n: usize, kill: bool) -> bool {
    let (_, _, col) = at(area);
    let yank = area.yank_text();
    jump(area, col - n);
    let done = area.delete_str(n);
    if !kill {
        area.set_yank_text(yank);
    }
    done
}

/// Backspace: the grapheme before the cursor, or the line break at the
/// line's start.
fn delete_back(area: &mut TextArea<'_>) -> bool {
    let (line, _, col) = at(area);
    if col == 0 {
        return area.delete_char();
    }
    delete_before(area, col - grapheme_before(&line, col), false)
}

/// Delete: the grapheme under the cursor, or the line break at the line's
/// end.
fn delete_forward(area: &mut TextArea<'_>) -> bool {
    let (line, _, col) = at(area);
    let next = grapheme_after(&line, col);
    if next == col {
        return area.delete_next_char();
    }
    let yank = area.yank_text();
    let done = area.delete_str(next - col);
    area.set_yank_text(yank);
    done
}

/// Ctrl-W (unix-word-rubout): back over whitespace, then over anything
/// else.
fn rubout(area: &mut TextArea<'_>) -> bool {
    let (line, _, col) = at(area);
    if col == 0 {
        return area.delete_char();
    }
    let chars: Vec<char> = line.chars().collect();
    let mut i = col.min(chars.len());
    while i > 0 && chars[i - 1].is_whitespace() {
        i -= 1;
    }
    while i > 0 && !chars[i - 1].is_whitespace() {
        i -= 1;
    }
    delete_before(area, col - i, true)
}

/// Alt-D (kill-word): to the end of the word at or after the cursor.
fn kill_word(area: &mut TextArea<'_>) -> bool {
    let (line, _, col) = at(area);
    let end = word_end(&line, col);
    if end == col {
        return area.delete_next_char();
    }
    area.delete_str(end - col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn area(text: &str) -> TextArea<'static> {
        let mut a = TextArea::default();
        a.insert_str(text);
        a
    }

    fn press(a: &mut TextArea<'_>, code: KeyCode, m: KeyModifiers) -> Option<Edited> {
        edit(a, &KeyEvent::new(code, m))
    }

    #[test]
    fn graphemes_are_one_step() {
        let line = "a👨‍👩‍👧e\u{301}";
        let family = "👨‍👩‍👧".chars().count();
        assert_eq!(grapheme_before(line, 1 + family), 1);
        assert_eq!(grapheme_after(line, 1), 1 + family);
        assert_eq!(grapheme_after(line, 1 + family), 3 + family, "e and its accent");
    }

    #[test]
    fn words_are_letters_and_digits() {
        assert_eq!(word_start("cargo test --lib", 16), 13);
        assert_eq!(word_start("cargo test --lib", 13), 6);
        assert_eq!(word_end("cargo test --lib", 5), 10);
        assert_eq!(word_end("cargo test", 10), 10);
    }

    #[test]
    fn kills_go_to_the_yank_buffer_and_backspace_does_not() {
        let mut a = area("one two");
        press(&mut a, KeyCode::Char('w'), KeyModifiers::CONTROL);
        assert_eq!(a.lines(), ["one "]);
        press(&mut a, KeyCode::Backspace, KeyModifiers::NONE);
        assert_eq!(a.lines(), ["one"]);
        press(&mut a, KeyCode::Char('y'), KeyModifiers::CONTROL);
        assert_eq!(a.lines(), ["onetwo"]);
    }

    #[test]
    fn other_keys_are_left_to_the_widget() {
        let mut a = area("x");
        assert_eq!(press(&mut a, KeyCode::Char('q'), KeyModifiers::NONE), None);
        assert_eq!(press(&mut a, KeyCode::Enter, KeyModifiers::NONE), None);
    }
}
