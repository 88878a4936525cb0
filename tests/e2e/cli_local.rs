//! `strata chat` on the embedded model (llama.cpp's own `llama-server`
//! serving the same GGUF is tested in `tests/llama_server.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;

use common::{Sandbox, test_model};
use strata::provider::local::{converted, model_file};

fn json_lines(out: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn chat_with_the_embedded_model_streams_and_counts_exactly() {
    let sb = Sandbox::new();
    let model = test_model();
    let out = sb.run(&[
        "chat",
        "--json",
        "--model-path",
        model.to_str().unwrap(),
        "What is the capital of France?",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events = json_lines(&out);
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(!text.trim().is_empty());
    let usage = events.iter().find(|e| e["type"] == "usage").unwrap();
    let actual = usage["prompt_tokens"].as_u64().unwrap();
    let estimate = usage["estimated_prompt_tokens"].as_u64().unwrap();
    // The estimate uses the model's own tokenizer: only ChatML framing differs.
    assert!(
        actual.abs_diff(estimate) <= 16,
        "estimate {estimate} vs actual {actual}"
    );
    let session = events[0]["session_id"].as_str().unwrap();
    let context = sb.json(&[
        "context",
        session,
        "--json",
        "--model-path",
        model.to_str().unwrap(),
    ]);
    assert_eq!(context["exact"], true);
    assert_eq!(context["window"], 8192);
    assert_ne!(context["tokenizer"], "o200k_base");
}

#[test]
fn a_follow_up_in_a_new_process_reuses_the_saved_kv_state() {
    let sb = Sandbox::new();
    let model = test_model();
    let model = model.to_str().unwrap();
    let events = chat_ok(&sb, model, None, "What is the capital of France?");
    let session = events[0]["session_id"].as_str().unwrap().to_owned();

    let events = chat_ok(&sb, model, Some(&session), "And what is the capital of Germany?");
    let usage = events.iter().find(|e| e["type"] == "usage").unwrap();
    let prompt = usage["prompt_tokens"].as_u64().unwrap();
    let read = usage["cache_read_tokens"].as_u64().unwrap();
    assert!(
        read * 10 >= prompt * 9,
        "the new process re-used only {read} of {prompt} prompt tokens"
    );
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(text.contains("Berlin"), "{text}");

    let detail = kv_detail(&sb, model);
    assert!(
        detail.contains(" in 1 saved state(s) of a 256.0 MB cap"),
        "{detail}"
    );

    // Turned off: the state still on disk is shown, then removed at the next start.
    std::fs::write(
        sb.home.path().join("config.toml"),
        "[providers.local]\nkv_state_max_mb = 0\n",
    )
    .unwrap();
    let detail = kv_detail(&sb, model);
    assert!(
        detail.contains("kv_state_max_mb = 0") && detail.contains("in 1 saved state(s) still in"),
        "{detail}"
    );
    let events = chat_ok(&sb, model, Some(&session), "Thanks.");
    let usage = events.iter().find(|e| e["type"] == "usage").unwrap();
    assert_eq!(usage["cache_read_tokens"].as_u64(), Some(0));
    // Nothing saved, nothing promised: no prediction, no provider miss.
    let context = sb.json(&["context", &session, "--json", "--model-path", model]);
    let cache = &context["cache"];
    assert_eq!(cache["predicted_cached_tokens"], 0, "{cache}");
    assert!(cache["break"].is_null(), "{cache}");
    let detail = kv_detail(&sb, model);
    assert!(
        detail.ends_with("each process prefills its conversation again"),
        "{detail}"
    );
}

/// `strata chat --json` on `model` (in `session` when given), which must
/// succeed; its events.
fn chat_ok(sb: &Sandbox, model: &str, session: Option<&str>, text: &str) -> Vec<serde_json::Value> {
    let mut args = vec!["chat", "--json", "--model-path", model];
    if let Some(id) = session {
        args.extend(["--session", id]);
    }
    args.push(text);
    let out = sb.run(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    json_lines(&out)
}

/// The detail of doctor's `kv state` check.
fn kv_detail(sb: &Sandbox, model: &str) -> String {
    let checks = sb.json(&["doctor", "--json", "--model-path", model]);
    let kv = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "kv state")
        .cloned();
    kv.unwrap()["detail"].as_str().unwrap().to_owned()
}

/// A sandbox whose models directory holds the pulled Q4_1 file (a hard
/// link to the test model), as `strata model pull` leaves it.
fn sandbox_with_pulled_model() -> (Sandbox, std::path::PathBuf) {
    let sb = Sandbox::new();
    let models = sb.home.path().join("data/models");
    std::fs::create_dir_all(&models).unwrap();
    let pulled = models.join(model_file::GGUF_NAME);
    std::fs::hard_link(test_model(), &pulled)
        .or_else(|_| std::fs::copy(test_model(), &pulled).map(|_| ()))
        .unwrap();
    (sb, models)
}

fn reply_text(out: &std::process::Output) -> String {
    json_lines(out)
        .iter()
        .filter(|e| e["type"] == "delta")
        .map(|e| e["text"].as_str().unwrap().to_owned())
        .collect()
}

fn model_check(sb: &Sandbox) -> serde_json::Value {
    doctor_model_check(sb, &["doctor", "--json", "--provider", "local"])
}

/// The `model` line of `strata doctor --json` (which exits 1 when a check fails).
fn doctor_model_check(sb: &Sandbox, args: &[&str]) -> serde_json::Value {
    let out = sb.run(args);
    let checks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "model")
        .unwrap()
        .clone()
}

#[test]
fn model_pull_converts_to_q8_0_and_path_doctor_and_chat_use_it() {
    let (sb, models) = sandbox_with_pulled_model();
    let q8 = models.join(converted::Q8_0_NAME);
    let pull = sb.run(&["model", "pull"]);
    let stderr = String::from_utf8_lossy(&pull.stderr);
    assert!(pull.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&pull.stdout).trim(), q8.to_str().unwrap());
    assert!(
        stderr.contains("runs the Q8_0 file converted from the pulled Q4_1"),
        "{stderr}"
    );

    let path = sb.run(&["model", "path"]);
    assert_eq!(String::from_utf8_lossy(&path.stdout).trim(), q8.to_str().unwrap());
    assert!(String::from_utf8_lossy(&path.stderr).contains("runs the Q8_0 file"));
    let check = model_check(&sb);
    assert_eq!(check["status"], "ok");
    assert!(
        check["detail"].as_str().unwrap().contains("Q8_0 sha256"),
        "{check}"
    );

    let chat = sb.run(&[
        "chat",
        "--json",
        "--provider",
        "local",
        "What is the capital of France?",
    ]);
    let stderr = String::from_utf8_lossy(&chat.stderr);
    assert!(chat.status.success(), "{stderr}");
    assert!(!stderr.contains("converting"), "converted once: {stderr}");
    assert!(reply_text(&chat).contains("Paris"), "{}", reply_text(&chat));
}

#[test]
fn a_failed_conversion_falls_back_to_q4_1_with_a_notice() {
    let (sb, models) = sandbox_with_pulled_model();
    // A directory where the converted file should go: the final rename fails.
    std::fs::create_dir(models.join(converted::Q8_0_NAME)).unwrap();
    let chat = sb.run(&[
        "chat",
        "--json",
        "--provider",
        "local",
        "What is the capital of France?",
    ]);
    let stderr = String::from_utf8_lossy(&chat.stderr);
    assert!(chat.status.success(), "{stderr}");
    assert!(
        stderr.contains("could not convert the model to Q8_0") && stderr.contains("running the Q4_1 file"),
        "{stderr}"
    );
    assert!(reply_text(&chat).contains("Paris"), "{}", reply_text(&chat));

    // Said once: the next start runs the Q4_1 file without trying again.
    let again = sb.run(&["chat", "--json", "--provider", "local", "Hi"]);
    assert!(again.status.success());
    assert!(!String::from_utf8_lossy(&again.stderr).contains("convert"));
    let path = sb.run(&["model", "path"]);
    let q4 = models.join(model_file::GGUF_NAME);
    assert_eq!(String::from_utf8_lossy(&path.stdout).trim(), q4.to_str().unwrap());
    assert!(String::from_utf8_lossy(&path.stderr).contains("Q8_0 conversion failed"));
    let check = model_check(&sb);
    assert_eq!(check["status"], "warn", "{check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains("strata model pull` tries again")
    );
}

/// Copies `from` to `to` with a modification time in the past, so a later
/// write gives it a new one.
fn copy_aged(from: &std::path::Path, to: &std::path::Path) {
    std::fs::copy(from, to).unwrap();
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    std::fs::File::options()
        .write(true)
        .open(to)
        .unwrap()
        .set_modified(past)
        .unwrap();
}

/// Flips 32 bytes in the middle of `file` (same size, new modification time).
fn corrupt(file: &std::path::Path) {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = std::fs::File::options()
        .read(true)
        .write(true)
        .open(file)
        .unwrap();
    let middle = f.metadata().unwrap().len() / 2;
    let mut bytes = [0_u8; 32];
    f.seek(SeekFrom::Start(middle)).unwrap();
    f.read_exact(&mut bytes).unwrap();
    for b in &mut bytes {
        *b ^= 0xA5;
    }
    f.seek(SeekFrom::Start(middle)).unwrap();
    f.write_all(&bytes).unwrap();
}

fn recorded_sha(models: &std::path::Path) -> String {
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(models.join(converted::RECORD_NAME)).unwrap()).unwrap();
    record["sha256"].as_str().unwrap().to_owned()
}

/// A sandbox holding the pulled Q4_1 file and a copy of its conversion.
fn sandbox_with_converted_model() -> (Sandbox, std::path::PathBuf) {
    let (sb, models) = sandbox_with_pulled_model();
    let source = common::test_model_dir();
    copy_aged(
        &source.join(converted::Q8_0_NAME),
        &models.join(converted::Q8_0_NAME),
    );
    std::fs::copy(
        source.join(converted::RECORD_NAME),
        models.join(converted::RECORD_NAME),
    )
    .unwrap();
    (sb, models)
}

#[test]
fn a_damaged_q8_0_is_not_run_path_and_doctor_tell_its_real_sha256_and_a_start_converts_it_again() {
    let (sb, models) = sandbox_with_converted_model();
    let q8 = models.join(converted::Q8_0_NAME);
    let path = sb.run(&["model", "path"]);
    assert_eq!(String::from_utf8_lossy(&path.stdout).trim(), q8.to_str().unwrap());

    corrupt(&q8);
    let real = model_file::sha256_file(&q8).unwrap();
    let recorded = recorded_sha(&models);
    assert_ne!(real, recorded);
    let path = sb.run(&["model", "path"]);
    let stderr = String::from_utf8_lossy(&path.stderr);
    let q4 = models.join(model_file::GGUF_NAME);
    assert_eq!(String::from_utf8_lossy(&path.stdout).trim(), q4.to_str().unwrap());
    assert!(
        stderr.contains("Q8_0 file is damaged") && stderr.contains(&real),
        "{stderr}"
    );
    let check = model_check(&sb);
    assert_eq!(check["status"], "warn", "{check}");
    assert!(check["detail"].as_str().unwrap().contains(&real), "{check}");

    let chat = sb.run(&[
        "chat",
        "--json",
        "--provider",
        "local",
        "What is the capital of France?",
    ]);
    let stderr = String::from_utf8_lossy(&chat.stderr);
    assert!(chat.status.success(), "{stderr}");
    assert_eq!(stderr.matches("is damaged").count(), 1, "said once: {stderr}");
    assert!(stderr.contains("converting it again"), "{stderr}");
    assert!(reply_text(&chat).contains("Paris"), "{}", reply_text(&chat));
    assert_eq!(model_file::sha256_file(&q8).unwrap(), recorded_sha(&models));
    let again = sb.run(&["chat", "--json", "--provider", "local", "Hi"]);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("damaged"));
}

#[test]
fn model_pull_converts_a_damaged_q8_0_again_and_removes_what_a_killed_conversion_left() {
    let (sb, models) = sandbox_with_converted_model();
    let q8 = models.join(converted::Q8_0_NAME);
    assert!(sb.run(&["model", "path"]).status.success());
    corrupt(&q8);
    // What `kill -9` during a conversion leaves (a PID that never runs).
    let left = models.join(".convert-999999999.gguf");
    std::fs::write(&left, b"part of a conversion").unwrap();

    let pull = sb.run(&["model", "pull"]);
    let stderr = String::from_utf8_lossy(&pull.stderr);
    assert!(pull.status.success(), "{stderr}");
    assert!(stderr.contains("converting it again"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&pull.stdout).trim(), q8.to_str().unwrap());
    assert_eq!(model_file::sha256_file(&q8).unwrap(), recorded_sha(&models));
    assert!(!left.exists());
}

#[test]
fn a_damaged_pulled_q4_1_never_runs_and_model_pull_downloads_it_again() {
    let sb = Sandbox::new();
    let models = sb.home.path().join("data/models");
    std::fs::create_dir_all(&models).unwrap();
    let q4 = models.join(model_file::GGUF_NAME);
    copy_aged(&test_model(), &q4);
    corrupt(&q4);

    let chat = sb.run(&[
        "chat",
        "--json",
        "--provider",
        "local",
        "What is the capital of France?",
    ]);
    let stderr = String::from_utf8_lossy(&chat.stderr);
    assert!(!chat.status.success(), "it ran: {stderr}");
    let damaged = format!("the model file {} is damaged", q4.display());
    assert!(
        stderr.contains(&damaged) && stderr.contains("run `strata model pull` to download it again"),
        "{stderr}"
    );
    assert!(!stderr.contains("converting"), "{stderr}");
    assert!(reply_text(&chat).is_empty());
    let path = sb.run(&["model", "path"]);
    assert!(!path.status.success());
    assert!(String::from_utf8_lossy(&path.stderr).contains(&damaged));
    let check = model_check(&sb);
    assert_eq!(check["status"], "fail", "{check}");
    assert!(check["detail"].as_str().unwrap().contains(&damaged), "{check}");

    // Without python3 the download cannot start, but the damaged file is gone.
    let pull = sb
        .cmd(&["model", "pull"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&pull.stderr);
    assert!(!pull.status.success());
    assert!(
        stderr.contains("is damaged")
            && stderr.contains("downloaded again")
            && stderr.contains("python3 was not found"),
        "{stderr}"
    );
    assert!(!q4.exists());
}

#[test]
fn model_path_messages_say_what_the_given_file_is() {
    let sb = Sandbox::new();
    let dir = sb.home.path().join("x");
    std::fs::create_dir(&dir).unwrap();
    let out = sb.run(&["model", "path", "--model-path", dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("is a directory") && !stderr.contains("does not exist"),
        "{stderr}"
    );

    let bin = sb.home.path().join("random.bin");
    std::fs::write(&bin, b"random bytes, no model").unwrap();
    let out = sb.run(&["chat", "--model-path", bin.to_str().unwrap(), "Hi"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("is not a GGUF file")
            && stderr.contains("--model-path")
            && !stderr.contains("drop --model"),
        "{stderr}"
    );

    let text = sb.home.path().join("notes.gguf");
    std::fs::write(&text, b"just a text file\n").unwrap();
    let out = sb.run(&["model", "path", "--model-path", text.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a GGUF file"));
    let check = doctor_model_check(&sb, &["doctor", "--json", "--model-path", text.to_str().unwrap()]);
    assert_eq!(check["status"], "fail", "{check}");
    let detail = check["detail"].as_str().unwrap();
    assert!(detail.contains("is not a GGUF file"), "{check}");
    assert!(
        detail.ends_with("pass another GGUF file to --model-path or [providers.local] model_path")
            && !detail.contains("model pull"),
        "a file of the user's own is not fixed by a pull: {check}"
    );

    let gguf = sb.home.path().join("own.gguf");
    std::fs::write(&gguf, b"GGUF\x03\x00\x00\x00").unwrap();
    let out = sb.run(&["model", "path", "--model-path", gguf.to_str().unwrap()]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        gguf.to_str().unwrap()
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--model-path as it is (unconverted)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Its magic bytes are right but nothing follows: llama.cpp refuses it,
    // said in words, not as llama.cpp's internal result.
    let out = sb.run(&["chat", "--model-path", gguf.to_str().unwrap(), "Hi"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot load") && stderr.contains("as a model, so it is damaged or of a kind"),
        "{stderr}"
    );
    assert!(!stderr.contains("null result"), "{stderr}");
}
