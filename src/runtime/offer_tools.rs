//! The tools a session's conversation is offered — the built-in ones, its
//! switched-off tools, the MCP servers' groups and their disclosure — set
//! up once for every reader of a conversation: the session service before
//! a request, `strata context` for its report.

use super::{McpSession, Runtime, RuntimeError};
use crate::config::ModelChoice;
use crate::conversation::{Conversation, DisclosureSettings};
use crate::store::{Store, StoreError};
use crate::tools::ToolEnv;
use std::sync::Arc;

impl Runtime {
    /// `conversation` with the built-in tools its session gets on `choice`
    /// (its switched-off tools off), and the environment they run in; or
    /// with tools off and why (off for the model, or refused for the
    /// session earlier).
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the session's tool settings cannot be
    /// read, [`RuntimeError::Config`] for a tools config that cannot work.
    pub fn offer_tools(
        &self,
        mut conversation: Conversation,
        choice: &ModelChoice,
        interactive: bool,
    ) -> Result<(Conversation, Option<Arc<ToolEnv>>), RuntimeError> {
        let session = conversation.session().clone();
        let stored = self.store.session_tools(session.id)?;
        if let Some(why) = stored.refused {
            conversation.disable_tools(why);
            return Ok((conversation, None));
        }
        match self.session_tools(&session, choice, interactive)? {
            Some((tools, env)) => {
                let mut conversation = conversation.with_tools(tools);
                for name in &stored.disabled {
                    conversation.set_tool_enabled(name, false);
                }
                Ok((conversation, Some(env)))
            }
            None => {
                if let Some(why) = super::tools_state(&self.config, choice).why_off {
                    conversation.disable_tools(why);
                }
                Ok((conversation, None))
            }
        }
    }
}

/// Offers `mcp`'s settled tools to `conversation` (which has tools): each
/// server's group added, or replaced when its list changed, with the
/// session's switched-off tools off; groups of servers no longer there
/// removed; disclosure planned once. Returns whether a group changed.
///
/// # Errors
/// [`StoreError`] when the session's switched-off tools cannot be read.
pub fn offer_mcp_tools(
    conversation: &mut Conversation,
    mcp: &McpSession,
    store: &Store,
) -> Result<bool, StoreError> {
    let Some(tools) = conversation.tools() else {
        return Ok(false);
    };
    let stale: Vec<(String, Vec<crate::tooling::schema::ToolSpec>)> = mcp
        .groups()
        .iter()
        .filter(|(server, specs)| {
            let now: Vec<&crate::tooling::schema::ToolSpec> = tools
                .set
                .specs()
                .iter()
                .filter(|e| e.group.as_deref() == Some(server.as_str()))
                .map(|e| &e.spec)
                .collect();
            now.len() != specs.len() || now.iter().zip(specs).any(|(a, b)| *a != b)
        })
        .cloned()
        .collect();
    // Groups of servers no longer in the session (a declined `.mcp.json`)
    // leave the array.
    conversation.retain_tool_groups(|g| mcp.groups().iter().any(|(server, _)| server == g));
    let changed = !stale.is_empty();
    if changed {
        let disabled = store.session_tools(conversation.session().id)?.disabled;
        for (server, specs) in stale {
            let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
            conversation.add_tool_group(&server, specs);
            for name in names.iter().filter(|n| disabled.contains(n)) {
                conversation.set_tool_enabled(name, false);
            }
        }
    }
    if conversation.disclosure().is_none() {
        conversation.set_disclosure(Some(DisclosureSettings {
            servers: mcp.deferred_settings(),
            wire: super::mcp_setup::wire(conversation.session().provider),
        }));
    }
    Ok(changed)
}
