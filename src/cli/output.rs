//! Small output helpers: number formatting, tables, and error sentences.

use std::io;

/// True when the error is a closed stdout (e.g. `strata sessions | head`),
/// which is not a failure.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<io::Error>())
        .any(|io| io.kind() == io::ErrorKind::BrokenPipe)
}

/// The error as one sentence: strata's own errors already are; a cause is
/// appended after a colon when the top message does not contain it.
pub fn sentence(e: &anyhow::Error) -> String {
    let top = e.to_string();
    match e.source() {
        Some(cause) => {
            let cause = cause.to_string();
            if top.contains(&cause) {
                top
            } else {
                format!("{top}: {cause}")
            }
        }
        None => top,
    }
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    strata::text::group_digits(n)
}

/// A unix-millisecond time as `YYYY-MM-DD HH:MM` in the local zone.
pub fn local_time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| {
            t.to_zoned(jiff::tz::TimeZone::system())
                .strftime("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|_| "?".to_owned())
}
