//! The shell's sandbox: Landlock and seccomp applied by `strata
//! __confine` before it becomes `bash` (DESIGN §19 "The shell").
//!
//! strata describes the sandbox ([`Spec`]) in the supervisor's arguments
//! ([`Spec::args`], parsed back by the command line); the supervisor runs
//! `strata __confine` with them, which calls [`apply`] and execs bash:
//! both the Landlock domain and the seccomp filter are inherited by every
//! process below it. What the rules allow:
//!
//! - read and execute everywhere; every other filesystem right Landlock
//!   knows (best effort: what this kernel has) only beneath [`Spec::writable`]
//!   (the workspace and its git directories, `[tools] allow_paths`,
//!   `[tools.sandbox] writable`, the session's temporary directory,
//!   `/dev/shm`, `/dev/null`);
//! - network off: Landlock denies TCP bind and connect (ABI 4), and scopes
//!   abstract Unix sockets and signals to the sandbox (ABI 6); seccomp
//!   denies `socket()` for every family (`EPERM`) while `socketpair()`
//!   stays, so no Unix socket either (D-Bus, ssh-agent, docker.sock, name
//!   services);
//! - always: seccomp denies `io_uring_setup`, `io_uring_enter` and
//!   `io_uring_register` (their socket operation would bypass a `socket()`
//!   filter), the kernel keyring (`keyctl`, `add_key`, `request_key`) and
//!   set-user-id or set-group-id bits in `chmod`, and signals stay inside
//!   the sandbox.
//!
//! The supervisor itself stays outside: `strata __confine`
//! ([`super::confine`]) applies the rules between it and bash, so the
//! command can neither signal nor trace the supervisor, which sweeps and
//! restores the protected files ([`super::protect`]) whatever the
//! command did.
//!
//! [`support`] probes the kernel once per process for `strata doctor`, the
//! approval policy and the tool results.

use crate::tooling::sandbox::Mode;
use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The newest Landlock ABI strata asks for; older kernels get what they
/// have (best effort).
const ABI_WANTED: ABI = ABI::V10;

/// Variables removed from a command's environment when the network is
/// off: they point at sockets the sandbox closes anyway, and a program
/// that finds them would fail in a confusing way.
pub const SOCKET_ENV: &[&str] = &["DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK", "DOCKER_HOST", "TMUX"];

/// The sandbox the supervisor applies to itself and its command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// `workspace-write` or `read-only` (`off` never reaches the
    /// supervisor: it gets no spec).
    pub mode: Mode,
    /// Sockets and TCP allowed.
    pub network: bool,
    /// Refuse to run the command when Landlock cannot confine it.
    pub required: bool,
    /// Every directory (or file) the command may write beneath.
    pub writable: Vec<PathBuf>,
    /// The workspace whose protected files are restored after the command
    /// ([`super::protect`]), in `workspace-write` mode.
    pub protect: Option<PathBuf>,
}

impl Spec {
    /// The supervisor's flags for this spec: `--sandbox MODE`, then
    /// `--network`, `--required`, `--writable PATH` (each), `--protect DIR`.
    #[must_use]
    pub fn args(&self) -> Vec<OsString> {
        let mut args = vec![OsString::from("--sandbox"), OsString::from(self.mode.as_str())];
        if self.network {
            args.push("--network".into());
        }
        if self.required {
            args.push("--required".into());
        }
        for path in &self.writable {
            args.push("--writable".into());
            args.push(path.clone().into_os_string());
        }
        if let Some(root) = &self.protect {
            args.push("--protect".into());
            args.push(root.clone().into_os_string());
        }
        args
    }

    /// [`Spec::args`] without `--protect`: what `strata __confine` takes
    /// (the supervisor, outside the sandbox, restores the files).
    #[must_use]
    pub fn confine_args(&self) -> Vec<OsString> {
        Spec {
            protect: None,
            ..self.clone()
        }
        .args()
    }
}

/// What [`apply`] achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// Every right strata asks for that this kernel knows is enforced.
    Enforced,
    /// The kernel has no Landlock: only seccomp applies.
    Unavailable,
}

/// Why the sandbox could not be applied (the command does not run).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The Landlock ruleset could not be built or enforced.
    #[error("could not apply its Landlock rules ({0})")]
    Landlock(String),
    /// The seccomp filter could not be built or loaded.
    #[error("could not load its seccomp filter ({0})")]
    Seccomp(String),
    /// `[tools.sandbox] required` and the kernel cannot confine.
    #[error(
        "found no Landlock in this kernel, and [tools.sandbox] required is true, so the command is refused; use a kernel with Landlock or set required = false"
    )]
    Required,
}

/// Confines the calling thread, and every process it spawns after, by
/// `spec` (see the module doc). Call it single-threaded, and spawn from the
/// same thread.
///
/// # Errors
/// [`SandboxError`]: the ruleset or the filter failed, or Landlock is
/// missing and `spec.required`.
pub fn apply(spec: &Spec) -> Result<Applied, SandboxError> {
    let applied = required(landlock_rules(spec)?, spec.required)?;
    let filter = seccomp_filter(spec.network)?;
    seccompiler::apply_filter(&filter).map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    Ok(applied)
}

/// `applied`, or [`SandboxError::Required`] when Landlock could not confine
/// and `required` says the command must then not run.
fn required(applied: Applied, required: bool) -> Result<Applied, SandboxError> {
    if applied == Applied::Unavailable && required {
        return Err(SandboxError::Required);
    }
    Ok(applied)
}

fn landlock_rules(spec: &Spec) -> Result<Applied, SandboxError> {
    let fail = |e: landlock::RulesetError| SandboxError::Landlock(e.to_string());
    let everything = AccessFs::from_all(ABI_WANTED);
    let mut ruleset = Ruleset::default().handle_access(everything).map_err(fail)?;
    if !spec.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI_WANTED))
            .map_err(fail)?
            .scope(Scope::from_all(ABI_WANTED))
            .map_err(fail)?;
    } else {
        ruleset = ruleset.scope(Scope::Signal).map_err(fail)?;
    }
    let writable: Vec<&Path> = spec
        .writable
        .iter()
        .map(PathBuf::as_path)
        .filter(|p| p.exists())
        .collect();
    let status = ruleset
        .create()
        .map_err(fail)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI_WANTED)))
        .map_err(fail)?
        .add_rules(path_beneath_rules(writable, everything))
        .map_err(fail)?
        .restrict_self()
        .map_err(fail)?;
    Ok(match status.ruleset {
        RulesetStatus::NotEnforced => Applied::Unavailable,
        _ => Applied::Enforced,
    })
}

/// `socket()` (unless `network`) and the three io_uring calls fail with
/// `EPERM`; everything else is allowed.
/// `fchmodat2` (Linux 6.6), the same number on every architecture.
const SYS_FCHMODAT2: i64 = 452;

fn seccomp_filter(network: bool) -> Result<BpfProgram, SandboxError> {
    let fail = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let arch =
        TargetArch::try_from(std::env::consts::ARCH).map_err(|e| SandboxError::Seccomp(format!("{e}")))?;
    let mut calls = vec![
        nix::libc::SYS_io_uring_setup,
        nix::libc::SYS_io_uring_enter,
        nix::libc::SYS_io_uring_register,
        // The kernel keyring is the user's, outside any file rule.
        nix::libc::SYS_keyctl,
        nix::libc::SYS_add_key,
        nix::libc::SYS_request_key,
    ];
    if !network {
        calls.push(nix::libc::SYS_socket);
    }
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = calls.into_iter().map(|n| (n, Vec::new())).collect();
    // No set-user-id or set-group-id bit: a root strata's command could
    // otherwise leave a root shell for any local user.
    let setid = |arg: u8| -> Result<Vec<SeccompRule>, SandboxError> {
        [0o4000u64, 0o2000]
            .into_iter()
            .map(|bit| {
                let condition =
                    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(bit), bit)
                        .map_err(fail)?;
                SeccompRule::new(vec![condition]).map_err(fail)
            })
            .collect()
    };
    #[cfg(target_arch = "x86_64")]
    rules.insert(nix::libc::SYS_chmod, setid(1)?);
    rules.insert(nix::libc::SYS_fchmod, setid(1)?);
    rules.insert(nix::libc::SYS_fchmodat, setid(2)?);
    rules.insert(SYS_FCHMODAT2, setid(2)?);
    // The x32 ABI reaches the same calls with bit 30 set (x86_64 only).
    if arch == TargetArch::x86_64 {
        let x32: Vec<(i64, Vec<SeccompRule>)> =
            rules.iter().map(|(n, r)| (n | 0x4000_0000, r.clone())).collect();
        rules.extend(x32);
    }
    let errno = u32::try_from(nix::libc::EPERM).unwrap_or(1);
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(errno), arch).map_err(fail)?;
    BpfProgram::try_from(filter).map_err(fail)
}

/// What this kernel's Landlock gives, for `strata doctor` and approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Support {
    /// The Landlock ABI the kernel offers (0: none).
    pub abi: u8,
    /// What the sandbox can enforce with it, in words
    /// (`filesystem writes`, `tcp`, `scopes`…).
    pub covers: Vec<&'static str>,
    /// What strata asks for that this kernel cannot enforce.
    pub missing: Vec<&'static str>,
}

impl Support {
    /// Whether a command can be confined at all.
    #[must_use]
    pub fn available(&self) -> bool {
        self.abi > 0
    }

    /// What the sandbox covers and lacks on a kernel with Landlock `abi`.
    #[must_use]
    pub fn for_abi(abi: u8) -> Self {
        let features: [(u8, &'static str); 6] = [
            (1, "filesystem writes"),
            (2, "renames and links across directories"),
            (3, "truncation"),
            (4, "TCP bind and connect"),
            (5, "device ioctls"),
            (6, "abstract Unix sockets and signals"),
        ];
        let (covers, missing): (Vec<_>, Vec<_>) = features.into_iter().partition(|(min, _)| abi >= *min);
        Self {
            abi,
            covers: covers.into_iter().map(|(_, what)| what).collect(),
            missing: missing.into_iter().map(|(_, what)| what).collect(),
        }
    }
}

/// This kernel's Landlock, probed once per process: a thread of its own
/// restricts itself with an empty ruleset (the restriction dies with the
/// thread) and reads the ABI the kernel reported.
#[must_use]
pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(|| Support::for_abi(probe_abi()))
}

fn probe_abi() -> u8 {
    let probe = std::thread::Builder::new()
        .name("strata-landlock-probe".to_owned())
        .spawn(|| {
            let status = Ruleset::default()
                .handle_access(AccessFs::from_all(ABI::V1))
                .and_then(landlock::Ruleset::create)
                .and_then(landlock::RulesetCreated::restrict_self)
                .ok()?;
            match status.landlock {
                LandlockStatus::Available { effective_abi, .. } => Some(abi_number(effective_abi)),
                _ => None,
            }
        });
    probe
        .ok()
        .and_then(|thread| thread.join().ok())
        .flatten()
        .unwrap_or(0)
}

fn abi_number(abi: ABI) -> u8 {
    match abi {
        ABI::Unsupported => 0,
        ABI::V1 => 1,
        ABI::V2 => 2,
        ABI::V3 => 3,
        ABI::V4 => 4,
        ABI::V5 => 5,
        ABI::V6 => 6,
        ABI::V7 => 7,
        ABI::V8 => 8,
        ABI::V9 => 9,
        _ => 10,
    }
}

/// The session's private temporary directory, `BASE/strata-UID/SESSION`
/// (`BASE` is the system's, usually `/tmp`), made when missing: mode 0700,
/// and `strata-UID` must be a directory of this user that no one else can
/// enter (not a link someone planted).
///
/// # Errors
/// The directory cannot be made, or `strata-UID` is not safe to use; the
/// message is one sentence.
pub fn session_tmpdir(base: &Path, session: &str) -> Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(0);
    let mine = base.join(format!("strata-{uid}"));
    if !base.exists() {
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(base);
    }
    let fail = |e: std::io::Error, dir: &Path| {
        format!(
            "the shell's temporary directory {} could not be made ({e}); check that {} is writable",
            dir.display(),
            base.display()
        )
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&mine) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(fail(e, &mine)),
    }
    let meta = std::fs::symlink_metadata(&mine).map_err(|e| fail(e, &mine))?;
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "{} is not a private directory of this user; remove it and start strata again",
            mine.display()
        ));
    }
    let dir = mine.join(session);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| fail(e, &dir))?;
    Ok(dir)
}

/// Removes the sessions' temporary directories under `base` (made by
/// [`session_tmpdir`]) not changed for `max_age` at `now`, with what is in
/// them; returns how many went. Errors are skipped.
pub fn remove_old_tmpdirs(base: &Path, max_age: std::time::Duration, now: std::time::SystemTime) -> usize {
    let uid = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(0)
    };
    let Ok(sessions) = std::fs::read_dir(base.join(format!("strata-{uid}"))) else {
        return 0;
    };
    let mut removed = 0;
    for session in sessions.flatten() {
        let old = session
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age > max_age);
        if old
            && session.file_type().is_ok_and(|t| t.is_dir())
            && std::fs::remove_dir_all(session.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// The git directory of the repository at `root` that git writes outside
/// it: for a linked worktree, the common directory of the repository it
/// belongs to; nothing for a plain repository (its `.git` is inside the
/// workspace) or none.
///
/// A `.git` file is the workspace's, so a command may have written it:
/// `gitdir: ~/.ssh` must not make `~/.ssh` writable next time. So only
/// git's own layout counts: the `.git` file names `COMMON/worktrees/NAME`,
/// and that directory's `gitdir` file names this `.git` file back (written
/// by `git worktree add`, outside the workspace). `commondir` files are
/// not read: the common directory is two levels up.
#[must_use]
pub fn git_dirs(root: &Path) -> Vec<PathBuf> {
    linked_worktree(root)
        .map(|(common, _)| common)
        .into_iter()
        .collect()
}

/// For a linked worktree at `root` in git's own layout (see [`git_dirs`]):
/// the repository's common directory and the worktree's own directory in
/// it (`COMMON/worktrees/NAME`).
#[must_use]
pub fn linked_worktree(root: &Path) -> Option<(PathBuf, PathBuf)> {
    let dot_git = root.join(".git");
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let dir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?;
    let admin = std::fs::canonicalize(root.join(dir.trim())).ok()?;
    let common = admin
        .parent()
        .filter(|w| w.file_name().is_some_and(|n| n == "worktrees"))
        .and_then(Path::parent)?
        .to_path_buf();
    let names_us_back = std::fs::read_to_string(admin.join("gitdir"))
        .ok()
        .and_then(|back| std::fs::canonicalize(admin.join(back.trim())).ok())
        .is_some_and(|back| std::fs::canonicalize(&dot_git).is_ok_and(|us| us == back));
    names_us_back.then_some((common, admin))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel without Landlock is simulated here only: `required` refuses
    /// the command, and without it the command runs unconfined.
    #[test]
    fn without_landlock_a_required_sandbox_refuses_the_command() {
        assert!(matches!(
            required(Applied::Unavailable, true),
            Err(SandboxError::Required)
        ));
        assert_eq!(
            required(Applied::Unavailable, false).unwrap(),
            Applied::Unavailable
        );
        assert_eq!(required(Applied::Enforced, true).unwrap(), Applied::Enforced);
        let sentence = SandboxError::Required.to_string();
        assert!(sentence.contains("required = false"), "{sentence}");
    }

    /// git's own layout of a linked worktree is writable; a `.git` file
    /// a command wrote to point elsewhere is not.
    #[test]
    fn only_a_worktree_that_its_repository_names_back_widens_the_sandbox() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let common = base.join("main/.git");
        let admin = common.join("worktrees/wt");
        let wt = base.join("wt");
        std::fs::create_dir_all(&admin).unwrap();
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", admin.display())).unwrap();
        std::fs::write(admin.join("gitdir"), format!("{}\n", wt.join(".git").display())).unwrap();
        std::fs::write(admin.join("commondir"), "../..\n").unwrap();
        assert_eq!(git_dirs(&wt), vec![common.clone()]);
        // A commondir rewritten to point elsewhere is not read.
        std::fs::write(admin.join("commondir"), format!("{}\n", base.display())).unwrap();
        assert_eq!(git_dirs(&wt), vec![common.clone()]);
        // A planted pointer: not git's layout, or not named back.
        let secret = base.join("home/.ssh");
        std::fs::create_dir_all(&secret).unwrap();
        for planted in [secret.clone(), PathBuf::from("/"), base.join("home")] {
            std::fs::write(wt.join(".git"), format!("gitdir: {}\n", planted.display())).unwrap();
            assert_eq!(git_dirs(&wt), Vec::<PathBuf>::new(), "{}", planted.display());
        }
        let fake = base.join("home/worktrees/x");
        std::fs::create_dir_all(&fake).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", fake.display())).unwrap();
        assert_eq!(
            git_dirs(&wt),
            Vec::<PathBuf>::new(),
            "no gitdir file names it back"
        );
        std::fs::write(
            fake.join("gitdir"),
            format!("{}\n", base.join("other/.git").display()),
        )
        .unwrap();
        assert_eq!(git_dirs(&wt), Vec::<PathBuf>::new(), "it names another worktree");
    }

    #[test]
    fn coverage_grows_with_the_abi() {
        let none = Support::for_abi(0);
        assert!(!none.available() && none.covers.is_empty());
        let old = Support::for_abi(3);
        assert!(old.missing.contains(&"TCP bind and connect"));
        let now = Support::for_abi(7);
        assert!(now.missing.is_empty() && now.covers.len() == 6);
    }

    #[test]
    fn the_args_carry_the_spec() {
        let spec = Spec {
            mode: Mode::WorkspaceWrite,
            network: true,
            required: false,
            writable: vec!["/w".into(), "/tmp/s".into()],
            protect: Some("/w".into()),
        };
        let args: Vec<String> = spec
            .args()
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "--sandbox",
                "workspace-write",
                "--network",
                "--writable",
                "/w",
                "--writable",
                "/tmp/s",
                "--protect",
                "/w"
            ]
        );
    }
}
