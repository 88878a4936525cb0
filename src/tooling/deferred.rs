//! Deferred disclosure (DESIGN §16; the hermes seed §7.1, after hermes
//! `tools/tool_search.py`): which MCP tools leave the request's tools array
//! and the three bridge tools that stand in for them.
//!
//! Owns the per-server setting ([`Deferred`]), the rule (with `always`, or
//! `auto` and the schemas of all MCP tools together over 10 % of the window
//! — Claude Code's rule — a server's tools are deferred; built-in tools
//! never are), the bridge tools ([`Bridge`], [`bridge_specs`]) with the
//! listing of deferred tools inside `tool_search`'s description
//! ([`listing`]), the request's tool set built from all of that
//! ([`Disclosure::plan`]) and what it saves, and the reading of the bridges'
//! arguments ([`search_args`], [`describe_args`], [`resolve_call`]). The
//! search index itself is an adapter (`tools::catalog`).
//!
//! Invariants: the request's array is the built-in tools in their order,
//! then the direct MCP tools in the order of the full set, then the bridges
//! (`tool_search`, `tool_describe`, `tool_call`) when anything is deferred;
//! the same inputs give the same bytes, and a change of the deferred list
//! only changes the bytes of the bridges at the end.

mod listing;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Access;
use super::schema::{ToolSet, ToolSpec};
use crate::tokens::TokenCounter;

pub use listing::{
    DESCRIPTION_CHARS, LISTING_MAX_TOKENS, LISTING_PERCENT, Listing, listing, listing_budget, one_line,
};

/// Under `auto`, MCP tools are deferred when their schemas together take
/// more than this share of the window, in percent (Claude Code's rule).
pub const AUTO_PERCENT: u64 = 10;
/// Results `tool_search` gives when the model names no `limit`.
pub const SEARCH_DEFAULT_LIMIT: usize = 5;
/// The most results `tool_search` gives.
pub const SEARCH_MAX_LIMIT: usize = 20;

/// `[mcp.servers.NAME] deferred`: whether a server's tools may leave the
/// tools array.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Deferred {
    /// Deferred when all MCP tools' schemas together take more than
    /// [`AUTO_PERCENT`] of the window.
    #[default]
    Auto,
    /// Always deferred.
    Always,
    /// Never deferred: always in the tools array.
    Never,
}

impl Deferred {
    /// Every setting, in the order the error message lists them.
    pub const ALL: [Self; 3] = [Self::Auto, Self::Always, Self::Never];

    /// The config value: `"auto"`, `"always"`, `"never"`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Always => "always",
            Self::Never => "never",
        }
    }

    /// Whether a server with this setting has its tools deferred, given
    /// whether all MCP tools together pass the auto share ([`over_auto_share`]).
    #[must_use]
    pub fn defers(self, over_share: bool) -> bool {
        match self {
            Self::Auto => over_share,
            Self::Always => true,
            Self::Never => false,
        }
    }
}

impl fmt::Display for Deferred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `deferred` value that is not a setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownDeferred(pub String);

impl fmt::Display for UnknownDeferred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown deferred setting '{}'; use auto, always or never",
            self.0
        )
    }
}

impl std::error::Error for UnknownDeferred {}

impl FromStr for Deferred {
    type Err = UnknownDeferred;

    /// Parses `auto`, `always` or `never` (surrounding spaces ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        Self::ALL
            .into_iter()
            .find(|d| d.as_str() == t)
            .ok_or_else(|| UnknownDeferred(s.to_owned()))
    }
}

/// Whether `mcp_tokens`, the schema tokens of all MCP tools together, are
/// over [`AUTO_PERCENT`] of `window` (tokens): strictly more than 10 %.
#[must_use]
pub fn over_auto_share(mcp_tokens: u64, window: u64) -> bool {
    u128::from(mcp_tokens) * 100 > u128::from(window) * u128::from(AUTO_PERCENT)
}

/// The form a provider receives tools in, which is what their tokens are
/// counted on (issue 12 §5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Wire {
    /// `{"type":"function","function":{"name","description","parameters"}}`
    /// (OpenAI-compatible chat completions, the local models).
    #[default]
    OpenAi,
    /// `{"name","description","input_schema"}` (Anthropic Messages).
    Anthropic,
}

impl Wire {
    /// `spec` as this provider receives it (keys sorted when serialised).
    #[must_use]
    pub fn schema(self, spec: &ToolSpec) -> Value {
        match self {
            Self::OpenAi => spec.to_openai(),
            Self::Anthropic => json!({
                "name": spec.name,
                "description": spec.description,
                "input_schema": spec.parameters,
            }),
        }
    }

    /// Tokens of [`schema`](Self::schema)'s compact JSON under `counter`.
    #[must_use]
    pub fn tokens(self, counter: &dyn TokenCounter, spec: &ToolSpec) -> u32 {
        u32::try_from(counter.count(&self.schema(spec).to_string())).unwrap_or(u32::MAX)
    }
}

/// One of the three tools that stand in for the deferred ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bridge {
    /// `tool_search {query, limit?}`: deferred tools by keyword, best first.
    Search,
    /// `tool_describe {name}`: one deferred tool's full schema.
    Describe,
    /// `tool_call {name, arguments}`: runs a deferred tool.
    Call,
}

impl Bridge {
    /// The bridges in array order.
    pub const ALL: [Self; 3] = [Self::Search, Self::Describe, Self::Call];

    /// The tool name: `tool_search`, `tool_describe`, `tool_call`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Search => "tool_search",
            Self::Describe => "tool_describe",
            Self::Call => "tool_call",
        }
    }

    /// The bridge called `name`, if it is one.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The access a call of this bridge has: read-only for `tool_search`
    /// and `tool_describe`; `None` for `tool_call`, whose call has the
    /// access of the tool it calls ([`resolve_call`]).
    #[must_use]
    pub fn access(self) -> Option<Access> {
        match self {
            Self::Search | Self::Describe => Some(Access::ReadOnly),
            Self::Call => None,
        }
    }
}

/// The three bridge tools in array order, `tool_search`'s description
/// ending with `listing` (from [`listing`]; empty for none). The schemas are
/// kept short: every byte is paid on every request. `tool_call`'s
/// [`ToolSpec::access`] is [`Access::Run`], the most guarded, as a stand-in:
/// a call's real access is the called tool's ([`resolve_call`]).
#[must_use]
pub fn bridge_specs(listing: &str) -> Vec<ToolSpec> {
    let mut search = String::from(
        "Search the deferred tools (MCP tools not loaded here) by keywords from their names, \
         descriptions or parameters; gives names and one-line descriptions, best first. \
         tool_describe gives a tool's parameters, tool_call runs it.",
    );
    if !listing.is_empty() {
        search.push('\n');
        search.push_str(listing);
    }
    let string = |description: &str| json!({"type": "string", "description": description});
    let object = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false});
    vec![
        ToolSpec {
            name: Bridge::Search.name().to_owned(),
            description: search,
            parameters: object(
                json!({
                    "query": string("Keywords."),
                    "limit": {"type": "integer", "description": "Most results; default 5, at most 20."},
                }),
                &["query"],
            ),
            access: Access::ReadOnly,
        },
        ToolSpec {
            name: Bridge::Describe.name().to_owned(),
            description: "Give the description and parameter schema of a deferred tool.".to_owned(),
            parameters: object(json!({"name": string("The tool's exact name.")}), &["name"]),
            access: Access::ReadOnly,
        },
        ToolSpec {
            name: Bridge::Call.name().to_owned(),
            description: "Run a deferred tool with arguments that match its schema.".to_owned(),
            parameters: object(
                json!({
                    "name": string("The tool's exact name."),
                    "arguments": {"type": "object", "description": "The tool's arguments."},
                }),
                &["name", "arguments"],
            ),
            access: Access::Run,
        },
    ]
}

/// One enabled tool of the full set, as the context view shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCost {
    /// The tool's name.
    pub name: String,
    /// Its MCP server; `None` for a built-in tool.
    pub server: Option<String>,
    /// Tokens of its schema in the provider's wire form.
    pub tokens: u32,
    /// Whether it left the tools array for the bridges.
    pub deferred: bool,
}

/// What deferral saves on every request, in tokens of the wire form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Saving {
    /// The tools array with every enabled tool direct.
    pub direct_tokens: u64,
    /// The request's tools array: built-in and direct MCP tools, and the
    /// bridges when anything is deferred.
    pub request_tokens: u64,
    /// The bridges' part of `request_tokens`, their listing included (0
    /// when nothing is deferred).
    pub bridge_tokens: u64,
}

impl Saving {
    /// `direct_tokens − request_tokens`; negative when the bridges cost
    /// more than the tools they stand in for (`always` on a small server).
    #[must_use]
    pub fn saved_tokens(&self) -> i64 {
        let direct = i64::try_from(self.direct_tokens).unwrap_or(i64::MAX);
        direct - i64::try_from(self.request_tokens).unwrap_or(i64::MAX)
    }
}

/// The tools one request offers, decided from the full set
/// ([`Disclosure::plan`]). Build it again whenever the full set, a
/// setting, the window, the wire form or the counter changes; it counts
/// every schema, so not on every request.
#[derive(Clone, Debug)]
pub struct Disclosure {
    request: ToolSet,
    deferred: Vec<ToolSpec>,
    costs: Vec<ToolCost>,
    over_share: bool,
    listing: Listing,
    saving: Saving,
}

impl Disclosure {
    /// Decides the request's tools. `all` is the session's full set: the
    /// built-in tools (no group) and each MCP server's tools as a group
    /// named after the server ([`ToolSet::with_extra`]); switched-off tools
    /// are left out everywhere. `settings` gives each server's
    /// [`Deferred`] (a server missing there is [`Deferred::Auto`]);
    /// `window` is the context window in tokens; tokens are counted on
    /// `wire` with `counter`, which also fits the listing into
    /// [`listing_budget`]`(window)`.
    #[must_use]
    pub fn plan(
        all: &ToolSet,
        settings: &BTreeMap<String, Deferred>,
        window: u64,
        wire: Wire,
        counter: &dyn TokenCounter,
    ) -> Self {
        let enabled: Vec<_> = all.specs().iter().filter(|e| e.enabled).collect();
        let tokens: Vec<u32> = enabled.iter().map(|e| wire.tokens(counter, &e.spec)).collect();
        let mcp_tokens: u64 = enabled
            .iter()
            .zip(&tokens)
            .filter(|(e, _)| e.group.is_some())
            .map(|(_, t)| u64::from(*t))
            .sum();
        let over_share = over_auto_share(mcp_tokens, window);
        let costs: Vec<ToolCost> = enabled
            .iter()
            .zip(&tokens)
            .map(|(e, t)| ToolCost {
                name: e.spec.name.clone(),
                server: e.group.clone(),
                tokens: *t,
                deferred: e.group.as_ref().is_some_and(|server| {
                    settings
                        .get(server)
                        .copied()
                        .unwrap_or_default()
                        .defers(over_share)
                }),
            })
            .collect();
        let (builtin, mcp): (Vec<_>, Vec<_>) =
            enabled.iter().zip(&costs).partition(|(e, _)| e.group.is_none());
        let mut direct: Vec<ToolSpec> = builtin.iter().map(|(e, _)| e.spec.clone()).collect();
        let mut deferred = Vec::new();
        for (e, cost) in mcp {
            if cost.deferred {
                deferred.push(e.spec.clone());
            } else {
                direct.push(e.spec.clone());
            }
        }
        let listing = if deferred.is_empty() {
            Listing::default()
        } else {
            listing(&deferred, listing_budget(window), counter)
        };
        if !deferred.is_empty() {
            direct.extend(bridge_specs(&listing.text));
        }
        let request = ToolSet::new(direct);
        let (mut request_tokens, mut bridge_tokens) = (0, 0);
        for e in request.specs() {
            let t = u64::from(wire.tokens(counter, &e.spec));
            request_tokens += t;
            if !deferred.is_empty() && Bridge::from_name(&e.spec.name).is_some() {
                bridge_tokens += t;
            }
        }
        let saving = Saving {
            direct_tokens: tokens.iter().map(|t| u64::from(*t)).sum(),
            request_tokens,
            bridge_tokens,
        };
        Self {
            request,
            deferred,
            costs,
            over_share,
            listing,
            saving,
        }
    }

    /// The request's tools: its `array()`, `json()` and `sha256()` go to
    /// the provider and the request record.
    #[must_use]
    pub fn request(&self) -> &ToolSet {
        &self.request
    }

    /// The deferred tools in the full set's order: what `tool_search`
    /// searches (`tools::catalog`) and `tool_describe` describes.
    #[must_use]
    pub fn deferred(&self) -> &[ToolSpec] {
        &self.deferred
    }

    /// Whether the tool `name` is deferred.
    #[must_use]
    pub fn is_deferred(&self, name: &str) -> bool {
        self.deferred.iter().any(|s| s.name == name)
    }

    /// Every enabled tool of the full set in order, with its tokens and
    /// whether it is deferred: the `tools` category of the context view.
    #[must_use]
    pub fn costs(&self) -> &[ToolCost] {
        &self.costs
    }

    /// Whether all MCP tools together were over the auto share.
    #[must_use]
    pub fn over_auto_share(&self) -> bool {
        self.over_share
    }

    /// What `tool_search`'s description lists (empty when nothing is
    /// deferred).
    #[must_use]
    pub fn listing(&self) -> &Listing {
        &self.listing
    }

    /// Tokens with every tool direct against the request's.
    #[must_use]
    pub fn saving(&self) -> Saving {
        self.saving
    }
}

/// `tool_search`'s arguments, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchArgs {
    /// The keywords.
    pub query: String,
    /// How many results, 1..=[`SEARCH_MAX_LIMIT`].
    pub limit: usize,
}

/// Reads a `tool_search` call's arguments: `query` a non-blank string,
/// `limit` an optional positive integer ([`SEARCH_DEFAULT_LIMIT`], capped
/// at [`SEARCH_MAX_LIMIT`]). The error is a sentence for the model.
pub fn search_args(arguments: &Value) -> Result<SearchArgs, String> {
    let query = arguments
        .get("query")
        .and_then(Value::as_str)
        .filter(|q| !q.trim().is_empty())
        .ok_or_else(|| {
            "tool_search needs `query`, a string of keywords such as \"time zone\"; call it again with one."
                .to_owned()
        })?;
    let limit = match arguments.get("limit") {
        None | Some(Value::Null) => SEARCH_DEFAULT_LIMIT,
        Some(v) => match v.as_u64().filter(|n| *n > 0) {
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX).min(SEARCH_MAX_LIMIT),
            None => {
                return Err(format!(
                    "tool_search's `limit` must be a positive integer (at most {SEARCH_MAX_LIMIT}); call it again with one or without it."
                ));
            }
        },
    };
    Ok(SearchArgs {
        query: query.trim().to_owned(),
        limit,
    })
}

/// Reads a `tool_describe` call's `name` (a non-blank string). The error
/// is a sentence for the model.
pub fn describe_args(arguments: &Value) -> Result<String, String> {
    arguments
        .get("name")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| {
            "tool_describe needs `name`, a tool's exact name as tool_search gives it; call it again with one."
                .to_owned()
        })
}

/// The tool a `tool_call` call runs, with its arguments: `name` must be an
/// enabled tool of the full set `all` (deferred or not, never a bridge),
/// and `arguments` a JSON object, or a string holding one (some models
/// send that), or missing for none. The call then goes through the same
/// approval, run and output path as a direct call of that tool, with the
/// tool's [`ToolSpec::access`]. The error is a sentence for the model.
pub fn resolve_call<'a>(all: &'a ToolSet, arguments: &Value) -> Result<(&'a ToolSpec, Value), String> {
    let name = arguments
        .get("name")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            "tool_call needs `name`, a tool's exact name as tool_search gives it, and `arguments`, a JSON object; call it again with both."
                .to_owned()
        })?;
    if Bridge::from_name(name).is_some() {
        return Err(format!(
            "tool_call runs deferred tools, not `{name}`; call `{name}` directly."
        ));
    }
    let Some(spec) = all.get(name) else {
        return Err(format!(
            "There is no tool named `{name}`; find the exact name with tool_search and call tool_call again."
        ));
    };
    let inner = match arguments.get("arguments") {
        None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => v,
            _ => return Err(not_an_object(name)),
        },
        Some(_) => return Err(not_an_object(name)),
    };
    Ok((spec, inner))
}

fn not_an_object(name: &str) -> String {
    format!(
        "tool_call's `arguments` must be a JSON object that matches `{name}`'s schema (tool_describe gives it); call it again with one."
    )
}

#[cfg(test)]
#[path = "deferred_tests.rs"]
mod tests;
