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
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(s: &str) -> Rule {
        s.parse().unwrap()
    }

    fn shell(command: &str) -> Value {
        json!({ "command": command })
    }

    fn allow(rules: &[&str]) -> Rules {
        Rules {
            allow: rules.iter().map(|r| rule(r)).collect(),
            deny: Vec::new(),
        }
    }

    fn run_shell(command: &str, policy: Policy, rules: &Rules) -> Verdict {
        decide(Access::Run, "shell", &shell(command), policy, rules, &[])
    }

    #[test]
    fn policies_parse_and_print() {
        for p in Policy::ALL {
            assert_eq!(p.as_str().parse::<Policy>(), Ok(p));
            assert_eq!(p.to_string(), p.as_str());
        }
        assert_eq!(" read-only ".parse::<Policy>(), Ok(Policy::ReadOnly));
        let err = "readonly".parse::<Policy>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown approval policy 'readonly'; use ask, read-only, all or sandboxed"
        );
    }

    #[test]
    fn rules_parse_and_print_back() {
        assert_eq!(rule("edit_file"), Rule::Tool("edit_file".into()));
        assert_eq!(rule("shell:cargo test"), Rule::Command("cargo test".into()));
        assert_eq!(rule(" shell:  cargo   test "), Rule::Command("cargo test".into()));
        assert_eq!(rule("srv__lookup"), Rule::Tool("srv__lookup".into()));
        for text in ["edit_file", "shell:cargo test", "shell:git status -s"] {
            assert_eq!(rule(text).to_string(), text);
        }
    }

    #[test]
    fn malformed_rules_are_refused_with_a_sentence() {
        let err = |s: &str| s.parse::<Rule>().unwrap_err();
        assert_eq!(err("").problem, "is empty");
        assert_eq!(err("   ").problem, "is empty");
        assert_eq!(err("shell:").problem, "has an empty command prefix");
        assert_eq!(
            err("edit_file:x").problem,
            "gives a command prefix for a tool other than shell"
        );
        assert!(err("edit file").problem.starts_with("is not a tool name"));
        assert!(
            err("shell:git status; rm")
                .problem
                .contains("a command prefix with")
        );
        assert!(err("shell:ls > out").problem.contains("a command prefix with"));
        let text = err("").to_string();
        assert!(
            text.starts_with("tool rule '' is empty; write a tool name such as"),
            "{text}"
        );
    }

    #[test]
    fn a_prefix_is_offered_only_where_it_could_match_and_twice_where_it_deletes() {
        let offer = |c: &str| grant_offer("shell", &shell(c));
        assert_eq!(offer("for i in 1 2; do echo $i; done"), GrantOffer::None);
        // `;` in quotes still keeps every prefix rule off it: none is offered.
        assert_eq!(offer("printf 'a;b' x"), GrantOffer::None);
        assert_eq!(offer("printf 'a b' x"), GrantOffer::Plain(rule("shell:printf")));
        assert_eq!(offer("echo 'unbalanced"), GrantOffer::None);
        assert_eq!(offer("$(x) y"), GrantOffer::None);
        assert_eq!(
            offer("git status --short"),
            GrantOffer::Plain(rule("shell:git status"))
        );
        assert_eq!(offer("rm -rf build"), GrantOffer::Risky(rule("shell:rm -rf")));
        assert_eq!(
            offer("git reset --hard HEAD"),
            GrantOffer::Risky(rule("shell:git reset"))
        );
        assert_eq!(offer("git reset src"), GrantOffer::Risky(rule("shell:git reset")));
        assert_eq!(
            offer("git clean -fdx"),
            GrantOffer::Risky(rule("shell:git clean"))
        );
        assert_eq!(
            offer("mkfs.ext4 /dev/x"),
            GrantOffer::Risky(rule("shell:mkfs.ext4 /dev/x"))
        );
        assert_eq!(offer("chmod -R 777 ."), GrantOffer::Risky(rule("shell:chmod -R")));
        // `chmod 644` as a rule allows `chmod 644 -R /`.
        assert_eq!(offer("chmod 644 a"), GrantOffer::Risky(rule("shell:chmod 644")));
        assert_eq!(
            offer("chmod 777 -R /"),
            GrantOffer::Risky(rule("shell:chmod 777"))
        );
        // A program that runs another command, or one named by its path.
        assert_eq!(
            offer("sudo rm -rf build"),
            GrantOffer::Risky(rule("shell:sudo rm"))
        );
        assert_eq!(offer("env X=1 ls"), GrantOffer::Risky(rule("shell:env X=1")));
        assert_eq!(offer("xargs rm"), GrantOffer::Risky(rule("shell:xargs rm")));
        assert_eq!(
            offer("/bin/rm -rf build"),
            GrantOffer::Risky(rule("shell:/bin/rm -rf"))
        );
        // An option before git's subcommand can hide any subcommand.
        assert_eq!(
            offer("git -C . reset --hard"),
            GrantOffer::Risky(rule("shell:git -C"))
        );
        assert_eq!(offer("cargo test"), GrantOffer::Plain(rule("shell:cargo test")));
        assert_eq!(offer("ls -la"), GrantOffer::Plain(rule("shell:ls -la")));
        // A variable assignment first names no program: no rule.
        assert_eq!(offer("FOO=1 rm -rf build"), GrantOffer::None);
        assert_eq!(offer("find . -name x"), GrantOffer::Risky(rule("shell:find .")));
        assert_eq!(offer("dd if=a of=b"), GrantOffer::Risky(rule("shell:dd if=a")));
        assert_eq!(
            grant_offer("edit_file", &json!({})),
            GrantOffer::Plain(rule("edit_file"))
        );
    }

    #[test]
    fn a_prefix_matches_at_a_word_boundary() {
        let rules = allow(&["shell:git status"]);
        assert_eq!(run_shell("git status", Policy::ReadOnly, &rules), Verdict::Run);
        assert_eq!(run_shell("git status -s", Policy::ReadOnly, &rules), Verdict::Run);
        assert_eq!(
            run_shell("  git   status\t-s", Policy::ReadOnly, &rules),
            Verdict::Run
        );
        assert_eq!(run_shell("git statusx", Policy::Ask, &rules), Verdict::Ask);
        assert_eq!(run_shell("git stat", Policy::Ask, &rules), Verdict::Ask);
        assert_eq!(run_shell("git log", Policy::Ask, &rules), Verdict::Ask);
    }

    #[test]
    fn a_prefix_never_allows_a_chained_command() {
        let rules = allow(&["shell:git status"]);
        for command in [
            "git status; touch X",
            "git status && rm -rf x",
            "git status || rm -rf x",
            "git status | sh",
            "git status & rm -rf x",
            "git status $(touch x)",
            "git status `touch x`",
            "git status\ntouch x",
            "git status\rtouch x",
            "git status > ~/.bashrc",
            "git status <(touch x)",
        ] {
            assert_eq!(
                run_shell(command, Policy::Ask, &rules),
                Verdict::Ask,
                "{command:?}"
            );
            let grants = [rule("shell:git status")];
            let v = decide(
                Access::Run,
                "shell",
                &shell(command),
                Policy::Ask,
                &Rules::default(),
                &grants,
            );
            assert_eq!(v, Verdict::Ask, "grant, {command:?}");
        }
    }

    #[test]
    fn a_tool_rule_or_grant_allows_the_tool_only() {
        let rules = allow(&["edit_file"]);
        let args = json!({"path": "a"});
        assert_eq!(
            decide(Access::Write, "edit_file", &args, Policy::Ask, &rules, &[]),
            Verdict::Run
        );
        assert_eq!(
            decide(Access::Write, "write_file", &args, Policy::Ask, &rules, &[]),
            Verdict::Ask
        );
        let grants = [Rule::Tool("write_file".into())];
        let v = decide(
            Access::Write,
            "write_file",
            &args,
            Policy::Ask,
            &Rules::default(),
            &grants,
        );
        assert_eq!(v, Verdict::Run);
        // A command rule never allows another tool, nor a tool rule `shell` a prefix check.
        let rules = allow(&["shell:cat"]);
        assert_eq!(
            decide(Access::Write, "write_file", &args, Policy::Ask, &rules, &[]),
            Verdict::Ask
        );
    }

    #[test]
    fn deny_wins_over_everything_and_names_its_rule() {
        let rules = Rules {
            allow: vec![rule("shell")],
            deny: vec![rule("shell:rm"), rule("memory")],
        };
        let Verdict::Deny { reason } = run_shell("rm -rf target", Policy::All, &rules) else {
            panic!("rm must be denied");
        };
        assert_eq!(reason, "the rule \"shell:rm\" in [tools] deny forbids this call");
        assert!(matches!(
            run_shell("ls; rm -rf x", Policy::All, &rules),
            Verdict::Deny { .. }
        ));
        assert!(matches!(
            run_shell("echo $(rm x)", Policy::All, &rules),
            Verdict::Deny { .. }
        ));
        assert_eq!(run_shell("rmdir x", Policy::All, &rules), Verdict::Run);
        assert_eq!(
            deny_rule(&rules, "shell", &shell("ls | rm x")),
            Some(&rule("shell:rm"))
        );
        assert_eq!(deny_rule(&rules, "shell", &shell("ls")), None);
        // Read-only access does not skip a deny rule.
        let v = decide(
            Access::ReadOnly,
            "memory",
            &json!({"text": "x"}),
            Policy::All,
            &rules,
            &[],
        );
        assert!(matches!(v, Verdict::Deny { reason } if reason.contains("\"memory\"")));
    }

    #[test]
    fn policies_decide_what_no_rule_covers() {
        let none = Rules::default();
        let args = json!({"path": "src/lib.rs"});
        assert_eq!(
            decide(Access::ReadOnly, "read_file", &args, Policy::ReadOnly, &none, &[]),
            Verdict::Run
        );
        assert_eq!(
            decide(Access::ReadOnly, "grep", &args, Policy::Ask, &none, &[]),
            Verdict::Run
        );
        assert_eq!(
            decide(Access::Write, "edit_file", &args, Policy::All, &none, &[]),
            Verdict::Run
        );
        assert_eq!(
            decide(Access::Write, "edit_file", &args, Policy::Ask, &none, &[]),
            Verdict::Ask
        );
        let Verdict::Deny { reason } =
            decide(Access::Write, "edit_file", &args, Policy::ReadOnly, &none, &[])
        else {
            panic!("read-only denies edits");
        };
        assert!(reason.starts_with("approval is read-only"), "{reason}");
        assert!(reason.contains("--approve all") && reason.contains("\"edit_file\" to [tools] allow"));
        let Verdict::Deny { reason } = run_shell("cargo test --lib", Policy::ReadOnly, &none) else {
            panic!("read-only denies shell");
        };
        assert!(
            reason.contains("\"shell:cargo test\" to [tools] allow"),
            "{reason}"
        );
        // A chained command: no prefix rule could allow it, so none is offered.
        let Verdict::Deny { reason } = run_shell("$(x)", Policy::ReadOnly, &none) else {
            panic!("read-only denies shell");
        };
        assert!(
            reason.contains("command-prefix rules never allow") && !reason.contains("[tools] allow"),
            "{reason}"
        );
        let with_rule = allow(&["shell:cat"]);
        let Verdict::Deny { reason } = run_shell("cat <(touch x) notes.txt", Policy::ReadOnly, &with_rule)
        else {
            panic!("a chained command is not allowed by a prefix");
        };
        assert!(!reason.contains("shell:cat"), "{reason}");
        let text = denied_text("shell", Some(&reason), DeniedBy::ReadOnly);
        assert_eq!(
            text.matches("read-only").count(),
            1 + usize::from(text.contains("read-only tools")),
            "{text}"
        );
        // Reading a credential: the advice allows that, not every read.
        let env = json!({"path": ".env"});
        let Verdict::Deny { reason } =
            decide(Access::ReadOnly, "read_file", &env, Policy::ReadOnly, &none, &[])
        else {
            panic!("read-only denies reading a credential");
        };
        assert!(
            reason.contains("looks like an environment file") && reason.ends_with("--approve all"),
            "{reason}"
        );
        assert!(!reason.contains("[tools] allow"), "{reason}");
    }

    #[test]
    fn grants_cover_the_first_two_words_or_the_tool() {
        assert_eq!(
            grant_for("shell", &shell("cargo test --lib")),
            rule("shell:cargo test")
        );
        assert_eq!(grant_for("shell", &shell("ls")), rule("shell:ls"));
        assert_eq!(grant_for("shell", &shell("  git  log -3")), rule("shell:git log"));
        // A chained command is offered nothing; its grant allows nothing.
        for chained in ["  git  log -3\nrm x", "git status; rm x", "make&&rm x"] {
            assert_eq!(grant_offer("shell", &shell(chained)), GrantOffer::None);
            assert!(!grant_for("shell", &shell(chained)).allows("shell", Some(chained)));
        }
        assert_eq!(grant_for("edit_file", &json!({"path": "a"})), rule("edit_file"));
        // Never the whole shell: a command without a plain first word grants that line only.
        let odd = grant_for("shell", &shell("$(curl x)"));
        assert_eq!(odd, Rule::Command("$(curl x)".into()));
        assert!(!odd.allows("shell", Some("ls")));
        let empty = grant_for("shell", &json!({}));
        assert!(!empty.allows("shell", Some("rm -rf x")));
    }

    #[test]
    fn denied_texts_say_who_why_and_what_next() {
        assert_eq!(
            denied_text("shell", Some("not on main."), DeniedBy::User),
            "The user denied this shell call: not on main. Do not retry it; ask the user or choose another approach."
        );
        assert_eq!(
            denied_text("edit_file", Some("  "), DeniedBy::User),
            "The user denied this edit_file call. Do not retry it; ask the user or choose another approach."
        );
        let by_rule = denied_text("shell", None, DeniedBy::Rule("shell:rm".into()));
        assert!(
            by_rule.contains("the rule \"shell:rm\" in [tools] deny") && by_rule.contains("Do not retry it")
        );
        let read_only = denied_text("write_file", None, DeniedBy::ReadOnly);
        assert!(read_only.contains("approval is read-only") && read_only.contains("--approve all"));
    }

    fn confined(interactive: bool) -> Confinement {
        Confinement {
            mode: super::super::sandbox::Mode::WorkspaceWrite,
            network: false,
            available: true,
            interactive,
            allow_network: Vec::new(),
        }
    }

    fn shell_in(
        args: &Value,
        policy: Policy,
        rules: &Rules,
        grants: &[Rule],
        sandbox: &Confinement,
    ) -> Verdict {
        decide_in(Access::Run, "shell", args, policy, rules, grants, sandbox)
    }

    #[test]
    fn leaving_the_sandbox_is_never_allowed_by_a_rule_a_grant_or_all_alone() {
        let off = json!({"command": "docker ps", "sandbox": "off", "reason": "needs docker"});
        let net = json!({"command": "curl example.com", "network": true});
        let rules = allow(&["shell"]);
        let grants = [rule("shell:docker ps"), rule("shell:curl example.com")];
        for args in [&off, &net] {
            for policy in Policy::ALL {
                assert_eq!(
                    shell_in(args, policy, &rules, &grants, &confined(true)),
                    Verdict::Ask,
                    "{policy} {args}"
                );
                let Verdict::Deny { reason } = shell_in(args, policy, &rules, &grants, &confined(false))
                else {
                    panic!("headless leaves only with its flag: {policy} {args}");
                };
                assert!(
                    reason.contains("only the user can let a command leave the sandbox"),
                    "{reason}"
                );
            }
        }
        let Verdict::Deny { reason } = shell_in(&off, Policy::All, &rules, &[], &confined(false)) else {
            panic!("denied");
        };
        assert!(
            reason.contains("runs outside the sandbox: needs docker")
                && reason.ends_with("--approve all --sandbox off"),
            "{reason}"
        );
        // --sandbox off / --network make the sandbox itself wider: then
        // --approve all runs the call.
        let wide = Confinement {
            mode: super::super::sandbox::Mode::Off,
            ..confined(false)
        };
        assert_eq!(
            shell_in(&off, Policy::All, &Rules::default(), &[], &wide),
            Verdict::Run
        );
        let networked = Confinement {
            network: true,
            ..confined(false)
        };
        assert_eq!(
            shell_in(&net, Policy::All, &Rules::default(), &[], &networked),
            Verdict::Run
        );
        assert!(matches!(
            shell_in(&off, Policy::All, &Rules::default(), &[], &networked),
            Verdict::Deny { .. }
        ));
        // A deny rule still wins.
        let deny = Rules {
            allow: Vec::new(),
            deny: vec![rule("shell:docker")],
        };
        assert!(matches!(
            shell_in(&off, Policy::Ask, &deny, &[], &confined(true)),
            Verdict::Deny { .. }
        ));
    }

    #[test]
    fn sandboxed_runs_confined_commands_and_asks_for_the_rest() {
        let plain = json!({"command": "cargo test"});
        let net = json!({"command": "npm install", "network": true});
        let none = Rules::default();
        assert_eq!(
            shell_in(&plain, Policy::Sandboxed, &none, &[], &confined(true)),
            Verdict::Run
        );
        assert_eq!(
            shell_in(&plain, Policy::Sandboxed, &none, &[], &confined(false)),
            Verdict::Run
        );
        assert_eq!(
            shell_in(&net, Policy::Sandboxed, &none, &[], &confined(true)),
            Verdict::Ask
        );
        // An allow_network prefix gives the network: no longer offline, so it asks.
        let prefixed = Confinement {
            allow_network: vec!["npm install".into()],
            ..confined(true)
        };
        assert_eq!(
            shell_in(
                &json!({"command": "npm install"}),
                Policy::Sandboxed,
                &none,
                &[],
                &prefixed
            ),
            Verdict::Ask
        );
        // Without Landlock there is no sandbox: sandboxed asks like ask.
        let missing = Confinement {
            available: false,
            ..confined(true)
        };
        assert_eq!(
            shell_in(&plain, Policy::Sandboxed, &none, &[], &missing),
            Verdict::Ask
        );
        let headless_missing = Confinement {
            available: false,
            ..confined(false)
        };
        assert!(matches!(
            shell_in(&plain, Policy::Sandboxed, &none, &[], &headless_missing),
            Verdict::Deny { .. }
        ));
        // Other tools that change things ask (app) or are denied (headless).
        let edit = json!({"path": "a"});
        let sandbox = confined(true);
        assert_eq!(
            decide_in(
                Access::Write,
                "edit_file",
                &edit,
                Policy::Sandboxed,
                &none,
                &[],
                &sandbox
            ),
            Verdict::Ask
        );
        let headless = confined(false);
        let Verdict::Deny { reason } = decide_in(
            Access::Write,
            "edit_file",
            &edit,
            Policy::Sandboxed,
            &none,
            &[],
            &headless,
        ) else {
            panic!("headless sandboxed denies an edit");
        };
        assert!(
            reason.starts_with("approval is sandboxed (headless, only sandboxed shell commands"),
            "{reason}"
        );
        assert_eq!(
            decide_in(
                Access::ReadOnly,
                "read_file",
                &edit,
                Policy::Sandboxed,
                &none,
                &[],
                &headless
            ),
            Verdict::Run
        );
    }
}
