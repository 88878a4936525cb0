//! `strata model pull|path`.

use super::Env;
use crate::cli::args::ModelCommand;
use std::io::Write;
use strata::provider::local::converted;
use strata::runtime::{ensure_local_model, local_model_file};

pub fn model(env: &Env, command: &ModelCommand) -> anyhow::Result<()> {
    match command {
        ModelCommand::Pull => {
            // An explicit pull tries a failed Q8_0 conversion again.
            converted::forget_failure(&env.paths.models_dir());
            let path = ensure_local_model(&env.paths, &env.config, &mut |line| eprintln!("{line}"))?;
            writeln!(std::io::stdout(), "{}", path.display())?;
            if let Some(found) = converted::running(&env.paths.models_dir()).filter(|f| f.path() == path) {
                eprintln!("{}", found.describe());
            }
        }
        ModelCommand::Path => match local_model_file(&env.paths, &env.config) {
            Some(path) => {
                writeln!(std::io::stdout(), "{}", path.display())?;
                // Which file of the pulled default runs, on stderr: stdout stays one path.
                if let Some(found) = converted::running(&env.paths.models_dir()).filter(|f| f.path() == path)
                {
                    eprintln!("strata: {}", found.describe());
                }
            }
            None => anyhow::bail!("the embedded model is not downloaded yet; run `strata model pull`"),
        },
    }
    Ok(())
}
