//! The shell's sandbox as decisions (DESIGN §19 "The shell"): which
//! confinement a `shell` call runs under, whether a call asks to leave it,
//! and the words the result, the overlay and `chat --json` use for it.
//!
//! [`Confinement`] is what the session gives every command (`[tools.sandbox]`
//! and the command line's `--sandbox off` / `--network`, and whether the
//! kernel has Landlock). A call may ask for more with `sandbox: "off"` or
//! `network: true` and a `reason`: [`Confinement::leaving`] says when that
//! is more than the session gives, and approval then asks the user every
//! time (never a rule, a grant or `--approve all` alone). The supervisor
//! applies what [`Confinement::for_call`] says; nothing here runs anything.
//! Pure.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

use super::approval::Rule;

/// `[tools.sandbox] mode`: where a `shell` command may write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Write under the workspace, its git directory, the session's
    /// temporary directory and the configured roots; read everywhere.
    #[default]
    WorkspaceWrite,
    /// Write only the session's temporary directory, `/dev/shm` and
    /// `/dev/null`; read everywhere.
    ReadOnly,
    /// No sandbox: the command runs with the user's permissions.
    Off,
}

impl Mode {
    /// Every mode, in the order the error message lists them.
    pub const ALL: [Self; 3] = [Self::WorkspaceWrite, Self::ReadOnly, Self::Off];

    /// The config and argument value: `workspace-write`, `read-only`, `off`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WorkspaceWrite => "workspace-write",
            Self::ReadOnly => "read-only",
            Self::Off => "off",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `[tools.sandbox] mode` value that is not a mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownMode(pub String);

impl fmt::Display for UnknownMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown sandbox mode '{}'; use workspace-write, read-only or off",
            self.0
        )
    }
}

impl std::error::Error for UnknownMode {}

impl FromStr for Mode {
    type Err = UnknownMode;

    /// Parses `workspace-write`, `read-only` or `off` (spaces ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        Self::ALL
            .into_iter()
            .find(|m| m.as_str() == t)
            .ok_or_else(|| UnknownMode(s.to_owned()))
    }
}

/// What a command ran under, as `chat --json`'s `tool_result` says it
/// (`sandbox`): its mode, or `unavailable` when the kernel could not
/// confine it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Label {
    /// Confined, writing the workspace.
    WorkspaceWrite,
    /// Confined, writing nothing of the workspace.
    ReadOnly,
    /// Run outside the sandbox (by the user's choice).
    Off,
    /// Meant to be confined, but this kernel has no Landlock.
    Unavailable,
}

impl Label {
    /// `workspace-write`, `read-only`, `off`, `unavailable`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WorkspaceWrite => "workspace-write",
            Self::ReadOnly => "read-only",
            Self::Off => "off",
            Self::Unavailable => "unavailable",
        }
    }
}

impl Label {
    /// The label of [`Label::as_str`]'s text.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        [Self::WorkspaceWrite, Self::ReadOnly, Self::Off, Self::Unavailable]
            .into_iter()
            .find(|l| l.as_str() == text)
    }
}

/// Where a `shell` call ran: under which label, with the network or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RanIn {
    /// The sandbox's label.
    pub label: Label,
    /// It had the network (and sockets).
    pub network: bool,
}

impl RanIn {
    /// The words for it ([`describe`]).
    #[must_use]
    pub fn describe(self) -> String {
        describe(self.label, self.network)
    }
}

/// What one call runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallSandbox {
    /// Where it may write ([`Mode::Off`]: anywhere).
    pub mode: Mode,
    /// Whether it may use the network (and sockets of any kind).
    pub network: bool,
}

/// What a call asks beyond what the session gives: to run outside the
/// sandbox, or with the network, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leave {
    /// `sandbox: "off"`: no confinement at all.
    pub off: bool,
    /// `network: true`: sockets and TCP allowed.
    pub network: bool,
    /// The model's `reason`, when it gave one.
    pub reason: Option<String>,
}

impl Leave {
    /// `runs outside the sandbox: REASON` / `uses the network: REASON`.
    #[must_use]
    pub fn describe(&self) -> String {
        let what = if self.off {
            "runs outside the sandbox"
        } else {
            "uses the network (outside the sandbox's network rule)"
        };
        match &self.reason {
            Some(reason) => format!("{what}: {reason}"),
            None => format!("{what} (no reason given)"),
        }
    }
}

/// The sandbox a session gives its `shell` commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confinement {
    /// `[tools.sandbox] mode` (or `off` from `--sandbox off`).
    pub mode: Mode,
    /// `[tools.sandbox] network` (or `--network`).
    pub network: bool,
    /// Whether the kernel can confine a command (Landlock is there).
    pub available: bool,
    /// Whether someone can be asked (the app); headless runs deny instead.
    pub interactive: bool,
    /// `[tools.sandbox] allow_network`: command prefixes that run with the
    /// network on (matched like a `shell:` allow rule: never a command
    /// that chains another).
    pub allow_network: Vec<String>,
}

impl Default for Confinement {
    /// No sandbox: what a session without one (a test of the core) has.
    fn default() -> Self {
        Self::unconfined()
    }
}

impl Confinement {
    /// No sandbox at all: every call runs as it is.
    #[must_use]
    pub fn unconfined() -> Self {
        Self {
            mode: Mode::Off,
            network: true,
            available: true,
            interactive: true,
            allow_network: Vec::new(),
        }
    }

    /// Whether commands are confined: a mode other than `off` on a kernel
    /// that has Landlock.
    #[must_use]
    pub fn confines(&self) -> bool {
        self.mode != Mode::Off && self.available
    }

    /// The pane's sentence when commands were meant to be confined and
    /// this kernel cannot: `None` otherwise.
    #[must_use]
    pub fn unconfined_note(&self) -> Option<&'static str> {
        (self.mode != Mode::Off && !self.available)
            .then_some("shell is not sandboxed: this kernel has no Landlock")
    }

    /// What a `shell` call with `arguments` runs under: the session's mode
    /// unless it asks `sandbox: "off"`; the network when the session gives
    /// it, the command starts with an `allow_network` prefix, or it asks
    /// `network: true`. Approval has already decided the call may run, so
    /// what it asks for is what it gets.
    #[must_use]
    pub fn for_call(&self, arguments: &Value) -> CallSandbox {
        let asked = asked(arguments);
        let command = arguments.get("command").and_then(Value::as_str);
        CallSandbox {
            mode: if asked.off { Mode::Off } else { self.mode },
            network: self.network || asked.network || self.network_allowed(command),
        }
    }

    /// What a call of `name` with `arguments` asks beyond the session's
    /// sandbox, or `None` when it asks nothing more (not `shell`, no
    /// request, no sandbox to leave, or a request the session already
    /// gives).
    #[must_use]
    pub fn leaving(&self, name: &str, arguments: &Value) -> Option<Leave> {
        if name != "shell" || !self.confines() {
            return None;
        }
        let asked = asked(arguments);
        let command = arguments.get("command").and_then(Value::as_str);
        let network = asked.network && !self.network && !self.network_allowed(command);
        let leave = Leave {
            off: asked.off,
            network,
            reason: asked.reason,
        };
        (leave.off || leave.network).then_some(leave)
    }

    /// Whether a `shell` call with `arguments` runs confined without the
    /// network: what `approval = "sandboxed"` runs without asking.
    #[must_use]
    pub fn sandboxed_offline(&self, name: &str, arguments: &Value) -> bool {
        name == "shell"
            && self.confines()
            && self.leaving(name, arguments).is_none()
            && !self.for_call(arguments).network
    }

    /// The label of a call that ran under `call`.
    #[must_use]
    pub fn label(&self, call: CallSandbox) -> Label {
        match call.mode {
            Mode::Off => Label::Off,
            _ if !self.available => Label::Unavailable,
            Mode::WorkspaceWrite => Label::WorkspaceWrite,
            Mode::ReadOnly => Label::ReadOnly,
        }
    }

    /// How a call runs, for the overlay and the tool block:
    /// `sandboxed (workspace, no network)`, `outside the sandbox`, `not
    /// sandboxed: this kernel has no Landlock`.
    #[must_use]
    pub fn describe(&self, call: CallSandbox) -> String {
        describe(self.label(call), call.network)
    }

    fn network_allowed(&self, command: Option<&str>) -> bool {
        self.allow_network
            .iter()
            .filter_map(|p| format!("shell:{p}").parse::<Rule>().ok())
            .any(|rule| rule.allows("shell", command))
    }
}

/// The words for a command that ran under `label` with or without the
/// network (see [`Confinement::describe`]).
#[must_use]
pub fn describe(label: Label, network: bool) -> String {
    let net = if network { "network on" } else { "no network" };
    match label {
        Label::WorkspaceWrite => format!("sandboxed (workspace, {net})"),
        Label::ReadOnly => format!("sandboxed (read-only, {net})"),
        Label::Off => "outside the sandbox".to_owned(),
        Label::Unavailable => "not sandboxed: this kernel has no Landlock".to_owned(),
    }
}

/// What the arguments ask for: `sandbox: "off"`, `network: true`,
/// `reason`.
fn asked(arguments: &Value) -> Leave {
    Leave {
        off: arguments.get("sandbox").and_then(Value::as_str) == Some("off"),
        network: arguments.get("network").and_then(Value::as_bool) == Some(true),
        reason: arguments
            .get("reason")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sandbox() -> Confinement {
        Confinement {
            mode: Mode::WorkspaceWrite,
            network: false,
            available: true,
            interactive: true,
            allow_network: vec!["npm install".into()],
        }
    }

    #[test]
    fn modes_parse_and_print() {
        for m in Mode::ALL {
            assert_eq!(m.as_str().parse::<Mode>(), Ok(m));
        }
        assert_eq!(
            "on".parse::<Mode>().unwrap_err().to_string(),
            "unknown sandbox mode 'on'; use workspace-write, read-only or off"
        );
    }

    #[test]
    fn a_call_asking_to_leave_is_leaving_unless_the_session_gives_it() {
        let s = sandbox();
        let off = json!({"command": "ls", "sandbox": "off", "reason": " needs docker "});
        let leave = s.leaving("shell", &off).unwrap();
        assert!(leave.off);
        assert_eq!(leave.describe(), "runs outside the sandbox: needs docker");
        assert_eq!(s.for_call(&off).mode, Mode::Off);
        let net = json!({"command": "curl x", "network": true});
        assert!(s.leaving("shell", &net).unwrap().network);
        assert!(s.for_call(&net).network);
        // An allow_network prefix gives it; a chained command never matches.
        assert_eq!(
            s.leaving("shell", &json!({"command": "npm install x", "network": true})),
            None
        );
        assert!(s.for_call(&json!({"command": "npm install"})).network);
        assert!(!s.for_call(&json!({"command": "npm install; curl x"})).network);
        // No sandbox to leave: nothing is asked.
        let off_mode = Confinement {
            mode: Mode::Off,
            ..sandbox()
        };
        assert_eq!(off_mode.leaving("shell", &off), None);
        let missing = Confinement {
            available: false,
            ..sandbox()
        };
        assert_eq!(missing.leaving("shell", &off), None);
        assert_eq!(s.leaving("write_file", &off), None);
        // Anything but "off" and true asks nothing.
        assert_eq!(
            s.leaving(
                "shell",
                &json!({"command": "ls", "sandbox": "on", "network": "yes"})
            ),
            None
        );
    }

    #[test]
    fn a_sandbox_the_kernel_cannot_apply_is_noted_once_for_the_pane() {
        let mut c = Confinement {
            mode: Mode::WorkspaceWrite,
            ..Confinement::unconfined()
        };
        c.available = false;
        assert_eq!(
            c.unconfined_note(),
            Some("shell is not sandboxed: this kernel has no Landlock")
        );
        c.available = true;
        assert_eq!(c.unconfined_note(), None);
        assert_eq!(Confinement::unconfined().unconfined_note(), None, "off by choice");
    }

    #[test]
    fn labels_and_words_say_where_a_call_ran() {
        let s = sandbox();
        let plain = s.for_call(&json!({"command": "ls"}));
        assert_eq!(s.label(plain), Label::WorkspaceWrite);
        assert_eq!(s.describe(plain), "sandboxed (workspace, no network)");
        let off = s.for_call(&json!({"command": "ls", "sandbox": "off"}));
        assert_eq!(s.describe(off), "outside the sandbox");
        let missing = Confinement {
            available: false,
            ..sandbox()
        };
        assert_eq!(missing.label(plain), Label::Unavailable);
        assert_eq!(
            missing.describe(plain),
            "not sandboxed: this kernel has no Landlock"
        );
        assert!(s.sandboxed_offline("shell", &json!({"command": "ls"})));
        assert!(!s.sandboxed_offline("shell", &json!({"command": "npm install"})));
        assert!(!missing.sandboxed_offline("shell", &json!({"command": "ls"})));
    }
}
