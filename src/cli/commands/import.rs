//! `strata import FILE`.

use super::{Env, workspace_dir};
use crate::cli::args::ImportArgs;
use anyhow::Context as _;
use std::io::Write;

pub fn import(env: &Env, args: &ImportArgs) -> anyhow::Result<()> {
    let text = std::fs::read(&args.file).with_context(|| {
        format!(
            "cannot read the import file {}; check the path",
            args.file.display()
        )
    })?;
    let text = String::from_utf8(text).map_err(|_| {
        anyhow::anyhow!(
            "the import file {} is not UTF-8 text; export it as UTF-8 JSON and import again",
            args.file.display()
        )
    })?;
    let cwd = workspace_dir(args.workspace.as_deref())?;
    let choice = env.choice()?;
    let mut runtime = env.runtime()?;
    let imported = runtime.import(&text, args.title.clone(), &cwd, &choice, env.prompt_mode)?;
    for w in &imported.warnings {
        eprintln!("strata: warning: {w}");
    }
    let mut out = std::io::stdout().lock();
    // The short id, as every other command prints it (any command takes it).
    writeln!(out, "{}", imported.session.id.short())?;
    Ok(())
}
