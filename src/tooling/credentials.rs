//! Files that look like credentials (DESIGN §19 "Reads"): the one list
//! `@path` attachments, `read_file` and its approval share. Such a file is
//! not read for the model without the user's say-so, even inside the
//! workspace.
//!
//! A file is judged by its path ([`by_name`]: `*.pem`, `.env*`, `.netrc`,
//! SSH private keys, cloud credential files) and, when its first bytes are
//! at hand, by what they hold ([`by_content`]: a private key's header, an
//! `.npmrc` or `.pypirc` holding a token or a password). [`detect`] asks
//! both. Pure: the caller reads the bytes.

use std::path::{Component, Path};

/// Bytes of a file's start searched for a private key by [`by_content`]
/// (1 MiB: a key pasted below a long text is found too).
pub const SNIFF_BYTES: usize = 1024 * 1024;

/// What a credential-looking file seems to be, as a clause for a sentence
/// ("looks like a private key").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Credential {
    /// A private key: its header, a `*.pem`/`*.p12`/`*.pfx` file or an SSH
    /// key named `id_*`.
    PrivateKey,
    /// `.env`, `.env.local`, `.envrc`, …: environment variables, usually
    /// secrets.
    EnvFile,
    /// `.netrc`, `.git-credentials`, `.pgpass`: passwords for hosts.
    Passwords,
    /// An `.npmrc` or `.pypirc` that holds a token or a password.
    RegistryToken,
    /// A cloud or cluster credential file (`.aws/credentials`,
    /// `.config/gcloud/*credentials*.json`, `.docker/config.json`,
    /// `.kube/config`).
    CloudCredentials,
}

impl Credential {
    /// What the file looks like, for "`.env` looks like {this}".
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::PrivateKey => "a private key",
            Self::EnvFile => "an environment file, which usually holds secrets",
            Self::Passwords => "a file of passwords",
            Self::RegistryToken => "a package registry file holding a token",
            Self::CloudCredentials => "a cloud credentials file",
        }
    }
}

/// SSH private keys by their usual names (the `.pub` halves are public).
const SSH_KEYS: &[&str] = &[
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "id_ecdsa_sk",
    "id_ed25519_sk",
];

/// Key and certificate bundles by extension.
const KEY_EXTENSIONS: &[&str] = &["pem", "p12", "pfx", "ppk", "key", "jks", "keystore"];

/// Files of passwords by name.
const PASSWORD_FILES: &[&str] = &[".netrc", "_netrc", ".git-credentials", ".pgpass"];

/// What `path` looks like by its name and its parent directories alone,
/// or `None` when nothing about its name says credential. An `.npmrc` or
/// `.pypirc` needs its content ([`by_content`]).
#[must_use]
pub fn by_name(path: &Path) -> Option<Credential> {
    let names: Vec<String> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().to_ascii_lowercase()),
            _ => None,
        })
        .collect();
    let file = names.last()?.as_str();
    let parent = names.len().checked_sub(2).map(|i| names[i].as_str());
    let grandparent = names.len().checked_sub(3).map(|i| names[i].as_str());
    if SSH_KEYS.contains(&file) {
        return Some(Credential::PrivateKey);
    }
    if let Some((_, ext)) = file.rsplit_once('.')
        && KEY_EXTENSIONS.contains(&ext)
    {
        return Some(Credential::PrivateKey);
    }
    if file.starts_with(".env") {
        return Some(Credential::EnvFile);
    }
    if PASSWORD_FILES.contains(&file) {
        return Some(Credential::Passwords);
    }
    let cloud = match (grandparent, parent, file) {
        (_, Some(".aws"), "credentials") => true,
        (Some(".config"), Some("gcloud"), f) => f.contains("credentials"),
        (_, Some("gcloud"), f) => f.contains("credentials") && f.ends_with(".json"),
        (_, Some(".docker"), "config.json") => true,
        (_, Some(".kube"), "config") => true,
        _ => false,
    };
    cloud.then_some(Credential::CloudCredentials)
}

/// What the first bytes `head` of the file `path` hold that looks like a
/// credential: a private key's `-----BEGIN … PRIVATE KEY-----` header (in
/// any file), or a token or password in an `.npmrc` (`_authToken`,
/// `_auth`, `_password`) or a `.pypirc` (`password`).
#[must_use]
pub fn by_content(path: &Path, head: &[u8]) -> Option<Credential> {
    let head = &head[..head.len().min(SNIFF_BYTES)];
    let text = String::from_utf8_lossy(head);
    let private_key = text.lines().any(|l| {
        (l.contains("-----BEGIN ") && l.contains("PRIVATE KEY"))
            || l.trim_start().starts_with("PuTTY-User-Key-File-")
    });
    if private_key || private_jwk(&text) {
        return Some(Credential::PrivateKey);
    }
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let keys: &[&str] = match file.as_str() {
        ".npmrc" => &["_authtoken", "_auth", "_password"],
        ".pypirc" => &["password"],
        _ => return None,
    };
    let holds = text.lines().any(|line| {
        let line = line.trim().to_ascii_lowercase();
        let key = line.split('=').next().unwrap_or_default().trim();
        line.contains('=') && keys.iter().any(|k| key == *k || key.ends_with(&format!(":{k}")))
    });
    holds.then_some(Credential::RegistryToken)
}

/// A JSON Web Key with its private part: `"kty"` with `"d"` (the private
/// exponent or scalar) in the same object.
fn private_jwk(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    compact.contains("\"kty\":") && compact.contains("\"d\":\"")
}

/// [`by_name`], else [`by_content`] of `head` (the file's first bytes,
/// when they were read).
#[must_use]
pub fn detect(path: &Path, head: Option<&[u8]>) -> Option<Credential> {
    by_name(path).or_else(|| head.and_then(|h| by_content(path, h)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(p: &str) -> Option<Credential> {
        by_name(Path::new(p))
    }

    #[test]
    fn credential_names_are_known_and_ordinary_files_are_not() {
        assert_eq!(name("/home/u/.ssh/id_ed25519"), Some(Credential::PrivateKey));
        assert_eq!(name("id_rsa"), Some(Credential::PrivateKey));
        assert_eq!(name("certs/server.PEM"), Some(Credential::PrivateKey));
        assert_eq!(name(".env"), Some(Credential::EnvFile));
        assert_eq!(name("app/.env.production"), Some(Credential::EnvFile));
        assert_eq!(name("/home/u/.netrc"), Some(Credential::Passwords));
        assert_eq!(
            name("/home/u/.aws/credentials"),
            Some(Credential::CloudCredentials)
        );
        assert_eq!(
            name("/home/u/.config/gcloud/application_default_credentials.json"),
            Some(Credential::CloudCredentials)
        );
        assert_eq!(
            name("/home/u/.docker/config.json"),
            Some(Credential::CloudCredentials)
        );
        assert_eq!(name("/home/u/.kube/config"), Some(Credential::CloudCredentials));
        for ordinary in [
            "id_ed25519.pub",
            "src/env.rs",
            "notes/credentials.md",
            "config.json",
            ".config/app/config",
            "README.md",
            ".npmrc",
        ] {
            assert_eq!(name(ordinary), None, "{ordinary}");
        }
    }

    #[test]
    fn content_finds_keys_anywhere_and_tokens_in_registry_files() {
        let key = b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n";
        assert_eq!(
            by_content(Path::new("notes.txt"), key),
            Some(Credential::PrivateKey)
        );
        let rsa = b"junk\n-----BEGIN RSA PRIVATE KEY-----\n";
        assert_eq!(by_content(Path::new("a"), rsa), Some(Credential::PrivateKey));
        assert_eq!(
            by_content(Path::new("server.crt"), b"-----BEGIN CERTIFICATE-----\n"),
            None
        );
        let putty = b"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n";
        assert_eq!(
            by_content(Path::new("k.txt"), putty),
            Some(Credential::PrivateKey)
        );
        assert_eq!(name("keys/deploy.ppk"), Some(Credential::PrivateKey));
        let jwk = br#"{"kty": "EC", "crv": "P-256", "x": "f83O", "y": "x_FE", "d": "jpsQ"}"#;
        assert_eq!(
            by_content(Path::new("key.json"), jwk),
            Some(Credential::PrivateKey)
        );
        let public = br#"{"kty": "EC", "crv": "P-256", "x": "f83O", "y": "x_FE"}"#;
        assert_eq!(by_content(Path::new("key.json"), public), None);
        let npmrc = b"registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=npm_abc\n";
        assert_eq!(
            by_content(Path::new("/h/.npmrc"), npmrc),
            Some(Credential::RegistryToken)
        );
        assert_eq!(by_content(Path::new("/h/.npmrc"), b"save-exact=true\n"), None);
        let pypirc = b"[pypi]\nusername = __token__\npassword = pypi-AgEI\n";
        assert_eq!(
            by_content(Path::new(".pypirc"), pypirc),
            Some(Credential::RegistryToken)
        );
        assert_eq!(
            detect(Path::new(".npmrc"), Some(npmrc)),
            Some(Credential::RegistryToken)
        );
        assert_eq!(detect(Path::new(".env"), None), Some(Credential::EnvFile));
    }
}
