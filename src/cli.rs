//! Command-line interface: `clap` definitions and one function per subcommand.
//! Errors reach stderr as one sentence; exit codes are 0 ok, 1 runtime error,
//! 2 usage error.

mod args;
mod commands;
mod log;
mod output;

use args::{Cli, Command};
use clap::Parser;
use std::io::Write as _;
use std::process::ExitCode;
use strata::runtime::ControlAction;

/// Parses the command line, runs the command and maps the result to an exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    if let Some(Command::Supervise(a)) = &cli.command {
        // Before the log and the config: it only holds the command's processes.
        let sandbox = match a.sandbox.as_deref().map(str::parse).transpose() {
            Ok(mode) => mode.map(|mode| strata::tools::sandbox::Spec {
                mode,
                network: a.network,
                required: a.required,
                writable: a.writable.clone(),
                protect: a.protect.clone(),
            }),
            Err(e) => {
                eprintln!(
                    "strata: {}; the command did not run.",
                    output::printable(&e.to_string())
                );
                return ExitCode::from(strata::tools::supervisor::SETUP_FAILED);
            }
        };
        return strata::tools::supervisor::supervise(a.parent, &a.command, a.report, sandbox.as_ref());
    }
    if let Some(Command::Confine(a)) = &cli.command {
        let spec = match a.sandbox.parse() {
            Ok(mode) => strata::tools::sandbox::Spec {
                mode,
                network: a.network,
                required: a.required,
                writable: a.writable.clone(),
                protect: None,
            },
            Err(e) => {
                eprintln!("strata: {e}; the command did not run.");
                return ExitCode::from(strata::tools::supervisor::SETUP_FAILED);
            }
        };
        return strata::tools::confine::confine(&spec, &a.command);
    }
    // One log for every command, the full-screen app included; without a
    // home there is nowhere to write it (and the command says why).
    let logging = strata::config::Paths::from_env()
        .ok()
        .map(|paths| log::init(&paths.logs_dir()));
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        command = command_name(cli.command.as_ref()),
        "strata started"
    );
    // `chat --json` reports its own failures in its event stream, and
    // `doctor --json` prints its checks (failed ones included) before it
    // fails.
    let json_errors = cli
        .command
        .as_ref()
        .is_some_and(|c| c.wants_json() && !matches!(c, Command::Chat(_) | Command::Doctor(_)));
    match run(cli, logging.as_ref()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let sentence = output::sentence(&e);
            let code: u8 = if is_usage_error(&e) { 2 } else { 1 };
            tracing::error!(error = %sentence, "command failed");
            if json_errors {
                // Scripts that read stdout see the failure as JSON too.
                let line = serde_json::json!({"type": "error", "message": sentence, "exit_code": code});
                let _ = writeln!(std::io::stdout(), "{line}");
            }
            eprintln!("strata: {}", output::printable(&sentence));
            ExitCode::from(code)
        }
    }
}

/// Bad arguments: a usage error, an unknown provider, a session id too
/// short or ambiguous to look up, or a `MSG` that names no single message.
fn is_usage_error(e: &anyhow::Error) -> bool {
    use strata::runtime::RuntimeError;
    use strata::store::StoreError;
    let bad_id = |s: &StoreError| {
        matches!(
            s,
            StoreError::IdTooShort { .. } | StoreError::AmbiguousSession { .. }
        )
    };
    e.downcast_ref::<commands::UsageError>().is_some()
        || matches!(
            e.downcast_ref::<strata::config::ConfigError>(),
            Some(strata::config::ConfigError::UnknownProvider(_))
        )
        || e.downcast_ref::<StoreError>().is_some_and(bad_id)
        || matches!(e.downcast_ref::<RuntimeError>(), Some(RuntimeError::Store(s)) if bad_id(s))
        || matches!(e.downcast_ref::<RuntimeError>(), Some(RuntimeError::Message(_)))
}

/// The subcommand's name for the log (never its arguments: they may hold
/// a message).
fn command_name(command: Option<&Command>) -> &'static str {
    match command {
        None => "app",
        Some(Command::Prompt(_)) => "prompt",
        Some(Command::Import(_)) => "import",
        Some(Command::Sessions(_)) => "sessions",
        Some(Command::Show(_)) => "show",
        Some(Command::Export(_)) => "export",
        Some(Command::Context(_)) => "context",
        Some(Command::Compress(_)) => "compress",
        Some(Command::UndoCompress(_)) => "undo-compress",
        Some(Command::UndoEditMessage(_)) => "undo-edit-message",
        Some(Command::UndoEdit(_)) => "undo-edit",
        Some(Command::Pin(_)) => "pin",
        Some(Command::Unpin(_)) => "unpin",
        Some(Command::Exclude(_)) => "exclude",
        Some(Command::Include(_)) => "include",
        Some(Command::Chat(_)) => "chat",
        Some(Command::Doctor(_)) => "doctor",
        Some(Command::Model(_)) => "model",
        Some(Command::Mcp(_)) => "mcp",
        Some(Command::Supervise(_)) => "__supervise",
        Some(Command::Confine(_)) => "__confine",
    }
}

fn run(cli: Cli, logging: Option<&log::Logging>) -> anyhow::Result<()> {
    if let Some(Command::Doctor(a)) = &cli.command {
        // The doctor reports a broken config as a check instead of stopping at it.
        return commands::doctor(&commands::Env::load_for_doctor(&cli.global)?, a, logging);
    }
    let env = commands::Env::load(&cli.global)?;
    match cli.command {
        None => commands::app(&env, cli.resume, cli.continue_latest),
        Some(Command::Prompt(a)) => commands::prompt(&env, &a),
        Some(Command::Import(a)) => commands::import(&env, &a),
        Some(Command::Sessions(a)) => commands::sessions(&env, &a),
        Some(Command::Show(a)) => commands::show(&env, &a),
        Some(Command::Export(a)) => commands::export(&env, &a),
        Some(Command::Context(a)) => commands::context(&env, &a),
        Some(Command::Compress(a)) => commands::compress(&env, &a),
        Some(Command::UndoCompress(a)) => commands::undo_compress(&env, &a),
        Some(Command::UndoEditMessage(a)) => commands::undo_edit_message(&env, &a),
        Some(Command::UndoEdit(a)) => commands::undo_edit(&env, &a),
        Some(Command::Pin(a)) => commands::control(&env, &a, ControlAction::Pin),
        Some(Command::Unpin(a)) => commands::control(&env, &a, ControlAction::Unpin),
        Some(Command::Exclude(a)) => commands::control(&env, &a, ControlAction::Exclude),
        Some(Command::Include(a)) => commands::control(&env, &a, ControlAction::Include),
        Some(Command::Chat(a)) => commands::chat(&env, &a),
        Some(Command::Doctor(_)) => Ok(()),
        Some(Command::Model(c)) => commands::model(&env, &c),
        Some(Command::Mcp(c)) => commands::mcp(&env, &c),
        Some(Command::Supervise(_) | Command::Confine(_)) => Ok(()),
    }
}
