//! `@path` attachments are confined like the file tools (issue 24): in
//! `strata chat`, a mention that resolves outside the workspace (through
//! `~`, an absolute path, `..` or a symbolic link) or names a credential is
//! not read — nothing of the file reaches the request the loopback server
//! receives, the text goes as typed, and one warning says what was not
//! attached and how to allow it; `--attach PATH` allows one for that
//! command; piped text is judged the same; an e-mail address is no
//! mention.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;
use crate::support::server;

use common::Sandbox;
use serde_json::{Value, json};
use server::{Reply, Server};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// What the files outside hold: none of it may reach a request.
const KEY_SECRET: &str = "KEY-SECRET-b3BlbnNzaC1rZXk";
const OUTSIDE_SECRET: &str = "OUTSIDE-SECRET-4711";
const LINK_SECRET: &str = "LINK-SECRET-0815";
const ENV_SECRET: &str = "API_TOKEN=sk-live-ENV-SECRET";

fn sse(text: &str) -> String {
    let chunk = json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    format!(
        "data: {chunk}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

/// A sandbox whose workspace is `inner/` (a git root of its own) inside
/// the sandbox's directory, with a file beside it (`../outside.txt`), a
/// symbolic link out of it (`link.txt`), an `.env` in it, and an SSH key in
/// the home directory.
struct World {
    sb: Sandbox,
    inner: PathBuf,
}

impl World {
    fn new() -> Self {
        let sb = Sandbox::new();
        let inner = sb.ws().join("inner");
        std::fs::create_dir_all(inner.join(".git")).unwrap();
        std::fs::write(inner.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(inner.join("notes.md"), "NOTES-INSIDE\n").unwrap();
        std::fs::write(inner.join(".env"), format!("{ENV_SECRET}\n")).unwrap();
        std::fs::write(sb.ws().join("outside.txt"), format!("{OUTSIDE_SECRET}\n")).unwrap();
        std::fs::write(sb.ws().join("linked.txt"), format!("{LINK_SECRET}\n")).unwrap();
        std::os::unix::fs::symlink(sb.ws().join("linked.txt"), inner.join("link.txt")).unwrap();
        let ssh = sb.home.path().join(".ssh");
        std::fs::create_dir_all(&ssh).unwrap();
        std::fs::write(
            ssh.join("id_ed25519"),
            format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_SECRET}\n-----END OPENSSH PRIVATE KEY-----\n"),
        )
        .unwrap();
        Self { sb, inner }
    }

    /// `strata ARGS` in the inner workspace against `server`.
    fn chat(&self, server: &Server, args: &[&str]) -> Command {
        let mut c = self.sb.cmd(args);
        c.current_dir(&self.inner)
            .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
            .env("OPENAI_API_KEY", "sk-test-trust");
        c
    }
}

async fn run(mut cmd: Command, stdin: Option<&str>) -> Output {
    let stdin = stdin.map(str::to_owned);
    let out = tokio::task::spawn_blocking(move || {
        if stdin.is_some() {
            cmd.stdin(Stdio::piped());
        }
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        if let Some(text) = stdin {
            child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        }
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The user messages of a request, as sent.
fn user_contents(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// The lines of `out`'s stderr that are warnings.
fn warnings(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("warning:"))
        .map(str::to_owned)
        .collect()
}

fn canonical(p: &Path) -> String {
    p.canonicalize().unwrap().display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mentions_outside_the_workspace_are_not_read_and_one_warning_says_how_to_attach_them() {
    let w = World::new();
    let server = Server::start(vec![Reply::sse(sse("ok"))]).await;
    let text = "look at @~/.ssh/id_ed25519 @/etc/passwd @../outside.txt @link.txt and @notes.md; mail me at ada@example.com";
    let out = run(w.chat(&server, &["chat", "--new", text]), None).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = String::from_utf8_lossy(&requests[0].body).into_owned();
    for secret in [KEY_SECRET, OUTSIDE_SECRET, LINK_SECRET, "root:x:0:0"] {
        assert!(!body.contains(secret), "{secret} reached the request: {body}");
    }
    let sent = user_contents(&requests[0].json()).concat();
    assert!(sent.starts_with(text), "the text goes as typed: {sent}");
    // The file inside is attached; each one outside is a note, not content.
    assert!(sent.contains("<attachment path=\"notes.md\"") && sent.contains("NOTES-INSIDE"));
    for reference in ["~/.ssh/id_ed25519", "/etc/passwd", "../outside.txt", "link.txt"] {
        assert!(
            sent.contains(&format!(
                "<attachment path=\"{reference}\" embedded=\"false\"/> (not attached:"
            )),
            "{reference}: {sent}"
        );
    }
    // An e-mail address is no mention.
    assert!(!sent.contains("example.com\""), "{sent}");
    let warned = warnings(&out);
    assert_eq!(warned.len(), 1, "one warning: {warned:?}");
    let warning = &warned[0];
    for said in [
        "@~/.ssh/id_ed25519, @/etc/passwd, @../outside.txt and @link.txt were not attached",
        &format!(
            "{} is outside the workspace",
            canonical(&w.sb.home.path().join(".ssh/id_ed25519"))
        ),
        &format!("to {}", canonical(&w.sb.ws().join("linked.txt"))),
        "--attach",
    ] {
        assert!(warning.contains(said), "{said}: {warning}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_allows_one_path_for_that_command_only() {
    let w = World::new();
    let server = Server::start(vec![Reply::sse(sse("one")), Reply::sse(sse("two"))]).await;
    let outside = w.sb.ws().join("outside.txt");
    let out = run(
        w.chat(
            &server,
            &[
                "chat",
                "--new",
                "--attach",
                outside.to_str().unwrap(),
                "compare @../outside.txt with @~/.ssh/id_ed25519",
            ],
        ),
        None,
    )
    .await;
    let first = String::from_utf8_lossy(&server.requests()[0].body).into_owned();
    assert!(
        first.contains(OUTSIDE_SECRET),
        "the allowed file is attached: {first}"
    );
    assert!(!first.contains(KEY_SECRET), "only that one: {first}");
    let warned = warnings(&out);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("@~/.ssh/id_ed25519 was not attached") && !warned[0].contains("outside.txt"),
        "{warned:?}"
    );
    // The next command did not allow it: the new mention is withheld.
    let out = run(w.chat(&server, &["chat", "-c", "again @../outside.txt"]), None).await;
    let last = user_contents(&server.requests()[1].json()).pop().unwrap();
    assert!(!last.contains(OUTSIDE_SECRET), "{last}");
    assert!(last.contains("embedded=\"false\""), "{last}");
    assert_eq!(warnings(&out).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_inside_the_workspace_is_withheld_until_attach_names_it() {
    let w = World::new();
    let server = Server::start(vec![
        Reply::sse(sse("one")),
        Reply::sse(sse("two")),
        Reply::sse(sse("three")),
    ])
    .await;
    let out = run(w.chat(&server, &["chat", "--new", "what is in @.env?"]), None).await;
    let first = String::from_utf8_lossy(&server.requests()[0].body).into_owned();
    assert!(!first.contains("ENV-SECRET"), "{first}");
    let warned = warnings(&out);
    assert_eq!(warned.len(), 1, "{warned:?}");
    // The advice names the file as resolved, so it works from anywhere.
    let env_file = canonical(&w.inner.join(".env"));
    assert!(
        warned[0].contains("looks like an environment file")
            && warned[0].contains(&format!("pass --attach {env_file} to attach it")),
        "{warned:?}"
    );
    let out = run(
        w.chat(&server, &["chat", "-c", "--attach", ".env", "now @.env"]),
        None,
    )
    .await;
    let second = String::from_utf8_lossy(&server.requests()[1].body).into_owned();
    assert!(
        second.contains("ENV-SECRET"),
        "allowed for this command: {second}"
    );
    assert!(warnings(&out).is_empty(), "{:?}", warnings(&out));
    // From another directory, on the workspace by --workspace, as advised.
    let inner = w.inner.to_string_lossy().into_owned();
    let mut elsewhere = w.chat(
        &server,
        &[
            "chat",
            "--workspace",
            &inner,
            "--attach",
            &env_file,
            "once more @.env",
        ],
    );
    elsewhere.current_dir(w.sb.home.path());
    let out = run(elsewhere, None).await;
    let third = String::from_utf8_lossy(&server.requests()[2].body).into_owned();
    assert!(third.contains("ENV-SECRET"), "{third}");
    assert!(warnings(&out).is_empty(), "{:?}", warnings(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_of_a_path_that_does_not_exist_is_a_usage_error() {
    let w = World::new();
    let server = Server::start(vec![Reply::sse(sse("unused"))]).await;
    let mut cmd = w.chat(
        &server,
        &["chat", "--attach", "no-such-file", "see @no-such-file"],
    );
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--attach no-such-file names nothing that exists"),
        "{stderr}"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn piped_text_with_mentions_outside_attaches_nothing_and_json_says_it_as_a_notice() {
    let w = World::new();
    let server = Server::start(vec![Reply::sse(sse("ok"))]).await;
    let piped = "a CI log\nerror: see @~/.ssh/id_ed25519 and @../outside.txt\n";
    let out = run(w.chat(&server, &["chat", "--new", "--json", "-"]), Some(piped)).await;
    let body = String::from_utf8_lossy(&server.requests()[0].body).into_owned();
    assert!(
        !body.contains(KEY_SECRET) && !body.contains(OUTSIDE_SECRET),
        "{body}"
    );
    assert!(user_contents(&server.requests()[0].json())[0].starts_with(piped));
    assert!(warnings(&out).is_empty(), "--json says it on stdout");
    let notices: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "notice")
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    let message = notices[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("warning: @~/.ssh/id_ed25519 and @../outside.txt were not attached")
            && message.contains("--attach"),
        "{message}"
    );
}
