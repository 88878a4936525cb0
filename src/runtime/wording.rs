//! The sentences the runtime shows its client, made from the core's typed
//! notices ([`LockReason`], [`CompressWarning`], [`CompressError`],
//! [`TurnNotice`]): the one place where they become words.
//!
//! Each client has its own commands for the same advice — the app's slash
//! commands (`/new`, `/compress <topic>`, `/undo-compress`), the command
//! line's subcommands (`strata chat --new`, `strata compress ID --topic T`,
//! `strata undo-compress`) — kept in one table per client (`APP`,
//! `CLI`); the sentences around them are shared. The runtime words for
//! the [`Client`] it was opened for (the session service opens it for the
//! app; every command line opening is for the command line).

use crate::compress::{CompressError, CompressWarning, LockReason};
use crate::conversation::TurnNotice;
use crate::text::group_digits;

/// Who reads the runtime's sentences.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Client {
    /// The full-screen app: advice names slash commands.
    App,
    /// A `strata` subcommand (`chat`, `compress`, `context`, ...): advice
    /// names subcommands.
    #[default]
    Cli,
}

/// How a client asks for each thing the advice points at.
struct Commands {
    /// Start a new session.
    new_session: &'static str,
    /// Compress by hand.
    compress: &'static str,
    /// Compress by hand with a focus.
    compress_topic: &'static str,
    /// Undo the last compaction.
    undo: &'static str,
    /// Undo the last edit and resend.
    undo_edit: &'static str,
    /// Take a session over from another strata.
    take_over: &'static str,
}

/// The app's commands.
const APP: Commands = Commands {
    new_session: "/new",
    compress: "/compress",
    compress_topic: "/compress <topic>",
    undo: "/undo-compress",
    undo_edit: "/undo-resend",
    take_over: "/take-over",
};

/// The command line's commands.
const CLI: Commands = Commands {
    new_session: "`strata chat --new`",
    compress: "`strata compress ID`",
    compress_topic: "`strata compress ID --topic T`",
    undo: "`strata undo-compress`",
    undo_edit: "`strata undo-edit-message ID`",
    take_over: "`--take-over`",
};

impl Client {
    fn commands(self) -> &'static Commands {
        match self {
            Self::App => &APP,
            Self::Cli => &CLI,
        }
    }

    /// That another strata has the session open for writing (`by` holds
    /// its lease), so this one only reads it, and how to take it over.
    #[must_use]
    pub fn session_held(self, by: &crate::store::Lease) -> String {
        let holder = held_by(by);
        let how = match self {
            Self::App => format!("{} takes it over", self.commands().take_over),
            Self::Cli => format!("run again with {} to take it over", self.commands().take_over),
        };
        format!(
            "this session is open in another strata ({holder}), so nothing is written to it here; {how} (the other one then only reads it)"
        )
    }

    /// That another strata took the session over while a reply was being
    /// made here: the turn stopped and wrote nothing more.
    #[must_use]
    pub fn session_lost_mid_turn(self) -> String {
        let how = match self {
            Self::App => format!("{} takes it back", self.commands().take_over),
            Self::Cli => format!("run again with {} to take it back", self.commands().take_over),
        };
        format!(
            "another strata took this session over during the reply, so the reply stopped and nothing more of it was stored; {how}"
        )
    }

    /// That a command other than a turn (`pin`, `compress`, an undo) was
    /// refused: another strata has the session open (`by` holds it).
    #[must_use]
    pub fn session_held_for_change(self, by: &crate::store::Lease) -> String {
        let holder = held_by(by);
        format!(
            "this session is open in another strata ({holder}), so nothing was changed; do it there, or quit that strata first"
        )
    }

    /// That the message being sent (`before` tokens, with what it
    /// attaches) goes cut to `after` tokens to fit `window`; the whole of it
    /// is stored.
    #[must_use]
    pub fn message_sent_cut(self, before: u64, after: u64, window: u64) -> String {
        format!(
            "your message (~{} tokens with what it attaches) goes cut to ~{} tokens to fit the {}-token window; the whole message is stored",
            group_digits(before),
            group_digits(after),
            group_digits(window)
        )
    }

    /// That the request just sent left `messages` older messages (`tokens`
    /// of them) out to fit `window` — or to keep to `[history]
    /// max_messages` when `cap` says that cap did it — and how to keep
    /// them as a summary.
    #[must_use]
    pub fn left_out(self, messages: usize, tokens: u64, window: u64, cap: Option<usize>) -> String {
        let (what, verb, them) = if messages == 1 {
            ("1 older message".to_owned(), "was", "it")
        } else {
            (format!("{messages} older messages"), "were", "them")
        };
        let why = match cap {
            Some(cap) => format!("to keep to [history] max_messages = {cap}"),
            None => format!("to fit the {}-token window", group_digits(window)),
        };
        format!(
            "{what} (~{} tokens) {verb} left out of this request {why}; {} summarises {them} instead",
            group_digits(tokens),
            self.commands().compress
        )
    }

    /// Why automatic compression is paused, with what to do instead.
    #[must_use]
    pub fn lockout(self, reason: &LockReason) -> String {
        let why = match reason {
            LockReason::NothingToCompress => {
                "compressions in a row found nothing outside the protected messages"
            }
            LockReason::UnderTenPercent => "compressions in a row would have saved under 10% of the context",
            LockReason::NoSaving => "compressions in a row would not have saved anything",
            LockReason::NoProgress => "compressions in a row made no progress",
            LockReason::StillOverThreshold => {
                "compressions in a row left the context at or above the threshold"
            }
            LockReason::FallbacksInRow => {
                "the summariser failed twice in a row and fallback summaries were used"
            }
            LockReason::Other(text) => text,
        };
        let c = self.commands();
        format!(
            "Automatic compression is paused: {why}; start a new session ({}) or compress by hand ({}).",
            c.new_session, c.compress_topic
        )
    }

    /// An edit whose new text was not sent could not be undone either.
    #[must_use]
    pub fn edit_not_undone(self, why: &str) -> String {
        format!(
            "The new text was not sent and the edit could not be undone ({why}); {} brings the archived messages back.",
            self.commands().undo_edit
        )
    }

    /// Automatic compression is off in the config.
    #[must_use]
    pub fn compression_off(self) -> String {
        format!(
            "Automatic compression is off in the config ([compression] enabled = false); {} still works.",
            self.commands().compress
        )
    }

    /// A compression's warning.
    #[must_use]
    pub fn compress_warning(self, warning: &CompressWarning) -> String {
        match warning {
            CompressWarning::SummaryShrank { tokens, earlier } => format!(
                "The new summary ({} tokens) is less than half the earlier summary it updates ({} tokens), so some earlier facts may be gone; {} brings the earlier one back.",
                group_digits(*tokens),
                group_digits(*earlier),
                self.commands().undo
            ),
            CompressWarning::Fallback { why } => {
                format!(
                    "The summariser failed ({why}); a fallback summary extracted without a model was used."
                )
            }
            CompressWarning::SummariserWindow { needed, window } => format!(
                "The summariser's request ({} tokens with its reply) does not fit the model's {}-token window, so the extractive summariser wrote this summary.",
                group_digits(*needed),
                group_digits(*window)
            ),
            CompressWarning::DryRunStandIn => {
                "Dry run: the model was not called; the summary shown is the extractive stand-in.".to_owned()
            }
            CompressWarning::EmbeddedExtractive => {
                "The embedded model cannot write summaries, so the extractive summariser wrote this one."
                    .to_owned()
            }
            CompressWarning::CutMoved { asked, landed } if landed > asked => format!(
                "The summary ends at message {landed}, the end of the exchange of message {asked}, so that no request is parted from its reply or tool calls."
            ),
            CompressWarning::CutMoved { asked, landed } => format!(
                "The summary ends at message {landed} instead of {asked}: the last request and the last reply always stay verbatim."
            ),
        }
    }

    /// Why a manual compression that would make the request bigger was
    /// not applied (`before` and `after` in tokens).
    #[must_use]
    pub fn compress_grows(self, before: u64, after: u64) -> String {
        let how = match self {
            Self::Cli => "run it again with --force to apply it anyway",
            Self::App => "nothing is gained by compressing now; try again when the history is longer",
        };
        format!(
            "Not compressed: the summary would make the request bigger ({} → {} tokens), so nothing was changed; {how}.",
            group_digits(before),
            group_digits(after)
        )
    }

    /// Why a compression changed nothing.
    #[must_use]
    pub fn compress_error(self, error: &CompressError) -> String {
        match error {
            CompressError::NotWorthIt { percent } => format!(
                "Compression skipped: it would save only about {percent}% of the context; {} forces it.",
                self.commands().compress
            ),
            _ => error.to_string(),
        }
    }

    /// A problem of the turn.
    #[must_use]
    pub fn turn_notice(self, notice: &TurnNotice) -> String {
        match notice {
            TurnNotice::OutputLimit { max_tokens } => format!(
                "the reply stopped at the output limit ({max_tokens} tokens); ask to continue, or raise [model] max_tokens"
            ),
            TurnNotice::WindowFull {
                prompt_tokens,
                completion_tokens,
            } => format!(
                "the reply stopped after {} tokens because the server's context window filled ({} prompt + {} reply tokens); ask to continue, or give the server a larger window",
                group_digits(*completion_tokens),
                group_digits(*prompt_tokens),
                group_digits(*completion_tokens)
            ),
            TurnNotice::CutOff => "the reply was cut off before it ended".to_owned(),
            TurnNotice::EmptyReply => {
                "the provider ended the reply without sending anything; try again".to_owned()
            }
            TurnNotice::Provider(text) => text.clone(),
            TurnNotice::TooLong => {
                let c = self.commands();
                format!(
                    "the request is too long for the model's context window; compress the session ({}) or start a new one ({})",
                    c.compress, c.new_session
                )
            }
            TurnNotice::Prepare(e) => e.to_string(),
            TurnNotice::MaxRounds { max } => format!(
                "the turn stopped after {max} tool round{}; send a message to let the model go on, or raise [tools] max_rounds",
                if *max == 1 { "" } else { "s" }
            ),
            TurnNotice::ToolsOff { reason } => format!(
                "the server refused tools ({reason}); tools are off for this session and the request went again without them"
            ),
        }
    }
}

/// `process 1234 on host since 12:03`: who holds a session's lease.
fn held_by(by: &crate::store::Lease) -> String {
    // The reader's own clock time.
    let since = jiff::Timestamp::from_millisecond(by.acquired_at)
        .map(|t| {
            t.to_zoned(jiff::tz::TimeZone::system())
                .strftime("%H:%M")
                .to_string()
        })
        .unwrap_or_default();
    format!("process {} on {} since {since}", by.pid, by.host)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REASONS: [LockReason; 6] = [
        LockReason::NothingToCompress,
        LockReason::UnderTenPercent,
        LockReason::NoSaving,
        LockReason::NoProgress,
        LockReason::StillOverThreshold,
        LockReason::FallbacksInRow,
    ];

    #[test]
    fn the_apps_lockout_names_slash_commands_and_never_strata() {
        for reason in REASONS {
            let text = Client::App.lockout(&reason);
            assert!(
                text.contains("/compress <topic>") && text.contains("/new"),
                "{text}"
            );
            assert!(!text.contains("strata"), "{text}");
        }
        let off = Client::App.compression_off();
        assert!(
            off.contains("/compress still works") && !off.contains("strata"),
            "{off}"
        );
    }

    #[test]
    fn the_command_lines_lockout_names_subcommands_and_no_slash_command() {
        for reason in REASONS {
            let text = Client::Cli.lockout(&reason);
            assert!(
                text.contains("`strata compress ID --topic T`") && text.contains("`strata chat --new`"),
                "{text}"
            );
            assert!(!text.contains("/compress") && !text.contains("/new"), "{text}");
        }
        let off = Client::Cli.compression_off();
        assert!(
            off.contains("`strata compress ID` still works") && !off.contains("/compress"),
            "{off}"
        );
    }

    #[test]
    fn each_reason_has_its_own_clause() {
        let texts: std::collections::HashSet<String> =
            REASONS.iter().map(|r| Client::App.lockout(r)).collect();
        assert_eq!(texts.len(), REASONS.len());
        assert_eq!(
            Client::Cli.lockout(&LockReason::Other("the moon is full".into())),
            "Automatic compression is paused: the moon is full; start a new session (`strata chat --new`) or compress by hand (`strata compress ID --topic T`)."
        );
    }

    #[test]
    fn undo_and_force_advice_follow_the_client() {
        let shrank = CompressWarning::SummaryShrank {
            tokens: 1_200,
            earlier: 5_000,
        };
        let app = Client::App.compress_warning(&shrank);
        let cli = Client::Cli.compress_warning(&shrank);
        assert!(
            app.contains("(1,200 tokens)") && app.contains("/undo-compress brings"),
            "{app}"
        );
        assert!(
            cli.contains("`strata undo-compress` brings") && !cli.contains("/undo"),
            "{cli}"
        );
        let skipped = CompressError::NotWorthIt { percent: 4 };
        assert_eq!(
            Client::App.compress_error(&skipped),
            "Compression skipped: it would save only about 4% of the context; /compress forces it."
        );
        assert!(
            Client::Cli
                .compress_error(&skipped)
                .ends_with("; `strata compress ID` forces it.")
        );
        let too_long = Client::App.turn_notice(&TurnNotice::TooLong);
        assert!(
            too_long.contains("(/compress)") && !too_long.contains("strata"),
            "{too_long}"
        );
    }

    #[test]
    fn turn_notices_read_the_same_for_both_clients() {
        let limit = TurnNotice::OutputLimit { max_tokens: 1024 };
        assert_eq!(Client::App.turn_notice(&limit), Client::Cli.turn_notice(&limit));
        assert!(
            Client::Cli
                .turn_notice(&limit)
                .contains("output limit (1024 tokens)")
        );
        assert_eq!(
            Client::App.turn_notice(&TurnNotice::Provider("no network".into())),
            "no network"
        );
    }
}
