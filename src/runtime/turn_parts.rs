//! What a turn adds to the user's message before it is sent (DESIGN §4
//! "Per-turn reminders", §6 stage 1 "enrich"): files named as `@path`, read
//! here and formatted by [`crate::pipeline::enrich`], and the output of
//! `prompt.turn_reminder_cmd` as a `<system-reminder>` that lives for one
//! turn.

use super::Runtime;
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
    /// One sentence per problem (a named file that could not be read, a
    /// reminder command that failed).
    pub notices: Vec<String>,
}

impl Runtime {
    /// The parts a turn adds to `text`: each `@path` (absolute, `~/…`, or
    /// relative to the session's workspace) that names a readable file is embedded
    /// (once per content), one that does not gets a note and a notice; the
    /// reminder command runs in the workspace with a 10 s limit.
    #[must_use]
    pub fn turn_parts(&self, conversation: &Conversation, text: &str) -> TurnParts {
        let mut out = TurnParts::default();
        let workspace = Path::new(&conversation.session().workspace);
        for reference in enrich::attachment_refs(text) {
            let path = match (reference.strip_prefix("~/"), dirs::home_dir()) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => workspace.join(&reference),
            };
            match crate::workspace::read_attachment(&path, enrich::ATTACHMENT_MAX_CHARS) {
                Ok(content) => out.parts.push((
                    enrich::attachment_part(&reference, &content, conversation.messages()),
                    None,
                )),
                Err(why) => {
                    out.notices.push(format!(
                        "@{reference} was not attached ({why}); the message is sent as typed."
                    ));
                    out.parts.push((enrich::attachment_note(&reference, &why), None));
                }
            }
        }
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
