//! Whether a tool may change things (DESIGN §19 "Claims"): the one
//! decision approval uses, and checkpoints and the sandbox can ask.
//!
//! A built-in tool's [`Access`] is strata's own ([`super::schema::builtin`]).
//! An MCP server's tool says what it does in its `annotations`
//! (`readOnlyHint`, `destructiveHint`), but the MCP specification calls
//! annotations untrusted unless they come from a trusted server: they count
//! only for a server the user marked `[mcp.servers.NAME] trust_annotations
//! = true`. Every other server's tools are approved like `shell`. Pure.

use super::Access;
use serde::Serialize;

/// What an MCP server says of one of its tools (`annotations`); `None`
/// where it says nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    /// `readOnlyHint`: the tool does not change its environment.
    pub read_only_hint: Option<bool>,
    /// `destructiveHint`: the tool may delete or overwrite things (the
    /// specification's default is `true`).
    pub destructive_hint: Option<bool>,
}

/// Which rule gave a tool its access, as `strata mcp list --json` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessRule {
    /// A built-in tool: strata knows what it does.
    Builtin,
    /// The server is trusted (`trust_annotations = true`): its annotations
    /// decided.
    TrustedAnnotations,
    /// The server is not trusted: its annotations are ignored and the tool
    /// is approved like `shell`.
    UntrustedServer,
}

/// A tool's access and the rule that gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ruling {
    /// What approval treats the tool as.
    pub access: Access,
    /// Why.
    pub rule: AccessRule,
}

/// Where a tool comes from, as far as its access goes.
#[derive(Clone, Copy, Debug)]
pub enum Origin<'a> {
    /// A built-in tool with its fixed access.
    Builtin(Access),
    /// A tool of the MCP server `server`.
    Mcp {
        /// The server's name (for [`describe`]).
        server: &'a str,
        /// What the server says of the tool.
        annotations: Annotations,
        /// `[mcp.servers.NAME] trust_annotations`.
        trusted: bool,
    },
}

/// The one decision of what a tool may do: a built-in tool keeps its
/// access; an MCP tool is read-only only when its server is trusted, it
/// says `readOnlyHint: true` and does not also say `destructiveHint: true`
/// (the more careful claim wins); every other MCP tool is [`Access::Run`].
#[must_use]
pub fn ruling(origin: Origin<'_>) -> Ruling {
    match origin {
        Origin::Builtin(access) => Ruling {
            access,
            rule: AccessRule::Builtin,
        },
        Origin::Mcp {
            annotations,
            trusted: true,
            ..
        } => Ruling {
            access: if annotations.read_only_hint == Some(true) && annotations.destructive_hint != Some(true)
            {
                Access::ReadOnly
            } else {
                Access::Run
            },
            rule: AccessRule::TrustedAnnotations,
        },
        Origin::Mcp { trusted: false, .. } => Ruling {
            access: Access::Run,
            rule: AccessRule::UntrustedServer,
        },
    }
}

/// Whether a call of a tool with `access` may change things (files, other
/// processes, anything outside strata): what approval asks about, and what
/// a checkpoint or the sandbox needs to know.
#[must_use]
pub fn may_change(access: Access) -> bool {
    access != Access::ReadOnly
}

/// The rule that applied to a tool of `origin`, as one clause for the
/// approval overlay and `strata mcp list` ("the MCP server `x` is not
/// trusted for its annotations, …").
#[must_use]
pub fn describe(origin: Origin<'_>) -> String {
    let ruled = ruling(origin);
    match origin {
        Origin::Builtin(_) => "a built-in tool".to_owned(),
        Origin::Mcp {
            server, annotations, ..
        } => {
            let claims = match (annotations.read_only_hint, annotations.destructive_hint) {
                (Some(true), Some(true)) => "readOnlyHint and destructiveHint",
                (Some(true), _) => "readOnlyHint: true",
                (_, Some(false)) => "destructiveHint: false",
                _ => "no read-only hint",
            };
            match (ruled.rule, ruled.access) {
                (AccessRule::TrustedAnnotations, Access::ReadOnly) => format!(
                    "read-only because the MCP server `{server}` is trusted for its annotations (trust_annotations) and says readOnlyHint: true"
                ),
                (AccessRule::TrustedAnnotations, _) => format!(
                    "approved like shell: the MCP server `{server}` is trusted for its annotations, and they do not make this tool read-only ({claims})"
                ),
                _ => format!(
                    "approved like shell because the MCP server `{server}` is not trusted for its annotations (it says {claims}); set [mcp.servers.{server}] trust_annotations = true to believe them"
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mcp(read_only: Option<bool>, destructive: Option<bool>, trusted: bool) -> Origin<'static> {
        Origin::Mcp {
            server: "srv",
            annotations: Annotations {
                read_only_hint: read_only,
                destructive_hint: destructive,
            },
            trusted,
        }
    }

    #[test]
    fn an_untrusted_servers_claims_count_for_nothing() {
        for hints in [(Some(true), None), (Some(true), Some(false)), (None, None)] {
            let r = ruling(mcp(hints.0, hints.1, false));
            assert_eq!(r.access, Access::Run, "{hints:?}");
            assert_eq!(r.rule, AccessRule::UntrustedServer);
            assert!(may_change(r.access));
        }
        let why = describe(mcp(Some(true), None, false));
        assert!(
            why.contains("not trusted") && why.contains("[mcp.servers.srv] trust_annotations = true"),
            "{why}"
        );
    }

    #[test]
    fn a_trusted_servers_read_only_hint_counts_unless_it_also_says_destructive() {
        let r = ruling(mcp(Some(true), None, true));
        assert_eq!(
            (r.access, r.rule),
            (Access::ReadOnly, AccessRule::TrustedAnnotations)
        );
        assert!(!may_change(r.access));
        assert_eq!(ruling(mcp(Some(true), Some(true), true)).access, Access::Run);
        assert_eq!(ruling(mcp(Some(false), Some(false), true)).access, Access::Run);
        assert_eq!(ruling(mcp(None, None, true)).access, Access::Run);
        assert!(describe(mcp(Some(true), None, true)).starts_with("read-only because"));
        assert_eq!(ruling(Origin::Builtin(Access::Write)).access, Access::Write);
    }
}
