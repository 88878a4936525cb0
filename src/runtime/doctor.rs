//! `strata doctor`: checks of the config, the data directory, the database,
//! the MCP servers and the provider, each one line a user can act on.

use crate::config::{McpConfig, ModelChoice, Paths, ProviderKind};
use crate::provider::Wire;
use crate::store::Store;
use serde::Serialize;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

/// How long the provider reachability check waits for a TCP connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The outcome of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// Fine.
    Ok,
    /// Works, but something deserves attention.
    Warn,
    /// Broken; the detail says what to do.
    Fail,
}

/// One check: what was looked at, the verdict and a sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Short name: `config`, `data`, `database`, `log`, `spill`, `mcp`,
    /// `provider`, `model`.
    pub name: &'static str,
    /// Verdict.
    pub status: CheckStatus,
    /// One sentence.
    pub detail: String,
    /// The `sandbox` check: the kernel's Landlock ABI and what the shell's
    /// sandbox covers with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::tools::sandbox::Support>,
}

/// The shell's sandbox on this kernel and as `[tools.sandbox]` sets it:
/// ok when Landlock confines commands fully, a warning when it is partial
/// (an older ABI), off, or missing (commands then run unconfined), a
/// failure when it is missing and `required` is set (`shell` is refused).
#[must_use]
pub fn sandbox_check(config: &crate::config::Config) -> Check {
    let support = crate::tools::sandbox::support().clone();
    let sandbox = &config.tools.sandbox;
    let network = if sandbox.network {
        "network on"
    } else {
        "network off"
    };
    let relative: Vec<String> = sandbox
        .writable
        .iter()
        .filter(|p| !p.is_absolute() && !p.starts_with("~"))
        .map(|p| p.display().to_string())
        .collect();
    let (status, detail) = if let Err(e) = sandbox.mode.parse::<crate::tooling::sandbox::Mode>() {
        (CheckStatus::Fail, format!("[tools.sandbox] mode: {e}"))
    } else if !relative.is_empty() {
        (
            CheckStatus::Warn,
            format!(
                "[tools.sandbox] writable entries must be absolute or start with ~/; {} allows nothing",
                relative.join(", ")
            ),
        )
    } else if sandbox.mode == "off" {
        (
            CheckStatus::Warn,
            "[tools.sandbox] mode is off: shell commands run with your permissions".to_owned(),
        )
    } else if !support.available() {
        let status = if sandbox.required {
            CheckStatus::Fail
        } else {
            CheckStatus::Warn
        };
        let then = if sandbox.required {
            "shell is refused ([tools.sandbox] required)"
        } else {
            "shell commands run unconfined"
        };
        (
            status,
            format!("not sandboxed: this kernel has no Landlock, so {then}"),
        )
    } else if support.missing.is_empty() {
        (
            CheckStatus::Ok,
            format!(
                "{} with Landlock ABI {}, {network}: covers {}",
                sandbox.mode,
                support.abi,
                support.covers.join(", ")
            ),
        )
    } else {
        (
            CheckStatus::Warn,
            format!(
                "{} with Landlock ABI {}, {network}: partial, this kernel cannot confine {}",
                sandbox.mode,
                support.abi,
                support.missing.join(", ")
            ),
        )
    };
    Check {
        sandbox: Some(support),
        name: "sandbox",
        status,
        detail,
    }
}

fn check(name: &'static str, status: CheckStatus, detail: impl Into<String>) -> Check {
    Check {
        sandbox: None,
        name,
        status,
        detail: detail.into(),
    }
}

/// Numbers of the config outside their range: `Err` for one that makes
/// every request fail (`[model] max_tokens` not below the context window
/// `window`), `Ok` with a sentence per value strata clamps or ignores
/// (`[compression] protect_last_n` outside 3 to 8, `threshold` outside
/// 0 to 1).
///
/// # Errors
/// The sentence for `max_tokens`.
pub fn config_range_problems(
    config: &crate::config::Config,
    window: Option<u64>,
) -> Result<Vec<String>, String> {
    if let (Some(max_tokens), Some(window)) = (config.model.max_tokens, window)
        && max_tokens >= window
    {
        return Err(format!(
            "[model] max_tokens = {max_tokens} leaves no room for the prompt in a window of {window} tokens; set it below the window (a quarter of it is usual) or remove it"
        ));
    }
    let c = &config.compression;
    let mut problems = Vec::new();
    if !(3..=8).contains(&c.protect_last_n) {
        problems.push(format!(
            "[compression] protect_last_n = {} is outside 3 to 8, so {} is used; set a value from 3 to 8",
            c.protect_last_n,
            c.protect_last_n.clamp(3, 8)
        ));
    }
    if !(c.threshold > 0.0 && c.threshold <= 1.0) {
        problems.push(format!(
            "[compression] threshold = {} is a share of the effective window, above 0 and at most 1; for a count of tokens set threshold_tokens",
            c.threshold
        ));
    }
    if config.tools.spill_max_mb == 0 {
        problems.push(
            "[tools] spill_max_mb = 0 removes every other session's spill files, so a cut tool output can be read whole only in the session that made it; give it a size in MB (the default is 256)"
                .to_owned(),
        );
    }
    Ok(problems)
}

/// The config file's state, from the warnings its loading produced and the
/// ranges of its numbers (`window`: the chosen model's context window,
/// when known).
#[must_use]
pub fn config_check(
    paths: &Paths,
    config: &crate::config::Config,
    warnings: &[String],
    window: Option<u64>,
) -> Check {
    let file = paths.config_file();
    let tools = super::tools_config_problems(config);
    if let Err(why) = &tools {
        return check("config", CheckStatus::Fail, format!("{}: {why}", file.display()));
    }
    let ranges = config_range_problems(config, window);
    if let Err(why) = &ranges {
        return check("config", CheckStatus::Fail, format!("{}: {why}", file.display()));
    }
    let warnings: Vec<String> = warnings
        .iter()
        .cloned()
        .chain(tools.unwrap_or_default())
        .chain(ranges.unwrap_or_default())
        .collect();
    if !file.exists() {
        return check(
            "config",
            CheckStatus::Ok,
            format!("no {} (defaults in use)", file.display()),
        );
    }
    if warnings.is_empty() {
        check("config", CheckStatus::Ok, format!("{} is valid", file.display()))
    } else {
        check(
            "config",
            CheckStatus::Warn,
            format!("{}: {}", file.display(), warnings.join(" · ")),
        )
    }
}

/// The data directory and the database: opens it, runs `PRAGMA integrity_check`.
#[must_use]
pub fn database_checks(paths: &Paths) -> Vec<Check> {
    let data = match crate::store::check_writable_dir(&paths.data_dir) {
        Ok(()) => check(
            "data",
            CheckStatus::Ok,
            format!("{} is writable", paths.data_dir.display()),
        ),
        Err(e) => check("data", CheckStatus::Fail, e.to_string()),
    };
    let db = paths.database();
    let database = match Store::open(&db) {
        Err(e) => check("database", CheckStatus::Fail, e.to_string()),
        Ok(store) => match store.integrity_check() {
            Ok(s) if s == "ok" => check(
                "database",
                CheckStatus::Ok,
                format!(
                    "{} (schema {}) passes the integrity check",
                    db.display(),
                    store.schema_version().unwrap_or(0)
                ),
            ),
            Ok(s) => check(
                "database",
                CheckStatus::Fail,
                format!(
                    "{} fails the integrity check ({s}); restore a backup or move it away",
                    db.display()
                ),
            ),
            Err(e) => check("database", CheckStatus::Fail, e.to_string()),
        },
    };
    vec![data, database]
}

/// `check` failed when the data directory cannot be written (`data_ok`
/// false): what lives in it cannot be kept either.
#[must_use]
pub fn needs_data_dir(mut check: Check, data_ok: bool) -> Check {
    if !data_ok {
        check.status = CheckStatus::Fail;
        check.detail = format!(
            "{}; nothing can be kept there while the data directory cannot be written",
            check.detail
        );
    }
    check
}

/// The log directory, the filter in use (`level`, from `STRATA_LOG`) and,
/// when the log could not be opened, why (`error`).
#[must_use]
pub fn log_check(dir: &std::path::Path, level: &str, error: Option<&str>) -> Check {
    match error {
        None => check(
            "log",
            CheckStatus::Ok,
            format!(
                "{} holds the daily log files strata.log.YYYY-MM-DD (level {level}; set STRATA_LOG to change it)",
                dir.display()
            ),
        ),
        Some(why) => check(
            "log",
            CheckStatus::Warn,
            format!(
                "no log is written to {} ({why}); make the data directory writable",
                dir.display()
            ),
        ),
    }
}

/// The spill directory: how many whole tool outputs it keeps and their size
/// (they are removed after seven days).
#[must_use]
pub fn spill_check(dir: &std::path::Path) -> Check {
    let usage = crate::tools::spill::usage(dir);
    let mib = usage.bytes as f64 / (1024.0 * 1024.0);
    check(
        "spill",
        CheckStatus::Ok,
        format!(
            "{} holds {} tool output file(s), {mib:.1} MiB; files older than 7 days are removed at start-up",
            dir.display(),
            usage.files
        ),
    )
}

/// One `mcp` check per server of `[mcp]`, by name, without starting any:
/// an enabled server is `ok` when its `${VAR}`s are set and its command
/// resolves (on its own `PATH`, or strata's, from `cwd`), and fails with the
/// sentence a session would mark it unavailable with
/// ([`super::mcp_setup::spec_for`]); a disabled one is `ok`, listed as
/// disabled. With no servers, one `ok` line saying so. `env` gives
/// strata's variables.
#[must_use]
pub fn mcp_checks(config: &McpConfig, cwd: &Path, env: &dyn Fn(&str) -> Option<String>) -> Vec<Check> {
    if config.servers.is_empty() {
        return vec![check(
            "mcp",
            CheckStatus::Ok,
            "no MCP servers are configured; add one with `strata mcp add NAME -- COMMAND ARGS…`",
        )];
    }
    config
        .servers
        .iter()
        .map(|(name, server)| {
            if !server.enabled {
                return check(
                    "mcp",
                    CheckStatus::Ok,
                    format!("`{name}` is disabled ([mcp.servers.{name}] enabled = false); sessions do not start it"),
                );
            }
            let supervisor = super::mcp_setup::supervisor_binary();
            let resolved = super::mcp_setup::spec_for(name, server, cwd, env, supervisor.as_deref()).and_then(|spec| {
                let path = spec
                    .env
                    .iter()
                    .find(|(k, _)| k == "PATH")
                    .map(|(_, v)| v.clone())
                    .or_else(|| env("PATH"));
                crate::mcp::resolve_program(name, &spec.command, path.as_deref(), cwd)
                    .map_err(|why| crate::mcp::Refused { name: name.clone(), why })
            });
            match resolved {
                Ok(program) => check(
                    "mcp",
                    CheckStatus::Ok,
                    format!("`{name}` runs {} (not started here)", program.display()),
                ),
                Err(refused) => check("mcp", CheckStatus::Fail, refused.why),
            }
        })
        .collect()
}

/// The embedded model's file: present (a GGUF file by its magic bytes;
/// for the pulled default, which of its files runs and why, by their
/// sha256), or to be downloaded on first use. `file` is the configured
/// file (`--model-path`) or the pulled default's.
#[must_use]
pub fn model_check(file: Option<std::path::PathBuf>, models_dir: &std::path::Path) -> Check {
    use crate::provider::local::{converted, model_file};
    let Some(path) = file else {
        return check(
            "model",
            CheckStatus::Warn,
            "the embedded model is not downloaded yet; it is fetched (about 98 MB) on first use, or now with `strata model pull`",
        );
    };
    if let Some(problem) = model_file::file_problem(&path) {
        // A file of the user's own is fixed by pointing elsewhere; the
        // pulled one by pulling it again.
        let advice = if path.starts_with(models_dir) {
            "run `strata model pull`"
        } else {
            "pass another GGUF file to --model-path or [providers.local] model_path"
        };
        return check("model", CheckStatus::Fail, format!("{problem}; {advice}"));
    }
    match converted::running(models_dir).filter(|found| found.path() == path) {
        Some(found) if found.damage().is_some() => check("model", CheckStatus::Fail, found.describe()),
        Some(found) => check(
            "model",
            if found.degraded() {
                CheckStatus::Warn
            } else {
                CheckStatus::Ok
            },
            format!("{} is present; {}", path.display(), found.describe()),
        ),
        None => check(
            "model",
            CheckStatus::Ok,
            format!("{} is present (a GGUF file, run as it is)", path.display()),
        ),
    }
}

/// The embedded model's saved KV state: its directory, disk use (strata's
/// states, unfinished saves, other files) and cap; a warning when the
/// directory cannot be written.
#[must_use]
pub fn kv_state_check(dir: &std::path::Path, cap_bytes: u64) -> Check {
    use crate::provider::local::kv_state;
    let used = kv_state::usage(dir);
    let mut detail = if cap_bytes == 0 {
        let on_disk = if used.entries > 0 {
            format!(
                "{} in {} saved state(s) still in {} are removed at the next start",
                megabytes(used.bytes),
                used.entries,
                dir.display()
            )
        } else {
            "each process prefills its conversation again".to_owned()
        };
        format!("not saved ([providers.local] kv_state_max_mb = 0); {on_disk}")
    } else {
        format!(
            "{} in {} saved state(s) of a {} cap in {} (set [providers.local] kv_state_max_mb)",
            megabytes(used.bytes),
            used.entries,
            megabytes(cap_bytes),
            dir.display()
        )
    };
    if used.orphan_bytes > 0 {
        detail.push_str(&format!(
            "; {} of states without their .meta description (a save that stopped, or a file removed by hand: removed 10 minutes after they were written)",
            megabytes(used.orphan_bytes)
        ));
    }
    let over_cap = cap_bytes > 0 && used.bytes + used.orphan_bytes > cap_bytes;
    if over_cap && used.bytes > cap_bytes {
        detail.push_str("; over the cap: the next save removes the least recently used states");
    } else if over_cap {
        detail.push_str("; over the cap until the states without a description are removed");
    }
    if used.unfinished_bytes > 0 {
        detail.push_str(&format!(
            "; {} of unfinished saves (being written, or left by a process that stopped: removed at the next start)",
            megabytes(used.unfinished_bytes)
        ));
    }
    if used.other_bytes > 0 {
        detail.push_str(&format!(
            "; {} of other files in {} (not strata's: neither counted nor removed)",
            megabytes(used.other_bytes),
            dir.display()
        ));
    }
    // With a cap of 0 the directory is only written to remove old states.
    match kv_state::write_problem(dir).filter(|_| cap_bytes > 0 || used.entries > 0) {
        Some(problem) => check(
            "kv state",
            CheckStatus::Warn,
            format!("{problem}: no state is saved; make it writable ({detail})"),
        ),
        None if over_cap => check("kv state", CheckStatus::Warn, detail),
        None => check("kv state", CheckStatus::Ok, detail),
    }
}

/// Bytes as megabytes (10^6) with one decimal.
fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The provider: is a key set (never shown), and does its host accept a
/// TCP connection within [`CONNECT_TIMEOUT`].
#[must_use]
pub fn provider_check(choice: &ModelChoice, env: &dyn Fn(&str) -> Option<String>) -> Check {
    let name = choice.provider.as_str();
    if choice.provider == ProviderKind::Local {
        return check(
            "provider",
            CheckStatus::Ok,
            format!("local model {}", choice.model),
        );
    }
    let default_url = match choice.provider {
        ProviderKind::Anthropic => Wire::Anthropic.default_base_url(),
        _ => Wire::OpenAi.default_base_url(),
    };
    let url = choice.base_url.clone().unwrap_or_else(|| default_url.to_owned());
    let key_env = choice.api_key_env.clone().unwrap_or_default();
    let has_key = env(&key_env).is_some_and(|k| !k.trim().is_empty());
    if !has_key && choice.base_url.is_none() {
        return check(
            "provider",
            CheckStatus::Fail,
            format!("{name} needs an API key in {key_env}; set it or choose another provider"),
        );
    }
    match reachable(&url) {
        Ok(()) => check(
            "provider",
            CheckStatus::Ok,
            format!(
                "{name} {} at {url} is reachable{}",
                choice.model,
                if has_key { ", key set" } else { "" }
            ),
        ),
        Err(why) => check(
            "provider",
            CheckStatus::Fail,
            format!("cannot reach {url} ({why}); check the network and the base URL"),
        ),
    }
}

fn reachable(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("invalid URL: {e}"))?;
    let host = parsed.host_str().ok_or("no host in the URL")?;
    let port = parsed
        .port_or_known_default()
        .ok_or("no port for the URL's scheme")?;
    let addrs: Vec<_> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .collect();
    let mut last = String::from("no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(base_url: Option<String>) -> ModelChoice {
        ModelChoice {
            provider: ProviderKind::OpenAi,
            model: "m".into(),
            context_window: 8_192,
            window_source: crate::config::WindowSource::Catalog,
            max_tokens: 1_024,
            api_key_env: Some("K".into()),
            base_url,
        }
    }

    #[test]
    fn a_listening_server_is_reachable_and_a_closed_port_is_not() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let c = provider_check(&choice(Some(url)), &|_| None);
        assert_eq!(c.status, CheckStatus::Ok, "{c:?}");
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let c = provider_check(&choice(Some(format!("http://127.0.0.1:{port}/v1"))), &|_| None);
        assert_eq!(c.status, CheckStatus::Fail, "{c:?}");
        assert!(c.detail.starts_with("cannot reach"));
    }

    #[test]
    fn a_hosted_provider_without_a_key_fails_and_names_the_variable() {
        let c = provider_check(&choice(None), &|_| None);
        assert_eq!(c.status, CheckStatus::Fail);
        assert!(c.detail.contains(" K;"), "{}", c.detail);
    }
}
