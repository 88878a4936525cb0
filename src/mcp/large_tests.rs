#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use rmcp::model::{JsonRpcMessage, ServerResult};

fn spooled(dir: &Path, message: &str) -> Spool {
    let mut spool = Spool::create(dir, &message.as_bytes()[..10]).unwrap();
    spool.write(&message.as_bytes()[10..]);
    spool
}

/// The message read from `message`, as JSON, and the shared state.
fn read_back(message: &str) -> (Option<Value>, Shared, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let shared = Shared::default();
    let got = read(spooled(dir.path(), message), dir.path(), &shared);
    let json = got.map(|m| serde_json::to_value(&m).unwrap());
    (json, shared, dir)
}

fn token(message: &Value) -> &str {
    message["result"]["_meta"][LARGE_KEY].as_str().unwrap()
}

#[test]
fn blocks_go_to_the_file_in_order_with_binary_ones_saved_beside_it() {
    let message = json!({
        "result": {
            "isError": true,
            "content": [
                {"text": "first \u{1b}[2J line\n", "type": "text"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                {"type": "resource", "resource": {"text": "resource text"}},
                {"type": "audio", "mimeType": "audio/wav", "data": "not base64!"},
                {"type": "video", "data": "aGVsbG8="},
                {"type": "text", "text": "last"},
            ],
            "structuredContent": {"n": 1},
        },
        "id": 7,
        "jsonrpc": "2.0",
    });
    // The URI first, as most servers write it (json! sorts keys).
    let message = message.to_string().replace(
        r#"{"text":"resource text"}"#,
        r#"{"uri":"file:///a.txt","text":"resource text"}"#,
    );
    let (got, shared, dir) = read_back(&message);
    let got = got.unwrap();
    assert_eq!(got["id"], 7);
    assert_eq!(got["result"]["isError"], true);
    assert_eq!(got["result"]["content"], json!([]));
    let large = shared.take_large(token(&got)).unwrap();
    let text = std::fs::read_to_string(&large.file).unwrap();
    let [image, video] = &large.files[..] else {
        panic!("two files: {:?}", large.files)
    };
    assert_eq!(std::fs::read(image).unwrap(), b"hello");
    assert_eq!(image.extension().unwrap(), "png");
    assert_eq!(std::fs::read(video).unwrap(), b"hello");
    assert_eq!(video.extension().unwrap(), "bin");
    assert_eq!(
        text,
        format!(
            "first \u{1b}[2J line\n\n[image (image/png, 5 bytes) saved to {}]\n[resource file:///a.txt]\nresource text\n\
             [audio (audio/wav): not saved, its data is not valid base64]\n\
             [video (application/octet-stream, 5 bytes) saved to {}]\nlast",
            image.display(),
            video.display()
        )
    );
    assert_eq!(large.bytes, text.len() as u64);
    assert_eq!(large.message_bytes, message.len() as u64);
    assert!(large.file.starts_with(dir.path()) && image.starts_with(dir.path()));
    // Taken once; the spool is removed; the text and both files are left.
    assert!(shared.take_large(token(&got)).is_none());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
}

#[test]
fn a_block_of_a_kind_strata_does_not_know_is_a_line() {
    let message =
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "hologram", "frames": [1, 2]}]}});
    let (got, shared, _dir) = read_back(&message.to_string());
    let large = shared.take_large(token(&got.unwrap())).unwrap();
    assert_eq!(
        std::fs::read_to_string(large.file).unwrap(),
        "[hologram block left out: strata does not know it]"
    );
}

#[test]
fn the_message_parses_as_a_call_result() {
    let message =
        json!({"jsonrpc": "2.0", "id": "a-1", "result": {"content": [{"type": "text", "text": "x"}]}});
    let dir = tempfile::tempdir().unwrap();
    let shared = Shared::default();
    let got = read(spooled(dir.path(), &message.to_string()), dir.path(), &shared).unwrap();
    let JsonRpcMessage::Response(response) = got else {
        panic!("a response: {got:?}")
    };
    let ServerResult::CallToolResult(result) = response.result else {
        panic!("a call result: {:?}", response.result)
    };
    assert!(result.content.is_empty());
    let token = result
        .meta
        .unwrap()
        .get(LARGE_KEY)
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        std::fs::read_to_string(shared.take_large(&token).unwrap().file).unwrap(),
        "x"
    );
}

#[test]
fn structured_content_is_written_when_no_block_has_text() {
    let message = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "structuredContent": {"k": "v", "n": [1, 2]}}});
    let (got, shared, dir) = read_back(&message.to_string());
    let large = shared.take_large(token(&got.unwrap())).unwrap();
    assert_eq!(
        std::fs::read_to_string(&large.file).unwrap(),
        "structured content:\n{\"k\":\"v\",\"n\":[1,2]}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "the side file is gone"
    );
}

#[test]
fn a_long_error_message_is_cut_as_it_streams() {
    let long = "x".repeat(100_000);
    let message =
        json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32001, "message": long, "data": {"big": long}}});
    let (got, _, _dir) = read_back(&message.to_string());
    let got = got.unwrap();
    assert_eq!(got["error"]["code"], -32001);
    assert_eq!(
        got["error"]["message"],
        format!("{}… (a message of 100,000 bytes, cut)", "x".repeat(2_000))
    );
}

#[test]
fn an_answer_that_is_not_json_ends_its_call_with_a_parse_error() {
    let (got, shared, dir) = read_back(
        r#"{"jsonrpc": "2.0", "id": 9, "result": {"content": [{"type": "text", "text": "unterminated"#,
    );
    let got = got.unwrap();
    assert_eq!(got["id"], 9);
    assert_eq!(got["error"]["code"], PARSE_ERROR);
    let message = got["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("strata could not read its 89-byte answer (JSON syntax error"),
        "{message}"
    );
    assert!(shared.large.lock().unwrap().is_empty());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
}

#[test]
fn an_answer_broken_before_its_id_ends_the_call_its_tail_names() {
    let broken = format!(
        r#"{{"jsonrpc": "2.0", "result": {{"content": [{{"type": "text", "text": "{}"}}]}},, "id": 12}}"#,
        "z".repeat(5_000)
    );
    let (got, shared, dir) = read_back(&broken);
    let got = got.unwrap();
    assert_eq!(got["id"], 12);
    assert_eq!(got["error"]["code"], PARSE_ERROR);
    assert!(shared.large.lock().unwrap().is_empty());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // A tail that names no id: skipped, as before.
    assert!(read_back(r#"{"jsonrpc": "2.0", "result": {,,}}"#).0.is_none());
}

#[test]
fn errors_pass_and_requests_and_garbage_are_skipped() {
    let error = json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32000, "message": "no"}});
    let (got, _, _dir) = read_back(&error.to_string());
    assert_eq!(got.unwrap()["error"]["message"], "no");
    let request = json!({"jsonrpc": "2.0", "id": 4, "method": "sampling/createMessage", "params": {}});
    assert!(read_back(&request.to_string()).0.is_none());
    assert!(read_back("this line is not JSON at all").0.is_none());
    let no_result = json!({"jsonrpc": "2.0", "id": 5});
    assert!(read_back(&no_result.to_string()).0.is_none());
}

#[test]
fn dropping_the_shared_state_removes_what_was_not_taken() {
    let message = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "x"}]}});
    let (got, shared, dir) = read_back(&message.to_string());
    assert!(got.is_some());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    drop(shared);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
