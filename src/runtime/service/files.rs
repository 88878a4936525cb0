//! File-writing commands of the session service: `/memory` appends to
//! `MEMORY.md` in the config directory, `/export` writes a transcript into
//! the data directory's `exports/` (never into the repository).

use super::{ExportFormat, short_id};
use crate::config::Paths;
use crate::domain::Session;
use crate::runtime::{Runtime, export_json, export_markdown};
use anyhow::Context as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Appends `- text` as a line to `config_dir/MEMORY.md` (creating it) and
/// returns its path.
///
/// # Errors
/// When the file cannot be opened or written.
pub fn append_memory(paths: &Paths, text: &str) -> anyhow::Result<PathBuf> {
    let path = paths.config_dir.join("MEMORY.md");
    std::fs::create_dir_all(&paths.config_dir)
        .with_context(|| format!("cannot create {}; check STRATA_HOME", paths.config_dir.display()))?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot open {}; check its permissions", path.display()))?;
    let line = text.replace('\n', " ");
    writeln!(file, "- {}", line.trim()).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Writes the session to `dir/strata-<id>.md` or `.json` (creating `dir`)
/// and returns the path.
///
/// # Errors
/// When the store cannot be read or the file written.
pub fn export(
    runtime: &Runtime,
    session: &Session,
    format: ExportFormat,
    dir: &Path,
) -> anyhow::Result<PathBuf> {
    let prompt = runtime.store.current_prompt(session.id)?;
    let messages = runtime.store.messages(session.id, false)?;
    let (ext, text) = match format {
        ExportFormat::Markdown => ("md", export_markdown(session, prompt.as_ref(), &messages)),
        ExportFormat::Json => (
            "json",
            serde_json::to_string_pretty(&export_json(session, prompt.as_ref(), &messages))?,
        ),
    };
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create {}; check the data directory's permissions",
            dir.display()
        )
    })?;
    let path = dir.join(format!("strata-{}.{ext}", short_id(session.id)));
    std::fs::write(&path, text)
        .with_context(|| format!("cannot write {}; check the directory", path.display()))?;
    Ok(path)
}
