//! How domain values are written to and read from SQLite columns: enum names
//! as TEXT, ids as hyphenated TEXT, lists and records as JSON TEXT, unsigned
//! counts as INTEGER (checked against `i64::MAX`).
//!
//! Reading helpers return `rusqlite::Error::FromSqlConversionFailure` for bad
//! values, which [`StoreError`] turns into [`StoreError::Decode`].

use super::StoreError;
use crate::domain::{CompactionKind, CompactionTrigger, MessageKind, MessageStatus, ProviderKind, Role};
use rusqlite::Row;
use rusqlite::types::Type;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::str::FromStr;

/// The TEXT stored for a message kind.
pub(crate) fn kind_str(kind: MessageKind) -> &'static str {
    match kind {
        MessageKind::Normal => "normal",
        MessageKind::Summary => "summary",
        MessageKind::Synthetic => "synthetic",
    }
}

fn parse_kind(s: &str) -> Option<MessageKind> {
    match s {
        "normal" => Some(MessageKind::Normal),
        "summary" => Some(MessageKind::Summary),
        "synthetic" => Some(MessageKind::Synthetic),
        _ => None,
    }
}

/// The TEXT stored for a message status.
pub(crate) fn status_str(status: MessageStatus) -> &'static str {
    match status {
        MessageStatus::Complete => "complete",
        MessageStatus::Streaming => "streaming",
        MessageStatus::Interrupted => "interrupted",
        MessageStatus::Error => "error",
    }
}

fn parse_status(s: &str) -> Option<MessageStatus> {
    match s {
        "complete" => Some(MessageStatus::Complete),
        "streaming" => Some(MessageStatus::Streaming),
        "interrupted" => Some(MessageStatus::Interrupted),
        "error" => Some(MessageStatus::Error),
        _ => None,
    }
}

/// The TEXT stored for a compaction trigger.
pub(crate) fn trigger_str(trigger: CompactionTrigger) -> &'static str {
    match trigger {
        CompactionTrigger::Auto => "auto",
        CompactionTrigger::Manual => "manual",
        CompactionTrigger::Overflow => "overflow",
    }
}

fn parse_trigger(s: &str) -> Option<CompactionTrigger> {
    match s {
        "auto" => Some(CompactionTrigger::Auto),
        "manual" => Some(CompactionTrigger::Manual),
        "overflow" => Some(CompactionTrigger::Overflow),
        _ => None,
    }
}

fn bad(column: usize, cause: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(column, Type::Text, cause.into())
}

fn text_enum<T>(
    row: &Row<'_>,
    column: usize,
    what: &str,
    parse: fn(&str) -> Option<T>,
) -> rusqlite::Result<T> {
    let s: String = row.get(column)?;
    parse(&s).ok_or_else(|| bad(column, format!("unknown {what} '{s}'")))
}

/// Reads a role column.
pub(crate) fn role(row: &Row<'_>, column: usize) -> rusqlite::Result<Role> {
    text_enum(row, column, "role", Role::parse)
}

/// Reads a message kind column.
pub(crate) fn kind(row: &Row<'_>, column: usize) -> rusqlite::Result<MessageKind> {
    text_enum(row, column, "message kind", parse_kind)
}

/// Reads a message status column.
pub(crate) fn status(row: &Row<'_>, column: usize) -> rusqlite::Result<MessageStatus> {
    text_enum(row, column, "message status", parse_status)
}

/// Reads a compaction trigger column.
pub(crate) fn trigger(row: &Row<'_>, column: usize) -> rusqlite::Result<CompactionTrigger> {
    text_enum(row, column, "compaction trigger", parse_trigger)
}

/// Reads a compaction kind column (`summary`, `edit` or `edit_undo`).
pub(crate) fn compaction_kind(row: &Row<'_>, column: usize) -> rusqlite::Result<CompactionKind> {
    text_enum(row, column, "compaction kind", CompactionKind::parse)
}

/// Reads a provider column (`openai`, `anthropic` or `local`).
pub(crate) fn provider(row: &Row<'_>, column: usize) -> rusqlite::Result<ProviderKind> {
    text_enum(row, column, "provider", ProviderKind::parse)
}

/// Reads an id column (any of the UUID newtypes).
pub(crate) fn id<T: FromStr>(row: &Row<'_>, column: usize) -> rusqlite::Result<T>
where
    T::Err: std::fmt::Display,
{
    let s: String = row.get(column)?;
    s.parse().map_err(|e| bad(column, format!("bad id '{s}': {e}")))
}

/// Reads a nullable id column.
pub(crate) fn opt_id<T: FromStr>(row: &Row<'_>, column: usize) -> rusqlite::Result<Option<T>>
where
    T::Err: std::fmt::Display,
{
    let s: Option<String> = row.get(column)?;
    s.map(|s| s.parse().map_err(|e| bad(column, format!("bad id '{s}': {e}"))))
        .transpose()
}

/// Reads a non-negative INTEGER column as `u64`.
pub(crate) fn uint(row: &Row<'_>, column: usize) -> rusqlite::Result<u64> {
    let v: i64 = row.get(column)?;
    u64::try_from(v).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(column, v))
}

/// Reads a nullable non-negative INTEGER column as `u64`.
pub(crate) fn opt_uint(row: &Row<'_>, column: usize) -> rusqlite::Result<Option<u64>> {
    let v: Option<i64> = row.get(column)?;
    v.map(|v| u64::try_from(v).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(column, v)))
        .transpose()
}

/// Reads a JSON column.
pub(crate) fn json<T: DeserializeOwned>(row: &Row<'_>, column: usize) -> rusqlite::Result<T> {
    let s: String = row.get(column)?;
    serde_json::from_str(&s).map_err(|e| bad(column, format!("bad JSON: {e}")))
}

/// Serialises a value for a JSON column.
pub(crate) fn to_json<T: Serialize>(value: &T, what: &'static str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Decode {
        what: format!("{what} cannot be written as JSON: {e}"),
    })
}

/// An unsigned count as an SQLite INTEGER.
pub(crate) fn int(value: u64, what: &'static str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::OutOfRange { what })
}

/// A nullable unsigned count as an SQLite INTEGER.
pub(crate) fn opt_int(value: Option<u64>, what: &'static str) -> Result<Option<i64>, StoreError> {
    value.map(|v| int(v, what)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_enum_name_parses_back() {
        for k in [MessageKind::Normal, MessageKind::Summary, MessageKind::Synthetic] {
            assert_eq!(parse_kind(kind_str(k)), Some(k));
        }
        for s in [
            MessageStatus::Complete,
            MessageStatus::Streaming,
            MessageStatus::Interrupted,
            MessageStatus::Error,
        ] {
            assert_eq!(parse_status(status_str(s)), Some(s));
        }
        for t in [
            CompactionTrigger::Auto,
            CompactionTrigger::Manual,
            CompactionTrigger::Overflow,
        ] {
            assert_eq!(parse_trigger(trigger_str(t)), Some(t));
        }
    }

    #[test]
    fn enum_names_match_serde_names() {
        let serde_name = |v: serde_json::Value| v.as_str().map(str::to_owned);
        assert_eq!(
            serde_name(serde_json::json!(MessageStatus::Interrupted)).as_deref(),
            Some(status_str(MessageStatus::Interrupted))
        );
        assert_eq!(
            serde_name(serde_json::json!(MessageKind::Synthetic)).as_deref(),
            Some(kind_str(MessageKind::Synthetic))
        );
        assert_eq!(
            serde_name(serde_json::json!(CompactionTrigger::Overflow)).as_deref(),
            Some(trigger_str(CompactionTrigger::Overflow))
        );
    }

    #[test]
    fn counts_above_i64_max_are_refused() {
        assert_eq!(int(7, "x").ok(), Some(7));
        assert!(matches!(
            int(u64::MAX, "tokens"),
            Err(StoreError::OutOfRange { what: "tokens" })
        ));
    }
}
