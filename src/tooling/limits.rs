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

impl Limits {
    /// 50,000 characters, 2,000 lines, 2,000 characters a line.
    pub const DEFAULT: Self = Self {
        max_chars: 50_000,
        max_lines: 2_000,
        max_line_chars: 2_000,
    };
}

/// One result of a round, for [`shape_round`].
pub struct RoundItem<'a> {
    /// The raw output.
    pub output: &'a super::Output,
    /// `read_file`: exempt from all three defences.
    pub paged: bool,
    /// Where the whole output goes when it is not sent whole.
    pub spill_path: String,
}

/// What to do with the whole output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spill {
    /// Nothing: the text sent is the whole output.
    None,
    /// Write the whole output (`output.head`) to the spill path.
    Write,
    /// The handler wrote it already.
    Written,
}

/// A result as sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shaped {
    /// The text sent.
    pub text: String,
    /// Cut by the per-result limits.
    pub truncated: bool,
    /// Replaced by a preview.
    pub previewed: bool,
    /// The spill decision.
    pub spill: Spill,
}

/// Shapes one round's results (stub).
#[must_use]
pub fn shape_round(items: &[RoundItem<'_>], _window_tokens: u64, _limits: &Limits) -> Vec<Shaped> {
    items
        .iter()
        .map(|i| Shaped {
            text: i.output.head.clone(),
            truncated: false,
            previewed: false,
            spill: Spill::None,
        })
        .collect()
}

/// Per-result and per-round budgets (stub).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budgets {
    /// Per result.
    pub per_result_chars: usize,
    /// Per round.
    pub per_round_chars: usize,
}

impl Budgets {
    /// For a window (stub).
    #[must_use]
    pub fn for_window(window_tokens: u64) -> Self {
        let w = usize::try_from(window_tokens).unwrap_or(usize::MAX);
        Self {
            per_result_chars: (w * 6 / 10).clamp(8_000, 100_000),
            per_round_chars: (w * 12 / 10).clamp(16_000, 200_000),
        }
    }
}
