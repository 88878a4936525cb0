//! Where a session works: the git root (found by looking for `.git` upwards),
//! the workspace root, the directory chain from the root down to the working
//! directory, and the current branch read from `.git/HEAD` (no git process).

use std::fs;
use std::path::{Path, PathBuf};

/// The nearest ancestor of `dir` (itself included) holding a `.git`
/// directory or file (a worktree or submodule), if any.
#[must_use]
pub fn find_git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| fs::symlink_metadata(d.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

/// The directories from `root` down to `cwd`, both included. When `cwd` is
/// not under `root`, just `cwd`.
#[must_use]
pub fn chain(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    if !cwd.starts_with(root) {
        return vec![cwd.to_path_buf()];
    }
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(root))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

/// The branch checked out in the repository at `git_root`, read from its
/// `HEAD`: `main`, or `detached at 1a2b3c4` for a detached head; `None` when
/// it cannot be read.
#[must_use]
pub fn git_branch(git_root: &Path) -> Option<String> {
    let dot_git = git_root.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        let pointer = fs::read_to_string(&dot_git).ok()?;
        let target = pointer.trim().strip_prefix("gitdir:")?.trim();
        git_root.join(target)
    };
    let head = fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    if let Some(reference) = head.strip_prefix("ref:") {
        let reference = reference.trim();
        return Some(
            reference
                .strip_prefix("refs/heads/")
                .unwrap_or(reference)
                .to_owned(),
        );
    }
    let short: String = head.chars().take(7).collect();
    (short.len() == 7 && short.chars().all(|c| c.is_ascii_hexdigit())).then(|| format!("detached at {short}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_runs_from_root_to_cwd() {
        let chain = chain(Path::new("/w"), Path::new("/w/a/b"));
        assert_eq!(
            chain,
            [
                PathBuf::from("/w"),
                PathBuf::from("/w/a"),
                PathBuf::from("/w/a/b")
            ]
        );
        assert_eq!(
            super::chain(Path::new("/w"), Path::new("/x")),
            [PathBuf::from("/x")]
        );
    }

    #[test]
    fn branch_comes_from_head_in_a_repo_or_a_worktree() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        fs::create_dir_all(repo.join(".git")).unwrap();
        fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        assert_eq!(git_branch(&repo).as_deref(), Some("feature/x"));
        assert_eq!(find_git_root(&repo.join("a/b")), Some(repo.clone()));

        let wt = dir.path().join("wt");
        fs::create_dir_all(repo.join(".git/worktrees/wt")).unwrap();
        fs::write(
            repo.join(".git/worktrees/wt/HEAD"),
            "0123456789abcdef0123456789abcdef01234567\n",
        )
        .unwrap();
        fs::create_dir_all(&wt).unwrap();
        fs::write(wt.join(".git"), "gitdir: ../repo/.git/worktrees/wt\n").unwrap();
        assert_eq!(git_branch(&wt).as_deref(), Some("detached at 0123456"));
    }
}
