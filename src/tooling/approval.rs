//! Approval policy and rules: run, ask or deny a call.
//!
//! Owns the `[tools] approval` policy ([`Policy`]), the `[tools] allow` and
//! `deny` rules ([`Rule`], [`Rules`]), the one decision every call goes
//! through ([`decide`]; what it refuses in every mode: [`refusal`]; reads
//! that ask because they look like credentials: [`sensitive_read`]), what "allow until strata exits" grants
//! ([`grant_for`]) and the sentence a denied call's result says
//! ([`denied_text`]). Invariant: an allowing command prefix never matches a
//! command that chains, pipes, backgrounds or substitutes another command
//! (`;`, `&&`, `||`, `|`, `&`, a newline, a backtick, `$(`, `<(`), nor one
//! that redirects output (`>`, which could overwrite any file), so
//! `shell:git status` cannot allow `git status; rm -rf x`; such a command
//! is asked about instead. A denying prefix matches the command or any
//! command chained inside it (a best effort: `bash -c 'rm …'` still gets
//! past `shell:rm`, which is why shell is never confined by a deny list).

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use super::Access;
use super::access::may_change;
use super::credentials::{self, Credential};
use super::sandbox::Confinement;

/// `[tools] approval` / `--approve`: what happens to calls that change
/// files or run programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Ask the user (the app; headless runs treat it as [`Policy::ReadOnly`]).
    Ask,
    /// Deny every call that is not read-only and not allowed by a rule.
    ReadOnly,
    /// Run every call that no deny rule stops.
    All,
    /// Run sandboxed `shell` commands without the network without asking;
    /// ask (the app) or deny (headless) everything else that may change
    /// things, as [`Policy::Ask`] / [`Policy::ReadOnly`]. Without a
    /// sandbox to run in, it asks like [`Policy::Ask`].
    Sandboxed,
}

impl Policy {
    /// Every policy, in the order the error message lists them.
    pub const ALL: [Self; 4] = [Self::Ask, Self::ReadOnly, Self::All, Self::Sandboxed];

    /// The config and flag value: `"ask"`, `"read-only"`, `"all"`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::ReadOnly => "read-only",
            Self::All => "all",
            Self::Sandboxed => "sandboxed",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A value of `approval` / `--approve` that is not a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPolicy(pub String);

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown approval policy '{}'; use ask, read-only, all or sandboxed",
            self.0
        )
    }
}

impl std::error::Error for UnknownPolicy {}

impl FromStr for Policy {
    type Err = UnknownPolicy;

    /// Parses `ask`, `read-only`, `all` or `sandboxed` (surrounding spaces
    /// ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == t)
            .ok_or_else(|| UnknownPolicy(s.to_owned()))
    }
}

/// One entry of `[tools] allow` or `deny`, or a grant for the session.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// `"edit_file"`: every call of the tool.
    Tool(String),
    /// `"shell:cargo test"`: `shell` calls whose command starts with this
    /// prefix at a word boundary and chains nothing (see the module doc).
    Command(String),
}

impl Rule {
    /// Whether the rule, in `[tools] allow` or a grant, lets a call of
    /// `name` run; `command` is its shell command (for `shell`). A command
    /// prefix never allows a command that chains another (module doc).
    #[must_use]
    pub fn allows(&self, name: &str, command: Option<&str>) -> bool {
        match self {
            Self::Tool(tool) => tool == name,
            Self::Command(prefix) => {
                name == "shell" && command.is_some_and(|c| !chains(c) && prefix_matches(prefix, c))
            }
        }
    }

    /// Whether the rule, in `[tools] deny`, stops a call of `name`: a
    /// command prefix matches the command or any command chained in it.
    #[must_use]
    pub fn forbids(&self, name: &str, command: Option<&str>) -> bool {
        match self {
            Self::Tool(tool) => tool == name,
            Self::Command(prefix) => {
                name == "shell"
                    && command.is_some_and(|c| {
                        c.split([';', '&', '|', '\n', '\r', '`', '(', ')', '>', '<', '{', '}'])
                            .any(|part| prefix_matches(prefix, part))
                    })
            }
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tool(tool) => f.write_str(tool),
            Self::Command(prefix) => write!(f, "shell:{prefix}"),
        }
    }
}

/// A `[tools] allow` / `deny` entry that is not a rule; its message is one
/// sentence saying what is wrong and what a rule looks like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRule {
    /// The entry as written.
    pub rule: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl fmt::Display for BadRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tool rule '{}' {}; write a tool name such as \"edit_file\" or a command prefix such as \
             \"shell:cargo test\"",
            self.rule, self.problem
        )
    }
}

impl std::error::Error for BadRule {}

impl FromStr for Rule {
    type Err = BadRule;

    /// `"NAME"` → [`Rule::Tool`], `"shell:PREFIX"` → [`Rule::Command`]
    /// (spaces around the name and the prefix trimmed). Errors: an empty
    /// rule, a name with characters outside `[A-Za-z0-9_-]`, an empty
    /// prefix, a prefix on a tool other than `shell`, or a prefix holding
    /// one of the chaining tokens it could never match.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |problem| BadRule {
            rule: s.to_owned(),
            problem,
        };
        let t = s.trim();
        if t.is_empty() {
            return Err(bad("is empty"));
        }
        let Some((tool, prefix)) = t.split_once(':') else {
            if !valid_name(t) {
                return Err(bad("is not a tool name (letters, digits, '_' and '-' only)"));
            }
            return Ok(Self::Tool(t.to_owned()));
        };
        if tool.trim() != "shell" {
            return Err(bad("gives a command prefix for a tool other than shell"));
        }
        let prefix = prefix.trim();
        if prefix.is_empty() {
            return Err(bad("has an empty command prefix"));
        }
        if chains(prefix) {
            return Err(bad(
                "has a command prefix with ;, &, |, >, a newline, a backtick, $( or <( in it",
            ));
        }
        Ok(Self::Command(normalise(prefix)))
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Whether `command` holds a token that runs another command after, beside
/// or inside it — `;`, `&` (so `&&`), `|` (so `||`), a newline (or `\r`), a
/// backtick, `$(`, `<(` — or redirects output (`>`, so `>(` too).
fn chains(command: &str) -> bool {
    command.contains([';', '&', '|', '\n', '\r', '`', '>'])
        || command.contains("$(")
        || command.contains("<(")
}

/// Runs of whitespace made one space, so `git  status` and `git status` agree.
fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `prefix` starts `command` at a word boundary, runs of
/// whitespace counting as one space.
fn prefix_matches(prefix: &str, command: &str) -> bool {
    let command = normalise(command);
    match command.strip_prefix(&normalise(prefix)) {
        Some(rest) => rest.is_empty() || rest.starts_with(' '),
        None => false,
    }
}

/// `[tools] allow` and `deny`, as parsed from the config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    /// Calls that run without asking.
    pub allow: Vec<Rule>,
    /// Calls that never run, whatever else says.
    pub deny: Vec<Rule>,
}

/// What to do with one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Run it now.
    Run,
    /// Ask the user (the approval overlay).
    Ask,
    /// Do not run it; `reason` is one sentence for the user and the model.
    Deny {
        /// Why, and how to allow it where it can be allowed.
        reason: String,
    },
}

/// The one approval decision of a call of `name` with `arguments` (for
/// `shell`, `arguments["command"]` is the command), in this order: a call
/// [`refusal`] refuses is denied; a matching `deny` rule denies; a call
/// that may not change things ([`may_change`]) runs, unless it reads a
/// file that looks like a credential ([`sensitive_read`]); a matching
/// `allow` rule or session grant runs; [`Policy::All`] runs; [`Policy::Ask`]
/// asks; [`Policy::ReadOnly`] denies, saying how to allow the call.
#[must_use]
pub fn decide(
    access: Access,
    name: &str,
    arguments: &Value,
    policy: Policy,
    rules: &Rules,
    grants: &[Rule],
) -> Verdict {
    decide_in(
        access,
        name,
        arguments,
        policy,
        rules,
        grants,
        &Confinement::unconfined(),
    )
}

/// [`decide`] for a session whose `shell` runs in `sandbox`: after the
/// refusal and the deny rules, a call that asks to leave the sandbox
/// ([`Confinement::leaving`]) is asked about in the app and denied
/// headless, whatever the policy, the allow rules and the grants say (the
/// command line's `--sandbox off` / `--network` widen the sandbox itself,
/// so such a call no longer leaves it); [`Policy::Sandboxed`] runs a
/// sandboxed `shell` call without the network.
#[must_use]
pub fn decide_in(
    access: Access,
    name: &str,
    arguments: &Value,
    policy: Policy,
    rules: &Rules,
    grants: &[Rule],
    sandbox: &Confinement,
) -> Verdict {
    let command = command_of(name, arguments);
    if let Some(reason) = refusal(name, arguments) {
        return Verdict::Deny { reason };
    }
    if let Some(rule) = deny_rule(rules, name, arguments) {
        return Verdict::Deny {
            reason: format!("the rule \"{rule}\" in [tools] deny forbids this call"),
        };
    }
    if let Some(leave) = sandbox.leaving(name, arguments) {
        if sandbox.interactive {
            return Verdict::Ask;
        }
        let flag = if leave.off { "--sandbox off" } else { "--network" };
        return Verdict::Deny {
            reason: format!(
                "this call {}, and only the user can let a command leave the sandbox; headless, run with --approve all {flag}",
                leave.describe()
            ),
        };
    }
    let unchanging = !may_change(access) && sensitive_read(name, arguments).is_none();
    if unchanging || rules.allow.iter().chain(grants).any(|r| r.allows(name, command)) {
        return Verdict::Run;
    }
    let word = if policy == Policy::Sandboxed {
        "sandboxed (headless, only sandboxed shell commands without the network run)"
    } else {
        "read-only"
    };
    let policy = match policy {
        Policy::Sandboxed if sandbox.sandboxed_offline(name, arguments) => Policy::All,
        Policy::Sandboxed if sandbox.interactive => Policy::Ask,
        Policy::Sandboxed => Policy::ReadOnly,
        p => p,
    };
    match policy {
        Policy::All => Verdict::Run,
        Policy::Ask | Policy::Sandboxed => Verdict::Ask,
        Policy::ReadOnly if command.is_some_and(chains) => Verdict::Deny {
            reason: format!(
                "approval is {word}, and this command chains commands or redirects output \
                 (;, &, |, >, a backtick, $( or a newline), which command-prefix rules never allow; \
                 to allow it, run with --approve all"
            ),
        },
        Policy::ReadOnly if let Some(credential) = sensitive_read(name, arguments) => Verdict::Deny {
            reason: format!(
                "approval is {word}, and this file looks like {}, which is read only when the user allows it; \
                 to allow it, run with --approve all",
                credential.describe()
            ),
        },
        Policy::ReadOnly => {
            let example = match command {
                Some(c) => Some(grant_for_command(c).to_string())
                    .filter(|rule| rule.parse::<Rule>().is_ok())
                    .unwrap_or_else(|| "shell:<command prefix>".to_owned()),
                None => name.to_owned(),
            };
            Verdict::Deny {
                reason: format!(
                    "approval is {word}, so {name} calls do not run; to allow them, run with \
                     --approve all or add \"{example}\" to [tools] allow"
                ),
            }
        }
    }
}

/// Why a call is refused in every approval mode, before any rule: a
/// `memory` note that gives a standing order or looks like a prompt
/// injection ([`crate::prompt::scan_memory`]) — memory goes into every
/// future session's prompt and keeps facts, not orders. The same
/// detector warns about such a line written into `MEMORY.md` by hand.
#[must_use]
pub fn refusal(name: &str, arguments: &Value) -> Option<String> {
    if name != "memory" {
        return None;
    }
    let text = arguments.get("text").and_then(Value::as_str)?;
    let findings = crate::prompt::scan_memory(text);
    if findings.is_empty() {
        return None;
    }
    let list: Vec<String> = findings.iter().map(ToString::to_string).collect();
    Some(format!(
        "the note gives orders for future sessions ({}), and memory keeps facts about the user and the project, not instructions",
        list.join("; ")
    ))
}

/// What a `read_file` call's `path` looks like when it names a file that
/// looks like a credential by its name
/// ([`crate::tooling::credentials::by_name`]): such a read asks first,
/// like a call that changes things. (The handler checks the file it
/// resolves to, and its content, once more.)
#[must_use]
pub fn sensitive_read(name: &str, arguments: &Value) -> Option<Credential> {
    if name != "read_file" {
        return None;
    }
    let path = arguments.get("path").and_then(Value::as_str)?;
    credentials::by_name(std::path::Path::new(path))
}

/// The first `[tools] deny` rule that stops a call of `name` with
/// `arguments`, the one [`decide`] names: what [`DeniedBy::Rule`] carries.
#[must_use]
pub fn deny_rule<'a>(rules: &'a Rules, name: &str, arguments: &Value) -> Option<&'a Rule> {
    let command = command_of(name, arguments);
    rules.deny.iter().find(|r| r.forbids(name, command))
}

fn command_of<'a>(name: &str, arguments: &'a Value) -> Option<&'a str> {
    if name == "shell" {
        arguments.get("command").and_then(Value::as_str)
    } else {
        None
    }
}

/// What "allow until strata exits" grants for a call: for `shell`, a
/// [`Rule::Command`] of the first two words of the command's first line
/// (its first word when it has one), stopping where it chains another
/// command, so the grant is never wider than what the user saw; for any
/// other tool, the [`Rule::Tool`].
#[must_use]
pub fn grant_for(name: &str, arguments: &Value) -> Rule {
    if name == "shell" {
        return grant_for_command(command_of(name, arguments).unwrap_or_default());
    }
    Rule::Tool(name.to_owned())
}

/// See [`grant_for`]: the offer's rule, or (no offer) the whole first
/// line, a rule that allows that line alone or nothing when it chains.
fn grant_for_command(command: &str) -> Rule {
    match offer_for_command(command) {
        GrantOffer::Plain(rule) | GrantOffer::Risky(rule) => rule,
        GrantOffer::None => Rule::Command(normalise(command.lines().next().unwrap_or_default())),
    }
}

/// What the approval overlay offers as "allow until strata exits".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GrantOffer {
    /// Nothing: no command-prefix rule could ever allow this command (it
    /// chains, redirects, opens a loop or a group, or starts with no plain
    /// word or with a variable assignment), so a lasting rule would only
    /// mislead.
    None,
    /// The rule ([`grant_for`]), one key.
    Plain(Rule),
    /// A rule that would allow commands which delete or rewrite files
    /// (`rm`, `git clean`, `git reset --hard`, `dd`, `mkfs`, `chmod`,
    /// `chown`, `find … -delete`) or run any other command (`sudo`, `env`,
    /// `xargs`, `bash`): the overlay asks for a second key with a warning.
    Risky(Rule),
}

/// Shell words that open a compound command: a prefix rule never matches
/// what they run.
const RESERVED: [&str; 15] = [
    "for", "while", "until", "if", "case", "select", "function", "do", "then", "{", "}", "(", "!", "[[",
    "time",
];

/// Programs that delete or rewrite files whatever options follow: a prefix
/// rule of theirs is risky (`find` can `-delete`, `chmod` can `-R`
/// anywhere).
const DESTRUCTIVE: [&str; 10] = [
    "rm", "rmdir", "dd", "mkfs", "shred", "truncate", "chmod", "chown", "chgrp", "find",
];

/// `git` subcommands that throw work away.
const GIT_DESTRUCTIVE: [&str; 5] = ["clean", "reset", "checkout", "restore", "rm"];

/// Programs that run the command they are given: a prefix rule of theirs
/// allows any command at all.
const WRAPPERS: [&str; 24] = [
    "sudo", "doas", "su", "env", "eval", "exec", "command", "builtin", "timeout", "nice", "nohup", "ionice",
    "stdbuf", "xargs", "watch", "chroot", "setsid", "unshare", "nsenter", "strace", "bash", "sh", "zsh",
    "busybox",
];

/// The "allow until strata exits" offer for a call: for `shell`, a prefix
/// of the command's first two words as the shell splits them (`shlex`,
/// quotes respected), stopping at the first word that is not plain (quotes,
/// `$`, globs, escapes); none when a prefix rule could never match the
/// command (see [`GrantOffer::None`]). For any other tool, its
/// [`Rule::Tool`].
#[must_use]
pub fn grant_offer(name: &str, arguments: &Value) -> GrantOffer {
    if name == "shell" {
        return offer_for_command(command_of(name, arguments).unwrap_or_default());
    }
    GrantOffer::Plain(Rule::Tool(name.to_owned()))
}

fn offer_for_command(command: &str) -> GrantOffer {
    if chains(command) {
        return GrantOffer::None;
    }
    let Some(words) = shlex::split(command) else {
        // Unbalanced quotes: the shell would not run it as shown.
        return GrantOffer::None;
    };
    let plain = |w: &str| {
        !w.is_empty()
            && !w.contains([
                '\'', '"', '\\', '$', '*', '?', '[', ']', '{', '}', '(', ')', '<', '~', '#',
            ])
    };
    let raw: Vec<&str> = command
        .split_whitespace()
        .take(2)
        .take_while(|w| plain(w))
        .collect();
    // The raw words are the shell's words only while they hold no quotes.
    if raw.is_empty() || words.first().map(String::as_str) != raw.first().copied() {
        return GrantOffer::None;
    }
    if RESERVED.contains(&raw[0]) || is_assignment(raw[0]) {
        return GrantOffer::None;
    }
    let rule = Rule::Command(raw.join(" "));
    if risky(&raw) {
        GrantOffer::Risky(rule)
    } else {
        GrantOffer::Plain(rule)
    }
}

/// Whether a prefix rule of `words` (a command's first words) could allow
/// deleting or rewriting files, or any command at all: its program (by
/// file name, `/bin/rm` as `rm`, `mkfs.ext4` as `mkfs`) deletes or
/// rewrites, runs another command, or is `git` with a subcommand that
/// throws work away or an option before it (which can hide any).
fn risky(words: &[&str]) -> bool {
    let name = words[0].rsplit('/').next().unwrap_or(words[0]);
    let program = name.split('.').next().unwrap_or(name);
    if DESTRUCTIVE.contains(&program) || WRAPPERS.contains(&program) {
        return true;
    }
    program == "git"
        && words
            .get(1)
            .is_none_or(|w| w.starts_with('-') || GIT_DESTRUCTIVE.contains(w))
}

/// Whether `word` sets a variable for the command after it (`FOO=1`): a
/// prefix that starts with it names no program.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Who denied a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeniedBy {
    /// The user, in the approval overlay.
    User,
    /// A `[tools] deny` rule: its text (`shell:rm`, from [`deny_rule`]),
    /// not the verdict's reason.
    Rule(String),
    /// The read-only policy.
    ReadOnly,
    /// Refused in every mode ([`refusal`]).
    Refused,
}

/// The result the model reads for a denied call of `name`: who denied it,
/// the `reason` when there is one, and what to do instead.
#[must_use]
pub fn denied_text(name: &str, reason: Option<&str>, by: DeniedBy) -> String {
    let reason = reason.map(str::trim).filter(|r| !r.is_empty());
    let because = reason
        .map(|r| format!(": {}", r.trim_end_matches('.')))
        .unwrap_or_default();
    match by {
        DeniedBy::User => format!(
            "The user denied this {name} call{because}. Do not retry it; ask the user or choose another approach."
        ),
        DeniedBy::Rule(rule) => format!(
            "This {name} call was denied by the rule \"{rule}\" in [tools] deny{because}. Do not retry it; \
             choose another approach or ask the user to change the rule."
        ),
        DeniedBy::Refused => format!(
            "This {name} call was refused{because}. Do not retry it or reword it; tell the user what you wanted to keep, and they can add it themselves."
        ),
        DeniedBy::ReadOnly if reason.is_some() => format!(
            "This {name} call was not run{because}. Do not retry it; use the read-only tools or ask the user to allow it."
        ),
        DeniedBy::ReadOnly => format!(
            "This {name} call was not run because approval is read-only. Do not retry it; use the \
             read-only tools or ask the user to allow {name} (--approve all, or [tools] allow)."
        ),
    }
}

#[cfg(test)]
#[path = "approval_tests.rs"]
mod tests;
