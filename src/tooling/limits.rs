//! Output limits, spill decisions and previews (hermes' three defences).

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
