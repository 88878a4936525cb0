//! `strata model pull|path`.

use super::Env;
use crate::cli::args::ModelCommand;
use std::io::Write;
use strata::runtime::{ensure_local_model, local_model_file};

pub fn model(env: &Env, command: &ModelCommand) -> anyhow::Result<()> {
    match command {
        ModelCommand::Pull => {
            let path = ensure_local_model(&env.paths, &env.config, &mut |line| eprintln!("{line}"))?;
            writeln!(std::io::stdout(), "{}", path.display())?;
        }
        ModelCommand::Path => match local_model_file(&env.paths, &env.config) {
            Some(path) => writeln!(std::io::stdout(), "{}", path.display())?,
            None => anyhow::bail!("the embedded model is not downloaded yet; run `strata model pull`"),
        },
    }
    Ok(())
}
