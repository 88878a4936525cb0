//! Deterministic mixed text (English, code, French, CJK, emoji, numbers) of a
//! given size, shared by the token tests and benches. The rule is also in
//! `tests/tools/tiktoken_reference.py`: blocks `"[i] " + paragraph` for
//! i = 0, 1, ... until the text has at least `target_bytes` bytes, where the
//! paragraph is `tests/fixtures/tokens/mixed_paragraph.txt`.

/// The repeated paragraph.
pub const PARAGRAPH: &str = include_str!("../fixtures/tokens/mixed_paragraph.txt");

/// At least `target_bytes` bytes of mixed text; whole blocks only.
pub fn mixed_text(target_bytes: usize) -> String {
    let mut out = String::with_capacity(target_bytes + PARAGRAPH.len() + 16);
    let mut i = 0usize;
    while out.len() < target_bytes {
        out.push('[');
        out.push_str(&i.to_string());
        out.push_str("] ");
        out.push_str(PARAGRAPH);
        i += 1;
    }
    out
}
