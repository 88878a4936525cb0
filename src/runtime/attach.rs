//! Which `@path` mentions of a message are attached (DESIGN §19 "Reads"):
//! a file is read only when it resolves, after symbolic links, under the
//! workspace root or `[tools] allow_paths` — the file tools' own
//! [`Confinement`] — and does not look like a credential
//! ([`crate::tooling::credentials`]); anything else is withheld unless the
//! user allowed that path for this message (`strata chat --attach PATH`, or
//! the app's confirmation, which names the resolved path). The rule is the
//! same for typed, pasted and piped text: it looks at the mention, not at
//! where the text came from. A withheld file is never opened beyond the
//! few bytes that tell a private key.

use crate::pipeline::enrich;
use crate::tooling::credentials::{self, Credential};
use crate::tools::paths::{Breach, Confinement};
use std::io::Read;
use std::path::{Path, PathBuf};

/// What the user allowed a message to attach beyond the workspace and
/// `[tools] allow_paths`, and whether they were asked already.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttachConsent {
    /// Files or directories allowed for this message (`--attach PATH`, or
    /// the paths the user confirmed in the app); a directory allows what
    /// is under it. Resolved when used.
    pub allowed: Vec<PathBuf>,
    /// The user answered the app's question already (the app asks only
    /// while this is `false`; headless runs never ask).
    pub answered: bool,
}

/// The user's message of a turn and what it may attach.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserMessage {
    /// The text as the user wrote it.
    pub text: String,
    /// What the user allowed it to attach.
    pub consent: AttachConsent,
}

/// Why a mention was not attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WithheldWhy {
    /// It resolves outside the workspace and `[tools] allow_paths`.
    Outside,
    /// Its spelling stays inside, but a symbolic link leads out.
    ThroughLink,
    /// It is inside but looks like a credential.
    Credential(Credential),
}

/// A mention that was not attached, for the user's notice or question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Withheld {
    /// The mention as written, without `@` (`~/.ssh/id_ed25519`).
    pub reference: String,
    /// Where it resolves (symbolic links followed).
    pub path: PathBuf,
    /// Why it was withheld.
    pub why: WithheldWhy,
}

impl Withheld {
    /// Why, as a clause about the resolved path ("/etc/passwd is outside
    /// the workspace").
    #[must_use]
    pub fn clause(&self) -> String {
        let path = self.path.display();
        match self.why {
            WithheldWhy::Outside => format!("{path} is outside the workspace"),
            WithheldWhy::ThroughLink => {
                format!("it leads outside the workspace through a symbolic link, to {path}")
            }
            WithheldWhy::Credential(kind) => format!("{path} looks like {}", kind.describe()),
        }
    }

    /// What the model reads in its place: that it was not attached, and
    /// why, without the resolved path.
    #[must_use]
    pub fn note(&self) -> String {
        let why = match self.why {
            WithheldWhy::Outside | WithheldWhy::ThroughLink => {
                "not attached: it is outside the workspace and the user did not allow it".to_owned()
            }
            WithheldWhy::Credential(kind) => format!(
                "not attached: it looks like {} and the user did not allow it",
                kind.describe()
            ),
        };
        enrich::attachment_note(&self.reference, &why)
    }
}

/// One `@path` mention and what becomes of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mention {
    /// Read from this resolved path.
    Attach {
        /// The mention as written, without `@`.
        reference: String,
        /// The resolved path.
        path: PathBuf,
    },
    /// Not read.
    Withheld(Withheld),
    /// Cannot be resolved (one sentence): a note and a notice, as for a
    /// missing file.
    Invalid {
        /// The mention as written, without `@`.
        reference: String,
        /// Why.
        why: String,
    },
}

/// The `@path` mentions of `text` (see [`enrich::attachment_refs`]) in
/// `workspace`, each resolved — `~/…` against the home directory, others
/// against the workspace — and judged: inside the workspace or
/// `allow_paths` and not a credential, or allowed by `consent`, it is
/// attached; otherwise withheld.
#[must_use]
pub fn mentions(
    text: &str,
    workspace: &Path,
    allow_paths: &[PathBuf],
    consent: &AttachConsent,
) -> Vec<Mention> {
    let confinement = Confinement::new(workspace, allow_paths);
    let allowed: Vec<PathBuf> = consent
        .allowed
        .iter()
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .collect();
    enrich::attachment_refs(text)
        .into_iter()
        .map(|reference| judge(&confinement, &allowed, reference))
        .collect()
}

fn judge(confinement: &Confinement, allowed: &[PathBuf], reference: String) -> Mention {
    let spelled = match (reference.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest).to_string_lossy().into_owned(),
        _ => reference.clone(),
    };
    let (path, why) = match confinement.check(&spelled) {
        Ok(path) => {
            let head = sniff(&path);
            match credentials::detect(&path, head.as_deref()) {
                Some(kind) => (path, WithheldWhy::Credential(kind)),
                None => return Mention::Attach { reference, path },
            }
        }
        Err(Breach::Outside { real, through_link }) => (
            real,
            if through_link {
                WithheldWhy::ThroughLink
            } else {
                WithheldWhy::Outside
            },
        ),
        Err(Breach::Invalid(why)) => {
            return Mention::Invalid {
                reference,
                why: why.trim_end_matches('.').to_owned(),
            };
        }
    };
    if allowed.iter().any(|a| path.starts_with(a)) {
        return Mention::Attach { reference, path };
    }
    Mention::Withheld(Withheld { reference, path, why })
}

/// The first bytes of a regular file inside the confinement, to tell a
/// private key by its header; `None` when it cannot be read.
fn sniff(path: &Path) -> Option<Vec<u8>> {
    if !path.is_file() {
        return None;
    }
    let mut head = Vec::with_capacity(credentials::SNIFF_BYTES);
    std::fs::File::open(path)
        .ok()?
        .take(credentials::SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .ok()?;
    Some(head)
}

/// The one notice of a message's withheld mentions: what was not attached
/// and how to allow it (`headless`: `--attach PATH`; the app: answer its
/// question).
#[must_use]
pub fn withheld_notice(withheld: &[Withheld], headless: bool) -> Option<String> {
    let first = withheld.first()?;
    let names: Vec<String> = withheld.iter().map(|w| format!("@{}", w.reference)).collect();
    let reasons: Vec<String> = withheld.iter().map(Withheld::clause).collect();
    let (verb, them) = if withheld.len() == 1 {
        ("was", "it")
    } else {
        ("were", "them")
    };
    let allow = if headless {
        // The resolved path: the mention is resolved in the workspace,
        // `--attach` where the command runs, and `$HOME` in a mention is
        // not the shell's.
        let path = first.path.to_string_lossy();
        let quoted = shlex::try_quote(&path).unwrap_or(std::borrow::Cow::Borrowed(&path));
        let example = format!("--attach {quoted}");
        if withheld.len() == 1 {
            format!("pass {example} to attach it for this command")
        } else {
            format!("pass --attach PATH for each to attach it for this command (such as {example})")
        }
    } else {
        format!("send the message again and confirm to attach {them} once")
    };
    Some(format!(
        "warning: {} {verb} not attached ({}); the message is sent without {them} — {allow}.",
        join_and(&names),
        reasons.join("; ")
    ))
}

fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.md"), "plain\n").unwrap();
        std::fs::write(dir.path().join(".env"), "TOKEN=x\n").unwrap();
        std::fs::write(
            dir.path().join("key.txt"),
            "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn inside_attaches_and_outside_or_credentials_are_withheld() {
        let dir = ws();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("o.txt"), "secret\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("o.txt"), dir.path().join("link.txt")).unwrap();
        let text = format!(
            "see @notes.md @.env @key.txt @{}/o.txt @link.txt @../x/y.txt and mail a@b.com",
            outside.path().display()
        );
        let got = mentions(&text, dir.path(), &[], &AttachConsent::default());
        let kinds: Vec<String> = got
            .iter()
            .map(|m| match m {
                Mention::Attach { reference, .. } => format!("attach {reference}"),
                Mention::Withheld(w) => format!("withheld {} {:?}", w.reference, w.why),
                Mention::Invalid { reference, .. } => format!("invalid {reference}"),
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                "attach notes.md".to_owned(),
                "withheld .env Credential(EnvFile)".to_owned(),
                "withheld key.txt Credential(PrivateKey)".to_owned(),
                format!("withheld {}/o.txt Outside", outside.path().display()),
                "withheld link.txt ThroughLink".to_owned(),
                "withheld ../x/y.txt Outside".to_owned(),
            ]
        );
        // An allowed path, or a directory of allow_paths, attaches.
        let consent = AttachConsent {
            allowed: vec![dir.path().join(".env"), outside.path().join("o.txt")],
            answered: true,
        };
        let got = mentions("@.env @link.txt", dir.path(), &[], &consent);
        assert!(got.iter().all(|m| matches!(m, Mention::Attach { .. })), "{got:?}");
        let got = mentions(
            "@link.txt",
            dir.path(),
            &[outside.path().to_path_buf()],
            &AttachConsent::default(),
        );
        assert!(matches!(got[0], Mention::Attach { .. }), "{got:?}");
    }

    #[test]
    fn the_notice_says_what_and_how_to_allow_it() {
        let w = Withheld {
            reference: "/etc/passwd".into(),
            path: "/etc/passwd".into(),
            why: WithheldWhy::Outside,
        };
        let one = withheld_notice(std::slice::from_ref(&w), true).unwrap();
        assert_eq!(
            one,
            "warning: @/etc/passwd was not attached (/etc/passwd is outside the workspace); the message is sent without it — pass --attach /etc/passwd to attach it for this command."
        );
        let two = withheld_notice(&[w.clone(), w], false).unwrap();
        assert!(two.contains(" and @/etc/passwd were not attached"), "{two}");
        assert!(two.ends_with("confirm to attach them once."), "{two}");
        assert_eq!(withheld_notice(&[], true), None);
    }
}
