//! `strata model pull|path`.

use super::Env;
use crate::cli::args::ModelCommand;
use std::io::Write;
use strata::provider::local::{converted, model_file};
use strata::runtime::ensure_local_model;

pub fn model(env: &Env, command: &ModelCommand) -> anyhow::Result<()> {
    let models_dir = env.paths.models_dir();
    let given = env.config.providers.local.model_path.as_deref();
    match command {
        ModelCommand::Pull => {
            let path = if given.is_some() || model_file::source_path(&models_dir).is_none() {
                // A file of the user's own (checked, never downloaded or
                // converted), or a first download into a private data directory.
                ensure_local_model(&env.paths, &env.config, &mut |line| eprintln!("{line}"))?
            } else {
                // Both files are verified by their bytes and whatever is bad is done again.
                model_file::pull(&models_dir, &mut |line| eprintln!("{line}"))?
            };
            writeln!(std::io::stdout(), "{}", path.display())?;
            if let Some(found) = converted::running(&models_dir).filter(|f| f.path() == path) {
                eprintln!("{}", found.describe());
            }
        }
        ModelCommand::Path => {
            if let Some(path) = given {
                if let Some(problem) = model_file::file_problem(path) {
                    anyhow::bail!("{problem}; pass a GGUF model file to --model-path");
                }
                writeln!(std::io::stdout(), "{}", path.display())?;
                eprintln!("strata: runs the file given with --model-path as it is (unconverted)");
                return Ok(());
            }
            let Some(found) = converted::running(&models_dir) else {
                anyhow::bail!("the embedded model is not downloaded yet; run `strata model pull`");
            };
            if let Some(damage) = found.damage() {
                anyhow::bail!("{damage}");
            }
            writeln!(std::io::stdout(), "{}", found.path().display())?;
            // Which file of the pulled default runs and why, on stderr: stdout stays one path.
            eprintln!("strata: {}", found.describe());
        }
    }
    Ok(())
}
