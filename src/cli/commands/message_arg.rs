//! `MSG` arguments (`compress --up-to`, `chat --edit`): one active message
//! of a session, named by its position (counting from 1 among the active
//! messages, as `strata show` numbers them), its id, or a unique prefix of
//! its id. A number of up to [`MAX_POSITION_DIGITS`] digits is a position;
//! anything else is an id or a prefix of at least [`MIN_PREFIX`]
//! characters. Every refusal is a usage error (exit code 2).

use super::UsageError;
use strata::domain::{Message, Session};
use strata::runtime::Runtime;

/// The most digits a position has; a longer run of digits is an id prefix.
const MAX_POSITION_DIGITS: usize = 7;
/// The shortest id prefix accepted.
const MIN_PREFIX: usize = 4;

/// The active message of `session` that `arg` names.
///
/// # Errors
/// [`UsageError`] when no active message or several match; the store's
/// error when the messages cannot be read.
pub fn resolve(runtime: &Runtime, session: &Session, arg: &str) -> anyhow::Result<Message> {
    let active = runtime.messages(session.id, false)?;
    let wanted = arg.trim().to_ascii_lowercase();
    let usage = |s: String| anyhow::Error::from(UsageError(s));
    if !wanted.is_empty() && wanted.len() <= MAX_POSITION_DIGITS && wanted.chars().all(|c| c.is_ascii_digit())
    {
        let pos: usize = wanted.parse().unwrap_or(0);
        return pos
            .checked_sub(1)
            .and_then(|i| active.get(i))
            .cloned()
            .ok_or_else(|| {
                usage(format!(
                    "There is no message {pos}: the session has {} active messages, numbered from 1 (`strata show {}` lists them).",
                    active.len(),
                    session.id.short()
                ))
            });
    }
    if wanted.chars().count() < MIN_PREFIX || !wanted.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return Err(usage(format!(
            "'{}' names no message; give its position (from 1, as `strata show` numbers them), its id, or at least {MIN_PREFIX} characters of the id.",
            arg.trim()
        )));
    }
    let mut found = active.iter().filter(|m| m.id.to_string().starts_with(&wanted));
    match (found.next(), found.count()) {
        (Some(m), 0) => Ok(m.clone()),
        (Some(_), more) => Err(usage(format!(
            "{} active messages have an id starting with '{wanted}'; give more of the id, or the message's position.",
            more + 1
        ))),
        (None, _) => Err(usage(format!(
            "No active message of the session has an id starting with '{wanted}' (archived messages cannot be chosen); `strata show {}` lists the active ones.",
            session.id.short()
        ))),
    }
}
