//! The `[prompt]` configuration section and the size rules derived from it
//! (DESIGN §4 "Caps" and "Modes"). Pure data and arithmetic.

use crate::domain::PromptMode;
use serde::{Deserialize, Serialize};

/// All instruction files together may not exceed this many characters
/// (DESIGN §4 "Caps").
pub const TOTAL_INSTRUCTION_CAP: usize = 150_000;

/// The per-file cap when neither the config nor the context window gives one.
pub const DEFAULT_FILE_CAP: usize = 20_000;

/// Lower and upper bound of the window-derived per-file cap, in characters.
pub const FILE_CAP_RANGE: (usize, usize) = (20_000, 500_000);

/// The `computed` layer keeps at most this many characters of the command's
/// output (its head).
pub const COMPUTED_MAX_CHARS: usize = 100_000;

/// The instruction files the prompt builder reads in a directory, by
/// family (DESIGN §4 "Instruction files"): what the shell's sandbox
/// protects at the workspace root. `.cursor/rules/*.mdc` is the directory
/// [`INSTRUCTION_RULES_DIR`].
pub const INSTRUCTION_FILE_NAMES: &[&str] = &[
    ".strata.md",
    "STRATA.md",
    "AGENTS.override.md",
    "AGENTS.md",
    "CLAUDE.md",
    ".cursorrules",
];

/// The directory of Cursor rules (`*.mdc`) at the workspace root.
pub const INSTRUCTION_RULES_DIR: &str = ".cursor/rules";

/// Below this window (tokens) a model gets `minimal` when no mode is set.
pub const MINIMAL_MODE_WINDOW: u64 = 16_000;

/// Which instruction-file families are loaded (`prompt.instruction_files`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InstructionPolicy {
    /// The first family that yields text wins: `.strata.md`/`STRATA.md`, then
    /// the `AGENTS.md` chain, then `CLAUDE.md`, then Cursor rules.
    #[default]
    First,
    /// Every family, from the most general file to the most specific.
    All,
}

/// Whether a truncated instruction file also gets a one-line notice in the
/// prompt (`prompt.truncation_notice`). The cut marker inside the file body
/// is always there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncationNotice {
    /// No extra notice.
    Off,
    /// One notice at the end of the project layer naming every shortened file.
    #[default]
    Once,
    /// A notice in front of each shortened file.
    Always,
}

/// The `[prompt]` section of `config.toml`. Every key is optional; unknown
/// keys are reported by the config loader, not rejected here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptSettings {
    /// `"first"` (default) or `"all"`.
    pub instruction_files: InstructionPolicy,
    /// Per-file cap in characters; when absent it follows the context window.
    pub context_file_max_chars: Option<usize>,
    /// Replace an instruction file that looks like a prompt injection by a
    /// one-line notice (the warning is shown either way).
    pub block_suspicious: bool,
    /// `"off"`, `"once"` (default) or `"always"`.
    pub truncation_notice: TruncationNotice,
    /// Digest the last N sessions of the workspace into the `recent` layer;
    /// 0 turns the layer off.
    pub recent_sessions: usize,
    /// A shell command whose output forms the `computed` layer, run once at
    /// session start in the workspace root.
    pub context_cmd: Option<String>,
    /// A shell command whose output is added to each user message as a
    /// `<system-reminder>` (used by the pipeline, never by the prompt).
    pub turn_reminder_cmd: Option<String>,
    /// `full`, `minimal` or `none`; when absent see [`resolve_mode`].
    pub mode: Option<PromptMode>,
}

/// The per-file cap in characters: `context_file_max_chars` when set, else
/// `context_window × 4 × 6 %` clamped to 20,000..=500,000, else 20,000.
///
/// `context_window` is in tokens (4 characters per token is the estimate).
#[must_use]
pub fn per_file_cap(settings: &PromptSettings, context_window: Option<u64>) -> usize {
    if let Some(cap) = settings.context_file_max_chars {
        return cap;
    }
    match context_window {
        Some(window) => {
            let chars = window.saturating_mul(4).saturating_mul(6) / 100;
            let chars = usize::try_from(chars).unwrap_or(usize::MAX);
            chars.clamp(FILE_CAP_RANGE.0, FILE_CAP_RANGE.1)
        }
        None => DEFAULT_FILE_CAP,
    }
}

/// How a file over `cap` characters is cut: `(head_chars, tail_chars)`, the
/// first 70 % and the last 20 % of the cap (rounded down).
#[must_use]
pub fn head_tail(cap: usize) -> (usize, usize) {
    (cap / 10 * 7 + cap % 10 * 7 / 10, cap / 5)
}

/// The mode a new prompt is built in: the command-line choice, else the
/// config's, else `minimal` for a window under 16,000 tokens, else `full`.
#[must_use]
pub fn resolve_mode(
    cli: Option<PromptMode>,
    settings: &PromptSettings,
    context_window: Option<u64>,
) -> PromptMode {
    cli.or(settings.mode).unwrap_or(match context_window {
        Some(window) if window < MINIMAL_MODE_WINDOW => PromptMode::Minimal,
        _ => PromptMode::Full,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_follows_the_window_and_is_clamped() {
        let s = PromptSettings::default();
        assert_eq!(per_file_cap(&s, Some(128_000)), 30_720);
        assert_eq!(per_file_cap(&s, Some(8_192)), 20_000);
        assert_eq!(per_file_cap(&s, Some(10_000_000)), 500_000);
        assert_eq!(per_file_cap(&s, None), 20_000);
        let fixed = PromptSettings {
            context_file_max_chars: Some(1234),
            ..PromptSettings::default()
        };
        assert_eq!(per_file_cap(&fixed, Some(128_000)), 1234);
    }

    #[test]
    fn head_and_tail_are_seventy_and_twenty_percent() {
        assert_eq!(head_tail(30_720), (21_504, 6_144));
        assert_eq!(head_tail(20_000), (14_000, 4_000));
        assert_eq!(head_tail(15), (10, 3));
    }

    #[test]
    fn small_windows_get_minimal_unless_told_otherwise() {
        let s = PromptSettings::default();
        assert_eq!(resolve_mode(None, &s, Some(8_192)), PromptMode::Minimal);
        assert_eq!(resolve_mode(None, &s, Some(128_000)), PromptMode::Full);
        assert_eq!(resolve_mode(None, &s, None), PromptMode::Full);
        assert_eq!(
            resolve_mode(Some(PromptMode::None), &s, Some(8_192)),
            PromptMode::None
        );
    }

    #[test]
    fn settings_parse_from_toml_with_defaults() {
        let s: PromptSettings = toml::from_str(
            "instruction_files = \"all\"\ntruncation_notice = \"always\"\nmode = \"minimal\"\n",
        )
        .unwrap();
        assert_eq!(s.instruction_files, InstructionPolicy::All);
        assert_eq!(s.truncation_notice, TruncationNotice::Always);
        assert_eq!(s.mode, Some(PromptMode::Minimal));
        assert_eq!(s.recent_sessions, 0);
        assert!(!s.block_suspicious);
    }
}
