//! `MSG` arguments (`compress --up-to`, `chat --edit`): one active message
//! of a session, resolved by the runtime's
//! [`message_ref`](strata::runtime::message_ref) rules (a position counting
//! from 1, an id, or a unique id prefix). A refusal is a usage error (exit
//! code 2).

use super::UsageError;
use strata::domain::{Message, Session};
use strata::runtime::Runtime;

/// The active message of `session` that `arg` names.
///
/// # Errors
/// [`UsageError`] when no active message or several match; the store's
/// error when the messages cannot be read.
pub fn resolve(runtime: &Runtime, session: &Session, arg: &str) -> anyhow::Result<Message> {
    let mut active = runtime.messages(session.id, false)?;
    match strata::runtime::message_ref::resolve(&active, arg) {
        Ok(i) => Ok(active.swap_remove(i)),
        Err(e) => Err(UsageError(format!("{}.", capitalised(&e.to_string()))).into()),
    }
}

fn capitalised(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().collect::<String>() + chars.as_str())
        .unwrap_or_default()
}
