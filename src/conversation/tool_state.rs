//! The conversation's tools between turns: the full set, what each
//! request's tools array carries (deferred disclosure, DESIGN §16 and
//! issue 12: MCP tools over their share of the window leave the array
//! and three bridge tools stand in), tools switched off, and approvals
//! granted until exit. Every change of the set plans the request's tools
//! again, so the array and the `tool_search` listing follow the live
//! list with no drift, and keep their bytes while it does not change.

use super::{Conversation, Tools};
use crate::tooling::deferred::{Deferred, Disclosure, Wire};
use crate::tooling::schema::ToolSpec;
use std::collections::BTreeMap;

/// How the conversation decides which tools are deferred: each server's
/// setting and the wire form tokens are counted on.
#[derive(Clone, Debug, PartialEq)]
pub struct DisclosureSettings {
    /// `[mcp.servers.NAME] deferred`, by server (missing: `auto`).
    pub servers: BTreeMap<String, Deferred>,
    /// The form the session's provider receives tools in.
    pub wire: Wire,
}

impl Conversation {
    /// Offers `tools` with every request (the agent turn).
    #[must_use]
    pub fn with_tools(mut self, tools: Tools) -> Self {
        self.tools = Some(tools);
        self.replan();
        self
    }

    /// Approvals granted "until strata exits" earlier in this process
    /// (the conversation may be rebuilt within one process).
    #[must_use]
    pub fn with_grants(mut self, grants: Vec<crate::tooling::approval::Rule>) -> Self {
        self.grants = grants;
        self
    }

    /// The tools offered, when tools are on.
    #[must_use]
    pub fn tools(&self) -> Option<&Tools> {
        self.tools.as_ref()
    }

    /// Each tool of the request's tools array with its tokens, as the last
    /// pipeline run counted them (the same figures the request's estimate
    /// holds); counted now when the array changed since.
    #[must_use]
    pub fn tool_items(&self) -> std::borrow::Cow<'_, [crate::tokens::BudgetItem]> {
        match (&self.tool_items, self.tools.as_ref()) {
            (Some(items), _) => std::borrow::Cow::Borrowed(items),
            (None, Some(t)) => std::borrow::Cow::Owned(crate::tokens::tool_schema_items(
                self.counter.as_ref(),
                t.offered().array(),
            )),
            (None, None) => std::borrow::Cow::Borrowed(&[]),
        }
    }

    /// Why tools are off, when they are and the reason is known.
    #[must_use]
    pub fn tools_off(&self) -> Option<&str> {
        self.tools_off.as_deref()
    }

    /// Switches one tool on or off for the session (`/tools`, `/mcp`);
    /// `false` when tools are off or there is no such tool. The frozen
    /// prompt is not touched: only the request's tools array changes (and
    /// the deferred tools with it).
    pub fn set_tool_enabled(&mut self, name: &str, on: bool) -> bool {
        let Some(tools) = self.tools.as_mut() else {
            return false;
        };
        let found = tools.set.set_enabled(name, on);
        self.replan();
        found
    }

    /// Offers `specs` too, after the tools offered so far, as the group
    /// `group` (an MCP server: its tools, sorted), or replaces the group
    /// where it stands; the built-in prefix of the tools array keeps its
    /// bytes. Nothing happens when tools are off.
    pub fn add_tool_group(&mut self, group: &str, specs: Vec<ToolSpec>) {
        if let Some(tools) = self.tools.as_mut() {
            tools.set = tools.set.clone().with_extra(group, specs);
            self.replan();
        }
    }

    /// Stops offering the groups `keep` refuses (servers that left the
    /// session); nothing changes when it keeps them all.
    pub fn retain_tool_groups(&mut self, keep: impl Fn(&str) -> bool) {
        let Some(tools) = self.tools.as_mut() else {
            return;
        };
        if tools
            .set
            .specs()
            .iter()
            .all(|e| e.group.as_deref().is_none_or(&keep))
        {
            return;
        }
        tools.set = tools.set.clone().retain_groups(keep);
        self.replan();
    }

    /// Decides the request's tools with `settings` from now on (and at
    /// once); `None` sends every enabled tool.
    pub fn set_disclosure(&mut self, settings: Option<DisclosureSettings>) {
        self.disclosure = settings;
        self.replan();
    }

    /// The plan of the request's tools (each tool's tokens on the wire,
    /// whether it is deferred, what deferral saves), when disclosure is
    /// set and tools are on.
    #[must_use]
    pub fn disclosure(&self) -> Option<&Disclosure> {
        self.plan.as_ref()
    }

    /// Switches tools off for the rest of the session, saying why.
    pub fn disable_tools(&mut self, reason: String) {
        self.tools = None;
        self.tools_off = Some(reason);
        self.replan();
    }

    /// Plans the request's tools again from the full set (see the module
    /// doc); the counts made for the old array are dropped.
    pub(super) fn replan(&mut self) {
        self.tool_items = None;
        let (Some(tools), Some(settings)) = (self.tools.as_mut(), self.disclosure.as_ref()) else {
            self.plan = None;
            if let Some(tools) = self.tools.as_mut() {
                tools.request = None;
            }
            return;
        };
        let plan = Disclosure::plan(
            &tools.set,
            &settings.servers,
            self.window,
            settings.wire,
            self.counter.as_ref(),
        );
        tools.request = (!plan.deferred().is_empty()).then(|| plan.request().clone());
        self.plan = Some(plan);
    }
}
