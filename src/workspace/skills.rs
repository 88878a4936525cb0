//! Skill discovery: `<config>/skills/<name>/SKILL.md` and
//! `<workspace>/.strata/skills/<name>/SKILL.md` (the workspace wins a name
//! clash), metadata from YAML frontmatter (`name`, `description`, optional
//! `category`), cached by [`super::skills_cache`] under a manifest of
//! `(path, mtime_ns, size)`.
//!
//! A `SKILL.md` with malformed or missing frontmatter is still listed, by
//! its directory name and without a description (so `/skill <name>` keeps
//! working), and a warning names the file.

use super::WorkspaceError;
use super::read::{Reader, decode};
use super::skills_cache::{CachedSkill, SkillsCache};
use crate::prompt::{SkillEntry, split_frontmatter};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Frontmatter is looked for in this many leading bytes of a `SKILL.md`.
const FRONTMATTER_MAX_BYTES: u64 = 64 * 1024;

#[derive(Deserialize)]
struct Frontmatter {
    name: Option<String>,
    description: Option<String>,
    category: Option<String>,
}

/// One `SKILL.md` found on disk with its manifest key.
struct Found {
    dir_name: String,
    path: PathBuf,
    mtime_ns: u64,
    size: u64,
}

/// `SKILL.md` files under `skills_dir`, sorted by directory name. With
/// `confine`, skills whose real path is outside it are refused with a warning.
fn discover(skills_dir: &Path, confine: Option<&Path>, warnings: &mut Vec<String>) -> Vec<Found> {
    let Ok(entries) = fs::read_dir(skills_dir) else {
        return Vec::new();
    };
    let mut found: Vec<Found> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let path = entry.path().join("SKILL.md");
            let meta = fs::metadata(&path).ok().filter(fs::Metadata::is_file)?;
            if let Some(root) = confine {
                let real = fs::canonicalize(&path).ok()?;
                if !real.starts_with(root) {
                    warnings.push(
                        WorkspaceError::SkillOutsideWorkspace {
                            path: path.display().to_string(),
                        }
                        .to_string(),
                    );
                    return None;
                }
            }
            let mtime_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
            Some(Found {
                dir_name: entry.file_name().to_string_lossy().into_owned(),
                path,
                mtime_ns,
                size: meta.len(),
            })
        })
        .collect();
    found.sort_by(|a, b| a.dir_name.cmp(&b.dir_name));
    found
}

/// Parses the metadata of one `SKILL.md`, reading its head only.
fn parse(found: &Found, reader: &mut Reader) -> CachedSkill {
    let mut cached = CachedSkill {
        path: found.path.display().to_string(),
        mtime_ns: found.mtime_ns,
        size: found.size,
        name: found.dir_name.clone(),
        description: None,
        category: None,
        error: None,
    };
    let bytes = File::open(&found.path)
        .map_err(super::read::open_error)
        .and_then(|mut f| reader.read_up_to(&mut f, FRONTMATTER_MAX_BYTES));
    let bytes = match bytes {
        Ok(bytes) => bytes,
        Err(e) => {
            cached.error = Some(e.to_string());
            return cached;
        }
    };
    let (text, _) = decode(&bytes);
    let Some((yaml, _)) = split_frontmatter(&text) else {
        cached.error = Some("it has no YAML frontmatter between `---` lines".to_owned());
        return cached;
    };
    match serde_yaml_ng::from_str::<Frontmatter>(yaml) {
        Ok(meta) => {
            let clean = |v: Option<String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
            if let Some(name) = clean(meta.name) {
                cached.name = name;
            }
            cached.description = clean(meta.description);
            cached.category = clean(meta.category);
        }
        Err(e) => {
            let reason = e.to_string();
            let reason = reason.lines().next().unwrap_or("invalid YAML").to_owned();
            cached.error = Some(format!("its frontmatter is not valid YAML ({reason})"));
        }
    }
    cached
}

/// The skills available in `workspace_root` (see [`gather_skills`]), with
/// warnings about malformed ones; for `/skill` and its completion.
#[must_use]
pub fn list_skills(
    config_dir: &Path,
    workspace_root: &Path,
    data_dir: &Path,
) -> (Vec<SkillEntry>, Vec<String>) {
    let mut warnings = Vec::new();
    let skills = gather_skills(
        config_dir,
        workspace_root,
        data_dir,
        &mut Reader::default(),
        &mut warnings,
    );
    (skills, warnings)
}

/// The body of a `SKILL.md` (its frontmatter removed), at most `cap`
/// characters.
///
/// # Errors
/// One clause saying why it could not be read.
pub fn read_skill_body(path: &Path, cap: usize) -> Result<String, String> {
    let text = super::read_attachment(path, cap)?;
    let body = split_frontmatter(&text).map_or(text.as_str(), |(_, body)| body);
    Ok(body.trim().to_owned())
}

/// All skills of the config and workspace skill directories, sorted by name,
/// workspace skills replacing config skills of the same name. The cache in
/// `data_dir` is read, reused where the manifest matches, and rewritten when
/// anything changed.
pub(crate) fn gather_skills(
    config_dir: &Path,
    workspace_root: &Path,
    data_dir: &Path,
    reader: &mut Reader,
    warnings: &mut Vec<String>,
) -> Vec<SkillEntry> {
    let mut found = discover(&config_dir.join("skills"), None, warnings);
    found.extend(discover(
        &workspace_root.join(".strata").join("skills"),
        Some(workspace_root),
        warnings,
    ));
    let mut cache = SkillsCache::load(data_dir);
    let parsed: Vec<CachedSkill> = found
        .iter()
        .map(|f| match cache.lookup(&f.path, f.mtime_ns, f.size) {
            Some(hit) => hit.clone(),
            None => parse(f, reader),
        })
        .collect();
    if let Err(e) = cache.store(&parsed) {
        warnings.push(e.to_string());
    }
    let mut by_name: BTreeMap<String, CachedSkill> = BTreeMap::new();
    for skill in parsed {
        by_name.insert(skill.name.clone(), skill);
    }
    by_name
        .into_values()
        .map(|skill| {
            if let Some(reason) = &skill.error {
                warnings.push(
                    WorkspaceError::SkillFrontmatter {
                        path: skill.path.clone(),
                        reason: reason.clone(),
                    }
                    .to_string(),
                );
            }
            SkillEntry {
                name: skill.name,
                description: skill.description,
                category: skill.category,
                path: skill.path,
                size: skill.size,
            }
        })
        .collect()
}
