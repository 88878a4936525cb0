//! A carry buffer that turns token pieces (raw bytes) into complete UTF-8
//! text.
//!
//! A byte-level BPE token can end in the middle of a multi-byte character
//! (an emoji is often split over two or three tokens). [`Utf8Carry::push`]
//! returns every complete character so far and keeps an unfinished tail for
//! the next piece; bytes that can never form a character become U+FFFD.
//! Invariant: the concatenation of everything returned by `push` and
//! `finish` equals `String::from_utf8_lossy` of all bytes pushed. Pure; used
//! by the engine thread.

/// Bytes waiting for the rest of their character.
#[derive(Debug, Default)]
pub struct Utf8Carry {
    pending: Vec<u8>,
}

impl Utf8Carry {
    /// An empty buffer.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `bytes` and returns the complete text now available (may be
    /// empty when `bytes` only started a character).
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    return out;
                }
                Err(error) => {
                    let valid = error.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match error.error_len() {
                        // An unfinished character at the end: keep it.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        // Bytes that cannot start or continue a character.
                        Some(len) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + len);
                        }
                    }
                }
            }
        }
    }

    /// Ends the stream: an unfinished tail becomes U+FFFD.
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }

    /// Whether bytes are waiting.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_everywhere(text: &str) {
        let bytes = text.as_bytes();
        for cut in 0..=bytes.len() {
            let mut carry = Utf8Carry::new();
            let mut out = carry.push(&bytes[..cut]);
            out.push_str(&carry.push(&bytes[cut..]));
            assert!(carry.is_empty());
            out.push_str(&carry.finish());
            assert_eq!(out, text, "cut at byte {cut}");
        }
    }

    #[test]
    fn ascii_passes_straight_through() {
        let mut carry = Utf8Carry::new();
        assert_eq!(carry.push(b"hello"), "hello");
        assert!(carry.is_empty());
    }

    #[test]
    fn a_character_split_over_pieces_is_emitted_once_complete() {
        let crab = "🦀".as_bytes();
        let mut carry = Utf8Carry::new();
        assert_eq!(carry.push(&crab[..1]), "");
        assert_eq!(carry.push(&crab[1..3]), "");
        assert_eq!(carry.push(&crab[3..]), "🦀");
    }

    #[test]
    fn text_before_an_unfinished_character_is_not_held_back() {
        let e_acute = "é".as_bytes();
        let mut carry = Utf8Carry::new();
        assert_eq!(carry.push(&[b'c', b'a', b'f', e_acute[0]]), "caf");
        assert_eq!(carry.push(&e_acute[1..]), "é");
    }

    #[test]
    fn every_split_of_mixed_text_round_trips() {
        split_everywhere("naïve 日本語 한국어 👨‍👩‍👧 🇫🇷 fn x() {}");
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut carry = Utf8Carry::new();
        assert_eq!(carry.push(&[b'a', 0xff, b'b']), "a\u{fffd}b");
        assert_eq!(carry.push(&[0xe6, 0x97, b'x']), "\u{fffd}x");
    }

    #[test]
    fn an_unfinished_tail_at_the_end_is_replaced() {
        let mut carry = Utf8Carry::new();
        assert_eq!(carry.push(&[b'o', b'k', 0xf0, 0x9f]), "ok");
        assert_eq!(carry.finish(), "\u{fffd}");
        assert!(carry.is_empty());
    }
}
