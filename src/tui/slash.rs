//! Slash commands: the typed form of what the user can type after `/`,
//! with a description, an argument hint, whether it may run while a reply
//! streams, parsing and Tab completion. Display strings are produced here
//! and never matched on elsewhere.

/// One slash command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SlashCommand {
    /// Start a new session.
    New,
    /// Compress the history, optionally around a topic.
    Compress,
    /// Undo the last compression.
    UndoCompress,
    /// Open the session picker.
    Sessions,
    /// Resume a session by id.
    Resume,
    /// Rename the session.
    Rename,
    /// Fork the session.
    Fork,
    /// Open the prompt inspector.
    Prompt,
    /// Open the request inspector.
    Inspect,
    /// Apply changed instruction files, memory and skills.
    Reload,
    /// Switch the model.
    Model,
    /// Remember something in `MEMORY.md`.
    Memory,
    /// Load a skill.
    Skill,
    /// Export the session.
    Export,
    /// List the tools with their schema tokens, or switch one on or off.
    Tools,
    /// Undo the latest file change of a tool.
    UndoEdit,
    /// List the MCP servers, switch one, accept or decline `.mcp.json`.
    Mcp,
    /// Open the context list.
    Context,
    /// Pin a message.
    Pin,
    /// Unpin a message.
    Unpin,
    /// Exclude a message from every request.
    Exclude,
    /// Include an excluded message again.
    Include,
    /// Undo the last edit and resend.
    UndoResend,
    /// Take the session over from another strata that has it open.
    TakeOver,
    /// Pause or resume automatic compression for the session.
    AutoCompress,
    /// The notices log.
    Log,
    /// Show keys and commands.
    Help,
    /// Leave.
    Quit,
}

/// Every command, in the order help lists them.
pub const ALL: [SlashCommand; 28] = [
    SlashCommand::New,
    SlashCommand::Compress,
    SlashCommand::UndoCompress,
    SlashCommand::Sessions,
    SlashCommand::Resume,
    SlashCommand::Rename,
    SlashCommand::Fork,
    SlashCommand::Prompt,
    SlashCommand::Inspect,
    SlashCommand::Reload,
    SlashCommand::Model,
    SlashCommand::Memory,
    SlashCommand::Skill,
    SlashCommand::Export,
    SlashCommand::Tools,
    SlashCommand::UndoEdit,
    SlashCommand::Mcp,
    SlashCommand::Context,
    SlashCommand::Pin,
    SlashCommand::Unpin,
    SlashCommand::Exclude,
    SlashCommand::Include,
    SlashCommand::UndoResend,
    SlashCommand::TakeOver,
    SlashCommand::AutoCompress,
    SlashCommand::Log,
    SlashCommand::Help,
    SlashCommand::Quit,
];

impl SlashCommand {
    /// The name typed after `/`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::New => "new",
            Self::Compress => "compress",
            Self::UndoCompress => "undo-compress",
            Self::Context => "context",
            Self::Pin => "pin",
            Self::Unpin => "unpin",
            Self::Exclude => "exclude",
            Self::Include => "include",
            Self::UndoResend => "undo-resend",
            Self::TakeOver => "take-over",
            Self::AutoCompress => "auto-compress",
            Self::Sessions => "sessions",
            Self::Resume => "resume",
            Self::Rename => "rename",
            Self::Fork => "fork",
            Self::Prompt => "prompt",
            Self::Inspect => "inspect",
            Self::Reload => "reload",
            Self::Model => "model",
            Self::Memory => "memory",
            Self::Skill => "skill",
            Self::Export => "export",
            Self::Tools => "tools",
            Self::UndoEdit => "undo-edit",
            Self::Mcp => "mcp",
            Self::Log => "log",
            Self::Help => "help",
            Self::Quit => "quit",
        }
    }

    /// The argument it takes, as shown in help (`""` for none).
    #[must_use]
    pub fn args(self) -> &'static str {
        match self {
            Self::Compress => "[topic | here N]",
            Self::Pin | Self::Unpin | Self::Exclude | Self::Include => "[pos]",
            Self::Resume => "[id]",
            Self::Rename => "<title>",
            Self::Model => "[name]",
            Self::Memory => "<text>",
            Self::Skill => "[name]",
            Self::Export => "[md|json]",
            Self::Tools => "[on|off NAME]",
            Self::AutoCompress => "<on|off>",
            Self::Mcp => "[on|off SERVER|accept|decline]",
            _ => "",
        }
    }

    /// One line saying what it does.
    #[must_use]
    pub fn description(self) -> &'static str {
        match self {
            Self::New => "start a new session",
            Self::Compress => {
                "compress the history now, keeping the topic in focus; here N keeps the last N exchanges"
            }
            Self::UndoCompress => "restore the messages archived by the last compression",
            Self::Context => "every message, its state in the next request and its tokens",
            Self::Pin => "pin the selected message (or the last one): never cut, dropped or summarised",
            Self::Unpin => "unpin the selected message (or the last one)",
            Self::Exclude => "leave the selected message out of every request until included",
            Self::Include => "send the selected excluded message again",
            Self::UndoResend => "restore the messages the last edit and resend archived",
            Self::TakeOver => {
                "write to this session though another strata has it open (that one then only reads it)"
            }
            Self::AutoCompress => "pause (off) or resume (on) automatic compression for this session",
            Self::Sessions => "open the session picker",
            Self::Resume => "resume a session by id or id prefix (without one: the picker)",
            Self::Rename => "rename this session",
            Self::Fork => "continue this session in a copy",
            Self::Prompt => "inspect the frozen system prompt",
            Self::Inspect => "inspect the next request exactly as it will be sent",
            Self::Reload => "apply changed instruction files, memory and skills",
            Self::Model => "switch the model of this session",
            Self::Memory => "append a line to MEMORY.md",
            Self::Skill => "load a skill into the conversation",
            Self::Export => "export this session to a file in the data directory",
            Self::Tools => {
                "list the tools and their schema tokens; off NAME / on NAME switches one for this session"
            }
            Self::UndoEdit => "restore the file the latest write_file or edit_file changed",
            Self::Mcp => {
                "list the MCP servers, their tools and tokens; off/on SERVER switches one for this session; accept or decline the workspace's .mcp.json"
            }
            Self::Log => "every notice, warning and error of this session, whole, newest first",
            Self::Help => "show keys and commands",
            Self::Quit => "leave strata",
        }
    }

    /// Whether it may run while a reply streams: only what needs nothing
    /// from the session worker (which is busy with the reply).
    #[must_use]
    pub fn available_while_streaming(self) -> bool {
        matches!(
            self,
            Self::Sessions | Self::Prompt | Self::Help | Self::Log | Self::Quit
        )
    }

    /// Whether an argument is required.
    #[must_use]
    pub fn needs_arg(self) -> bool {
        self.args().starts_with('<')
    }
}

/// A parsed command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The command.
    pub command: SlashCommand,
    /// The rest of the line, trimmed (empty when none).
    pub arg: String,
}

/// Why a line starting with `/` is not a command.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SlashError {
    /// No such command; the message lists the known ones.
    #[error("unknown command /{0}; known commands: {list}", list = known_list())]
    Unknown(String),
    /// A required argument is missing.
    #[error("/{} needs {}", .0.name(), .0.args())]
    MissingArg(SlashCommand),
}

/// `/new, /compress, ...` on one line.
fn known_list() -> String {
    ALL.iter()
        .map(|c| format!("/{}", c.name()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parses `line` when it starts with `/`; `None` for ordinary text
/// (including `//...`, which sends a message starting with `/`).
///
/// # Errors
/// [`SlashError`] for an unknown command or a missing argument.
pub fn parse(line: &str) -> Option<Result<Invocation, SlashError>> {
    let rest = line.trim_start().strip_prefix('/')?;
    if rest.starts_with('/') {
        return None;
    }
    let (name, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let arg = arg.trim().to_owned();
    let Some(command) = ALL.iter().copied().find(|c| c.name() == name) else {
        return Some(Err(SlashError::Unknown(name.to_owned())));
    };
    if command.needs_arg() && arg.is_empty() {
        return Some(Err(SlashError::MissingArg(command)));
    }
    Some(Ok(Invocation { command, arg }))
}

/// Tab completion of a command name: for `/com` returns `/compress `; when
/// several commands share the typed prefix, their longest common prefix
/// (or `None` when nothing would be added). Lines with a space after the
/// name, or not starting with `/`, are not completed.
#[must_use]
pub fn complete(line: &str) -> Option<String> {
    let typed = line.strip_prefix('/')?;
    if typed.contains(char::is_whitespace) {
        return None;
    }
    let matches: Vec<&str> = ALL
        .iter()
        .map(|c| c.name())
        .filter(|n| n.starts_with(typed))
        .collect();
    match matches.as_slice() {
        [] => None,
        [one] => Some(format!("/{one} ")),
        many => {
            let first = many[0];
            let common = (typed.len()..=first.len())
                .rev()
                .find(|&n| many.iter().all(|m| m.get(..n) == first.get(..n)))
                .unwrap_or(typed.len());
            (common > typed.len()).then(|| format!("/{}", &first[..common]))
        }
    }
}

/// Commands whose name starts with what follows `/` in `line` (for the
/// hint under the composer).
#[must_use]
pub fn candidates(line: &str) -> Vec<SlashCommand> {
    let Some(typed) = line.strip_prefix('/') else {
        return Vec::new();
    };
    if typed.contains(char::is_whitespace) {
        return Vec::new();
    }
    ALL.iter()
        .copied()
        .filter(|c| c.name().starts_with(typed))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_with_and_without_arguments() {
        let inv = parse("/compress auth flow").unwrap().unwrap();
        assert_eq!(inv.command, SlashCommand::Compress);
        assert_eq!(inv.arg, "auth flow");
        assert_eq!(parse("/new").unwrap().unwrap().command, SlashCommand::New);
        assert_eq!(parse("hello"), None);
        assert_eq!(parse("//not a command"), None);
    }

    #[test]
    fn unknown_command_lists_the_known_ones() {
        let err = parse("/frobnicate").unwrap().unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("unknown command /frobnicate"), "{text}");
        for c in ALL {
            assert!(text.contains(&format!("/{}", c.name())), "{text}");
        }
    }

    #[test]
    fn required_argument_is_checked() {
        assert_eq!(
            parse("/rename  ").unwrap().unwrap_err(),
            SlashError::MissingArg(SlashCommand::Rename)
        );
        assert_eq!(
            SlashError::MissingArg(SlashCommand::Rename).to_string(),
            "/rename needs <title>"
        );
    }

    #[test]
    fn tab_completes_unique_and_common_prefixes() {
        assert_eq!(complete("/comp").as_deref(), Some("/compress "));
        assert_eq!(
            complete("/re").as_deref(),
            None,
            "resume, rename, reload share only 're'"
        );
        assert_eq!(
            complete("/und").as_deref(),
            Some("/undo-"),
            "undo-compress, undo-edit and undo-resend"
        );
        assert_eq!(complete("/un"), None, "unpin too");
        assert_eq!(complete("/unp").as_deref(), Some("/unpin "));
        assert_eq!(complete("/undo-e").as_deref(), Some("/undo-edit "));
        assert_eq!(complete("/t"), None, "tools and take-over");
        assert_eq!(complete("/to").as_deref(), Some("/tools "));
        assert_eq!(complete("/s").as_deref(), None, "sessions and skill");
        assert_eq!(complete("/se").as_deref(), Some("/sessions "));
        assert_eq!(complete("/zz"), None);
        assert_eq!(complete("hi"), None);
        assert_eq!(candidates("/re").len(), 3);
    }
}
