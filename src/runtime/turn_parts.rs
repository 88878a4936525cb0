//! What a turn adds to the user's message before it is sent (DESIGN §4
//! "Per-turn reminders", §6 stage 1 "enrich"): files named as `@path`, read
//! here and formatted by [`crate::pipeline::enrich`], and the output of
//! `prompt.turn_reminder_cmd` as a `<system-reminder>` that lives for one
//! turn.

use super::Runtime;
use super::attach::{AttachConsent, Mention, Withheld};
use crate::conversation::Conversation;
use crate::pipeline::enrich;
use std::path::Path;
use std::time::Duration;

/// How long `prompt.turn_reminder_cmd` may run before each turn.
pub const TURN_REMINDER_TIMEOUT: Duration = Duration::from_secs(10);

/// Characters of the reminder command's output sent at most.
pub const TURN_REMINDER_MAX_CHARS: usize = 20_000;

/// The parts for one turn, and notices for the user.
#[derive(Debug, Default)]
pub struct TurnParts {
    /// `(text, ephemeral_ttl)` for [`Conversation::attach`], in order.
    pub parts: Vec<(String, Option<u32>)>,
    /// One sentence per problem (a named file that could not be read, the
    /// files withheld, a reminder command that failed).
    pub notices: Vec<String>,
}

impl Runtime {
    /// The parts a turn adds to `text`: each `@path` (absolute, `~/…`, or
    /// relative to the session's workspace) that names a readable file
    /// inside the workspace or `[tools] allow_paths`, or one `consent`
    /// allows, is embedded (once per content); one that cannot be read gets
    /// a note and a notice; one withheld ([`super::attach`]) gets a note
    /// and, with the others withheld, one notice saying how to allow it;
    /// the reminder command runs in the workspace with a 10 s limit.
    #[must_use]
    pub fn turn_parts(&self, conversation: &Conversation, text: &str, consent: &AttachConsent) -> TurnParts {
        let mut out = TurnParts::default();
        let workspace = Path::new(&conversation.session().workspace);
        let mut withheld = Vec::new();
        for mention in self.mentions(text, workspace, consent) {
            match mention {
                Mention::Attach { reference, path } => {
                    match crate::workspace::read_attachment(&path, enrich::ATTACHMENT_MAX_CHARS) {
                        Ok(content) => out.parts.push((
                            enrich::attachment_part(&reference, &content, conversation.messages()),
                            None,
                        )),
                        Err(why) => not_read(&mut out, &reference, &why),
                    }
                }
                Mention::Invalid { reference, why } => not_read(&mut out, &reference, &why),
                Mention::Withheld(w) => {
                    out.parts.push((w.note(), None));
                    withheld.push(w);
                }
            }
        }
        out.notices.extend(super::attach::withheld_notice(
            &withheld,
            self.client() == super::Client::Cli,
        ));
        if let Some(cmd) = self
            .config
            .prompt
            .turn_reminder_cmd
            .as_deref()
            .filter(|c| !c.trim().is_empty())
        {
            let (output, warnings) = crate::workspace::run_context_cmd(
                "prompt.turn_reminder_cmd",
                cmd,
                workspace,
                TURN_REMINDER_TIMEOUT,
            );
            out.notices.extend(warnings);
            let total = output.output.chars().count();
            let mut text = output.output;
            if total > TURN_REMINDER_MAX_CHARS || output.cut_short {
                text = text.chars().take(TURN_REMINDER_MAX_CHARS).collect();
                out.notices.push(format!(
                    "The output of prompt.turn_reminder_cmd was cut to its first {TURN_REMINDER_MAX_CHARS} characters; make the command print less."
                ));
            }
            if let Some(part) = enrich::reminder_part(&text) {
                out.parts.push((part, Some(1)));
            }
        }
        out
    }
}

/// A mention whose file could not be read: a note for the model and a
/// notice for the user.
fn not_read(out: &mut TurnParts, reference: &str, why: &str) {
    out.notices.push(format!(
        "@{reference} was not attached ({why}); the message is sent as typed."
    ));
    out.parts.push((enrich::attachment_note(reference, why), None));
}

impl Runtime {
    /// The `@path` mentions of `text` in `workspace`, judged with
    /// `[tools] allow_paths` and `consent` ([`super::attach::mentions`]).
    #[must_use]
    pub fn mentions(&self, text: &str, workspace: &Path, consent: &AttachConsent) -> Vec<Mention> {
        super::attach::mentions(text, workspace, &self.config.tools.allow_paths, consent)
    }

    /// The mentions of `text` that would be withheld.
    #[must_use]
    pub fn withheld(&self, text: &str, workspace: &Path, consent: &AttachConsent) -> Vec<Withheld> {
        self.mentions(text, workspace, consent)
            .into_iter()
            .filter_map(|m| match m {
                Mention::Withheld(w) => Some(w),
                _ => None,
            })
            .collect()
    }
}
