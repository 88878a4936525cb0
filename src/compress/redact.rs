//! Secret redaction: everything a summariser reads passes through
//! [`redact`] first, so keys, tokens and passwords that appeared in a session
//! never leave it inside a summary request.
//!
//! One combined pattern (each rule an alternative with its own named group)
//! replaces every match in a single pass; a [`RegexSet`] of the same rules is
//! the prefilter that returns the text unchanged, without allocation, when
//! nothing can match. Patterns are compiled once per process.
//!
//! Redacted values become `[REDACTED:kind]`; a label that is part of the
//! match (`Authorization: `, `DB_PASSWORD=`, the user of a database URL) is
//! kept so the reader still knows what was there.

use regex::{Captures, Regex, RegexSet};
use std::borrow::Cow;
use std::sync::LazyLock;

/// One kind of secret: its label and its pattern. A group named `keep`
/// (the label before the value) and one named `tail` (text after it) are
/// copied into the output; everything else of the match is replaced.
struct Rule {
    kind: &'static str,
    pattern: &'static str,
}

/// The rules, most specific first (the first alternative that matches at a
/// position wins).
const RULES: &[Rule] = &[
    Rule {
        kind: "private_key",
        pattern: r"(?s)-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----.*?-----END[A-Z ]{0,40}PRIVATE KEY-----",
    },
    Rule {
        kind: "anthropic_key",
        pattern: r"\bsk-ant-[A-Za-z0-9_\-]{20,}",
    },
    Rule {
        kind: "openai_key",
        pattern: r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
    },
    Rule {
        kind: "google_key",
        pattern: r"\bAIza[0-9A-Za-z_\-]{35}",
    },
    Rule {
        kind: "github_token",
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
    },
    Rule {
        kind: "aws_key_pair",
        pattern: r#"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b[\s:,;|="'/]+[A-Za-z0-9/+=]{40}\b"#,
    },
    Rule {
        kind: "aws_access_key",
        pattern: r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    },
    Rule {
        kind: "aws_secret_key",
        pattern: r#"(?i)(?P<keep>aws_?secret_?(?:access_?)?key\s*["']?\s*[=:]\s*["']?)[A-Za-z0-9/+=]{40}"#,
    },
    Rule {
        kind: "stripe_key",
        pattern: r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}",
    },
    Rule {
        kind: "gitlab_token",
        pattern: r"\bglpat-[A-Za-z0-9_\-]{20,}",
    },
    Rule {
        kind: "npm_token",
        pattern: r"\bnpm_[A-Za-z0-9]{36}",
    },
    Rule {
        kind: "huggingface_token",
        pattern: r"\bhf_[A-Za-z0-9]{30,}",
    },
    Rule {
        kind: "slack_webhook",
        pattern: r"\bhttps://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+",
    },
    Rule {
        kind: "slack_token",
        pattern: r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",
    },
    Rule {
        kind: "jwt",
        pattern: r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    },
    Rule {
        kind: "authorization",
        pattern: r#"(?i)(?P<keep>\b(?:proxy-)?authorization\s*["']?\s*[:=]\s*["']?(?:bearer|basic|token|digest)\s+)[^\s"'`,;]+"#,
    },
    // Without a scheme, only a value long enough to be a credential
    // ("Authorization: header is missing" is prose).
    Rule {
        kind: "authorization",
        pattern: r#"(?i)(?P<keep>\b(?:proxy-)?authorization\s*["']?\s*[:=]\s*["']?)[^\s"'`,;]{12,}"#,
    },
    Rule {
        kind: "cookie",
        pattern: r#"(?i)(?P<keep>\b(?:set-)?cookie\s*:\s*)[^\s=;`]+=[^\r\n`]*"#,
    },
    Rule {
        kind: "api_key_header",
        pattern: r#"(?i)(?P<keep>\bx-api-key\s*["']?\s*:\s*["']?)[^\s"'`,;]{8,}"#,
    },
    Rule {
        kind: "url_password",
        pattern: r"(?P<keep>\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@]*:)[^\s@/]+(?P<tail>@)",
    },
    Rule {
        kind: "assignment",
        pattern: r#"(?i)(?P<keep>\b[A-Z0-9_]*(?:_KEY|PASSWORD|PASSWD|SECRET|TOKEN)\s*["']?\s*=\s*["']?)[^\s"'`,;]{3,}"#,
    },
    // After a colon (YAML, prose) only a value that looks like a secret:
    // eight chars or more, or one with a digit ("password: must be ..."
    // and "token: count" are prose).
    Rule {
        kind: "assignment",
        pattern: r#"(?i)(?P<keep>\b[A-Z0-9_]*(?:_KEY|PASSWORD|PASSWD|SECRET|TOKEN)\s*["']?\s*:\s*["']?)(?:[^\s"'`,;]{8,}|[^\s"'`,;]*[0-9][^\s"'`,;]*)"#,
    },
    Rule {
        kind: "cli_password",
        pattern: r#"(?i)(?P<keep>(?:--pass(?:word|wd)?(?:=|\s+)|\bmysql(?:dump|admin)?\b[^\n]*?\s(?-i:-p)|\b(?:docker|podman)\s+login\b[^\n]*?\s(?-i:-p)\s+|\bsshpass\s+(?-i:-p)\s*)["']?)[^\s"'`]+"#,
    },
    Rule {
        kind: "azure_key",
        pattern: r#"(?i)(?P<keep>\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)=|[?&]sig=)[^;&\s"'`]+"#,
    },
];

struct Compiled {
    prefilter: RegexSet,
    combined: Regex,
    /// Per rule: the capture-group index of the rule, its `keep` and its `tail`.
    groups: Vec<(usize, Option<usize>, Option<usize>)>,
}

/// Builds the prefilter and the combined pattern; `None` only if a rule
/// fails to compile, which the tests rule out.
fn compile() -> Option<Compiled> {
    let prefilter = RegexSet::new(RULES.iter().map(|r| r.pattern)).ok()?;
    let alternatives: Vec<String> = RULES
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let body = r
                .pattern
                .replace("(?P<keep>", &format!("(?P<keep{i}>"))
                .replace("(?P<tail>", &format!("(?P<tail{i}>"));
            format!("(?P<rule{i}>{body})")
        })
        .collect();
    let combined = Regex::new(&alternatives.join("|")).ok()?;
    let index = |name: String| combined.capture_names().position(|n| n == Some(name.as_str()));
    let groups = (0..RULES.len())
        .map(|i| {
            Some((
                index(format!("rule{i}"))?,
                index(format!("keep{i}")),
                index(format!("tail{i}")),
            ))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Compiled {
        prefilter,
        combined,
        groups,
    })
}

static COMPILED: LazyLock<Option<Compiled>> = LazyLock::new(compile);

/// The words of the markers [`redact`] writes: `redacted` and every kind.
pub(crate) fn marker_words() -> impl Iterator<Item = &'static str> {
    std::iter::once("redacted").chain(RULES.iter().map(|r| r.kind))
}

/// The text with every secret replaced by `[REDACTED:kind]` (kinds:
/// `private_key`, `anthropic_key`, `openai_key`, `google_key`,
/// `github_token`, `aws_key_pair`, `aws_access_key`, `aws_secret_key`,
/// `stripe_key`, `gitlab_token`, `npm_token`, `huggingface_token`,
/// `slack_webhook`, `slack_token`, `jwt`, `authorization`, `cookie`,
/// `api_key_header`,
/// `url_password`, `assignment`, `cli_password`, `azure_key`).
/// Borrowed when nothing matched.
#[must_use]
pub fn redact(text: &str) -> Cow<'_, str> {
    let Some(compiled) = COMPILED.as_ref() else {
        return Cow::Borrowed(text);
    };
    if !compiled.prefilter.is_match(text) {
        return Cow::Borrowed(text);
    }
    compiled.combined.replace_all(text, |caps: &Captures<'_>| {
        for (rule, &(group, keep, tail)) in RULES.iter().zip(&compiled.groups) {
            if caps.get(group).is_some() {
                let part = |g: Option<usize>| g.and_then(|g| caps.get(g)).map_or("", |m| m.as_str());
                return format!("{}[REDACTED:{}]{}", part(keep), rule.kind, part(tail));
            }
        }
        String::from("[REDACTED]")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_redacted(input: &str, secret: &str, kind: &str) {
        let out = redact(input);
        assert!(!out.contains(secret), "{kind}: secret survived in {out:?}");
        assert!(
            out.contains(&format!("[REDACTED:{kind}]")),
            "{kind}: no marker in {out:?}"
        );
    }

    #[test]
    fn all_rules_compile() {
        assert!(COMPILED.is_some());
    }

    #[test]
    fn openai_keys() {
        let k = "sk-proj-AbCdEf0123456789AbCdEf0123456789xyz";
        assert_redacted(&format!("export OPENAI={k} done"), k, "openai_key");
        let k = "sk-AbCdEf0123456789AbCdEf0123456789";
        assert_redacted(&format!("key {k}"), k, "openai_key");
    }

    #[test]
    fn anthropic_keys_are_labelled_as_such() {
        let k = "sk-ant-api03-AbCdEf0123456789AbCdEf0123456789-xyz";
        assert_redacted(&format!("using {k}"), k, "anthropic_key");
    }

    #[test]
    fn google_keys() {
        let k = "AIzaSyA1234567890abcdefghijklmnopqrstuv";
        assert_redacted(&format!("?key={k}&q=1"), k, "google_key");
    }

    #[test]
    fn github_tokens() {
        let k = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        assert_redacted(k, k, "github_token");
        let k = "gho_abcdefghijklmnopqrstuvwxyz0123456789";
        assert_redacted(k, k, "github_token");
        let k = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz";
        assert_redacted(&format!("using {k}"), k, "github_token");
    }

    #[test]
    fn aws_access_and_secret_keys() {
        assert_redacted(
            "id AKIAIOSFODNN7EXAMPLE here",
            "AKIAIOSFODNN7EXAMPLE",
            "aws_access_key",
        );
        let s = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        assert_redacted(&format!("aws_secret_access_key = {s}"), s, "aws_secret_key");
    }

    #[test]
    fn stripe_gitlab_npm_and_hugging_face_tokens() {
        let k = "sk_live_51HSTRIPEabcdefghijklmnop";
        assert_redacted(&format!("stripe {k}"), k, "stripe_key");
        let k = "glpat-abcdefghij0123456789";
        assert_redacted(&format!("token {k}."), k, "gitlab_token");
        let k = "npm_abcdefghijklmnopqrstuvwxyz0123456789";
        assert_redacted(&format!("publish with {k} today"), k, "npm_token");
        assert_redacted(&format!("//registry:_authToken={k}"), k, "assignment");
        let k = "hf_abcdefghijklmnopqrstuvwxyz0123456";
        assert_redacted(&format!("HF {k}"), k, "huggingface_token");
    }

    #[test]
    fn cookie_headers_keep_their_label() {
        let out = redact("GET /\nCookie: session=abc123; theme=dark\nAccept: */*");
        assert!(!out.contains("abc123"), "{out}");
        assert!(out.contains("Cookie: [REDACTED:cookie]\nAccept: */*"), "{out}");
    }

    #[test]
    fn slack_tokens() {
        let k = "xoxb-1234567890-abcdefghijkl";
        assert_redacted(&format!("SLACK {k}"), k, "slack_token");
    }

    #[test]
    fn jwts() {
        let k =
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        assert_redacted(&format!("cookie={k};"), k, "jwt");
    }

    #[test]
    fn pem_private_key_blocks_go_whole() {
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\nabc==\n-----END RSA PRIVATE KEY-----";
        let text = format!("before\n{pem}\nafter");
        let out = redact(&text);
        assert_eq!(out, "before\n[REDACTED:private_key]\nafter");
    }

    #[test]
    fn authorization_headers_keep_their_label() {
        let out = redact("curl -H 'Authorization: Bearer abc.def-123' https://x");
        assert_eq!(
            out,
            "curl -H 'Authorization: Bearer [REDACTED:authorization]' https://x"
        );
        assert_redacted(
            "x-api-key: 0123456789abcdef",
            "0123456789abcdef",
            "api_key_header",
        );
    }

    #[test]
    fn database_url_passwords_keep_user_and_host() {
        let out = redact("DATABASE_URL is postgres://admin:hunter2secret@db.local:5432/app");
        assert_eq!(
            out,
            "DATABASE_URL is postgres://admin:[REDACTED:url_password]@db.local:5432/app"
        );
    }

    #[test]
    fn key_token_secret_and_password_assignments() {
        for (line, secret) in [
            ("STRIPE_API_KEY=rk_live_abcdef123", "rk_live_abcdef123"),
            ("export SESSION_TOKEN=\"tok-98765\"", "tok-98765"),
            ("CLIENT_SECRET: s3cr3tvalue", "s3cr3tvalue"),
            ("PASSWORD=correcthorse", "correcthorse"),
            ("db_password = 'pa55word'", "pa55word"),
        ] {
            assert_redacted(line, secret, "assignment");
        }
        assert_eq!(
            redact("STRIPE_API_KEY=rk_live_abc"),
            "STRIPE_API_KEY=[REDACTED:assignment]"
        );
    }

    #[test]
    fn prefixed_passwords_empty_url_users_and_command_line_passwords() {
        assert_redacted(
            "export PGPASSWORD=pgSecretValue987",
            "pgSecretValue987",
            "assignment",
        );
        assert_redacted("MYSQL_ROOT_PASSWORD: rootpw123", "rootpw123", "assignment");
        assert_eq!(
            redact("cache at redis://:RedisPassw0rd@cache:6379/0"),
            "cache at redis://:[REDACTED:url_password]@cache:6379/0"
        );
        assert_redacted("mysql -u root -pS3cretPw db", "S3cretPw", "cli_password");
        assert_eq!(redact("mysql -u root -p db"), "mysql -u root -p db");
        assert_eq!(redact("mysql -h db -P3306 -u root"), "mysql -h db -P3306 -u root");
        assert_redacted(
            "docker login -u me -p dckr_pat_abc123 ghcr.io",
            "dckr_pat_abc123",
            "cli_password",
        );
        assert_redacted("tool --password=hunter2x --verbose", "hunter2x", "cli_password");
        assert_redacted("sshpass -p 'letmein9' ssh host", "letmein9", "cli_password");
        assert_eq!(
            redact("cat secret | docker login --password-stdin"),
            "cat secret | docker login --password-stdin"
        );
    }

    #[test]
    fn azure_keys_and_aws_key_pairs() {
        let conn = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=AbCd0123+/xyz==;EndpointSuffix=core.windows.net";
        assert_redacted(conn, "AbCd0123+/xyz==", "azure_key");
        assert!(redact(conn).contains("AccountName=acct;"));
        assert_redacted(
            "https://a.blob.core.windows.net/c?sv=2022&sig=AbC%2Fdef",
            "AbC%2Fdef",
            "azure_key",
        );
        let pair = "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        assert_redacted(pair, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_key_pair");
        assert!(!redact(pair).contains("AKIAIOSFODNN7EXAMPLE"));
    }

    #[test]
    fn a_secret_ends_before_a_closing_backtick() {
        assert_eq!(
            redact("run `export OPENAI_API_KEY=abc123def` then"),
            "run `export OPENAI_API_KEY=[REDACTED:assignment]` then"
        );
        assert_eq!(
            redact("`Cookie: sid=abc123` done"),
            "`Cookie: [REDACTED:cookie]` done"
        );
    }

    #[test]
    fn labels_followed_by_prose_are_left_alone() {
        for text in [
            "The login cookie: expires after 5 minutes, fix src/session.rs and tests/session_test.py",
            "password: must be at least twelve characters",
            "The token: count grows with the history",
            "secret: the main idea is to cache",
            "Authorization: header is missing from the request",
            "x-api-key: missing",
        ] {
            assert_eq!(redact(text), text);
        }
        assert_redacted("password: hunter2", "hunter2", "assignment");
        assert_redacted(
            "Authorization: dXNlcjpwYXNzd29yZA==",
            "dXNlcjpwYXNzd29yZA==",
            "authorization",
        );
    }

    #[test]
    fn slack_webhooks_and_aws_pairs_split_by_a_slash() {
        let hook = "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX";
        assert_redacted(
            &format!("post to {hook} now"),
            "XXXXXXXXXXXXXXXXXXXXXXXX",
            "slack_webhook",
        );
        let pair = "aws creds: AKIAI44QH8DHBEXAMPLE / je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY";
        assert_redacted(pair, "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY", "aws_key_pair");
    }

    #[test]
    fn ordinary_text_is_borrowed_unchanged() {
        let text = "task-force meeting: the keyboard shortcut, a skeleton key and sk-short";
        assert!(matches!(redact(text), Cow::Borrowed(_)));
        let code = "let password_len = 12;\nfn token_count() {}\nmax_tokens: 512, tokens = 3";
        assert_eq!(redact(code), code);
    }
}
