//! `strata doctor`.

use super::{Env, print_json, workspace_dir};
use crate::cli::args::DoctorArgs;
use crate::cli::log::Logging;
use std::io::Write;
use strata::runtime::doctor::{self, CheckStatus};

pub fn doctor(env: &Env, args: &DoctorArgs, logging: Option<&Logging>) -> anyhow::Result<()> {
    let mut checks = vec![match &env.config_error {
        Some(error) => doctor::Check {
            sandbox: None,
            name: "config",
            status: CheckStatus::Fail,
            detail: error.clone(),
        },
        None => doctor::config_check(
            &env.paths,
            &env.config,
            &env.config_warnings,
            env.choice().ok().map(|c| c.context_window),
        ),
    }];
    checks.extend(doctor::database_checks(&env.paths));
    let data_ok = checks
        .iter()
        .any(|c| c.name == "data" && c.status == CheckStatus::Ok);
    checks.push(match logging {
        Some(l) => doctor::log_check(&l.dir, &l.level, l.error.as_deref()),
        None => doctor::log_check(&env.paths.logs_dir(), "info", Some("it was not set up")),
    });
    checks.push(doctor::needs_data_dir(
        doctor::spill_check(&env.paths.spill_dir()),
        data_ok,
    ));
    checks.push(doctor::sandbox_check(&env.config));
    let lookup = |name: &str| std::env::var(name).ok();
    if env.config_error.is_some() {
        // The servers are in the config that could not be read.
        checks.push(doctor::Check {
            sandbox: None,
            name: "mcp",
            status: doctor::CheckStatus::Warn,
            detail: "the MCP servers are not checked because the config cannot be read; fix it first"
                .to_owned(),
        });
    } else {
        checks.extend(doctor::mcp_checks(
            &env.config.mcp,
            &workspace_dir(None)?,
            &lookup,
        ));
    }
    match env.choice() {
        Ok(choice) => {
            checks.push(doctor::provider_check(&choice, &lookup));
            if choice.provider == strata::config::ProviderKind::Local {
                let model = doctor::model_check(
                    strata::runtime::local_model_file(&env.paths, &env.config),
                    &env.paths.models_dir(),
                );
                // A model on disk is only read; one still to fetch needs
                // the data directory.
                let fetched = model.status == CheckStatus::Ok;
                checks.push(doctor::needs_data_dir(model, data_ok || fetched));
                checks.push(doctor::needs_data_dir(
                    doctor::kv_state_check(
                        &env.paths.kv_state_dir(),
                        strata::runtime::kv_state_cap_bytes(&env.config),
                    ),
                    data_ok,
                ));
            }
        }
        Err(e) => checks.push(doctor::Check {
            sandbox: None,
            name: "provider",
            status: CheckStatus::Fail,
            detail: e.to_string(),
        }),
    }
    let failed = checks.iter().filter(|c| c.status == CheckStatus::Fail).count();
    if args.json {
        print_json(&checks)?;
    } else {
        let mut out = std::io::stdout().lock();
        for c in &checks {
            let mark = match c.status {
                CheckStatus::Ok => "ok  ",
                CheckStatus::Warn => "warn",
                CheckStatus::Fail => "FAIL",
            };
            writeln!(out, "{mark}  {:<9} {}", c.name, c.detail)?;
        }
    }
    if failed > 0 {
        anyhow::bail!("{failed} check(s) failed; see the lines marked FAIL above");
    }
    Ok(())
}
