//! Facts from the process environment for the `environment` and `session`
//! layers: OS, shell and terminal, and the session date formatted without a
//! time of day (so the prompt stays byte-identical all day).

use crate::prompt::EnvFacts;
use std::env;
use std::fs;

impl EnvFacts {
    /// Reads the facts of this process: `std::env::consts::OS` with the
    /// distribution's `PRETTY_NAME` from `/etc/os-release` when there is one,
    /// `$SHELL`, and `$TERM_PROGRAM` or else `$TERM`. (The type is pure data
    /// in the core; this constructor lives with the adapter that may read the
    /// environment.)
    #[must_use]
    pub fn from_process() -> Self {
        let var = |name: &str| env::var(name).ok().filter(|v| !v.trim().is_empty());
        let pretty = fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|text| os_release_pretty_name(&text));
        let os = match pretty {
            Some(pretty) => format!("{} ({pretty})", env::consts::OS),
            None => env::consts::OS.to_owned(),
        };
        Self {
            os: Some(os),
            shell: var("SHELL"),
            terminal: var("TERM_PROGRAM").or_else(|| var("TERM")),
        }
    }
}

/// The `PRETTY_NAME` value of an `os-release` file, unquoted.
fn os_release_pretty_name(text: &str) -> Option<String> {
    let value = text.lines().find_map(|l| l.strip_prefix("PRETTY_NAME="))?.trim();
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    (!value.is_empty()).then(|| value.to_owned())
}

/// The date of `now` as the session line shows it, e.g.
/// `Sunday, November 29, 2026`: weekday, month, day, year, no time of day.
#[must_use]
pub fn format_session_date(now: &jiff::Zoned) -> String {
    now.strftime("%A, %B %-d, %Y").to_string()
}

/// The name of `now`'s time zone: its IANA name (`Europe/Paris`), else its
/// abbreviation at that instant (`UTC`, `CET`).
#[must_use]
pub fn session_time_zone(now: &jiff::Zoned) -> String {
    let tz = now.time_zone();
    match tz.iana_name() {
        Some(name) => name.to_owned(),
        None => tz.to_offset_info(now.timestamp()).abbreviation().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_date_has_no_time_of_day() {
        let now: jiff::Zoned = "2026-11-29T09:05:00[Europe/Paris]".parse().unwrap();
        assert_eq!(format_session_date(&now), "Sunday, November 29, 2026");
        assert_eq!(session_time_zone(&now), "Europe/Paris");
        let early: jiff::Zoned = "2026-03-01T23:59:59[UTC]".parse().unwrap();
        assert_eq!(format_session_date(&early), "Sunday, March 1, 2026");
    }

    #[test]
    fn pretty_name_is_unquoted() {
        let text = "NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
        assert_eq!(
            os_release_pretty_name(text).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(os_release_pretty_name("ID=x\n"), None);
    }
}
