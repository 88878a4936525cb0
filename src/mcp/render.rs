//! A `tools/call` result as text for the model: every content block in
//! order, each on its own lines.
//!
//! Text blocks are the text itself; an embedded text resource is its text
//! under a `[resource URI]` line; a resource link is one `[resource link …]`
//! line; images, audio and binary resources are written to files in an
//! [`ImageDir`] and stand as one placeholder line naming the file (or saying
//! why they were not saved); structured content is added as JSON unless a
//! text block already holds the same value (servers are asked to send both).

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Where a call's binary parts (images, audio, blobs) are saved:
/// `dir/<stem>-<n>.<ext>`, `n` counting from 1 within the call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageDir {
    /// The directory (the session's spill directory); created when missing.
    pub dir: PathBuf,
    /// The file name stem (the tool call's id, made safe for a file name).
    pub stem: String,
}

/// A rendered `tools/call` result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallResult {
    /// The content blocks as text; `(no content)` when there were none.
    pub text: String,
    /// The server set `isError`: the tool ran and reports a failure (a
    /// refusal, a bad argument) that the model should read.
    pub is_error: bool,
    /// The files binary parts were saved to, in order.
    pub files: Vec<PathBuf>,
    /// A result too long to hold in memory: its text is in this file (the
    /// caller removes it), and `text` is empty.
    pub large: Option<super::Large>,
}

/// Renders `result` (see the module doc), saving binary parts under
/// `images` when given.
#[must_use]
pub fn render(result: &CallToolResult, images: Option<&ImageDir>) -> CallResult {
    let mut out = CallResult {
        is_error: result.is_error == Some(true),
        ..CallResult::default()
    };
    let mut parts: Vec<String> = Vec::new();
    let mut texts: Vec<&str> = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => {
                texts.push(&t.text);
                parts.push(t.text.clone());
            }
            ContentBlock::Image(i) => {
                parts.push(save(&mut out.files, images, "image", &i.mime_type, &i.data, None))
            }
            ContentBlock::Audio(a) => {
                parts.push(save(&mut out.files, images, "audio", &a.mime_type, &a.data, None))
            }
            ContentBlock::ResourceLink(r) => {
                let mut line = format!("[resource link: {} {}", r.name, r.uri);
                if let Some(mime) = &r.mime_type {
                    let _ = write!(line, " ({mime})");
                }
                if let Some(d) = r.description.as_deref().filter(|d| !d.is_empty()) {
                    let _ = write!(line, " — {d}");
                }
                line.push(']');
                parts.push(line);
            }
            ContentBlock::Resource(e) => match &e.resource {
                ResourceContents::TextResourceContents {
                    uri, mime_type, text, ..
                } => {
                    let mime = mime_type
                        .as_deref()
                        .map(|m| format!(" ({m})"))
                        .unwrap_or_default();
                    parts.push(format!("[resource {uri}{mime}]\n{text}"));
                }
                ResourceContents::BlobResourceContents {
                    uri, mime_type, blob, ..
                } => {
                    let mime = mime_type.as_deref().unwrap_or("application/octet-stream");
                    parts.push(save(&mut out.files, images, "resource", mime, blob, Some(uri)));
                }
                #[allow(unreachable_patterns)]
                _ => parts.push("[a resource of a kind strata does not know]".to_owned()),
            },
            #[allow(unreachable_patterns)]
            _ => parts.push("[a content block of a kind strata does not know]".to_owned()),
        }
    }
    if let Some(structured) = &result.structured_content {
        let all_text = texts.join("\n");
        let repeated = texts
            .iter()
            .any(|t| serde_json::from_str::<Value>(t).is_ok_and(|v| &v == structured))
            || (!all_text.is_empty() && leaves_in(structured, &all_text));
        if !repeated {
            let json = serde_json::to_string_pretty(structured).unwrap_or_else(|_| structured.to_string());
            parts.push(format!("structured content:\n{json}"));
        }
    }
    out.text = if parts.is_empty() {
        "(no content)".to_owned()
    } else {
        parts.join("\n")
    };
    out
}

/// Whether every scalar of `value` (strings as they are, numbers and
/// booleans as JSON) occurs in `text`: the text blocks already say it.
fn leaves_in(value: &Value, text: &str) -> bool {
    match value {
        Value::Object(map) => map.values().all(|v| leaves_in(v, text)),
        Value::Array(items) => items.iter().all(|v| leaves_in(v, text)),
        Value::String(s) => text.contains(s.as_str()),
        Value::Null => true,
        other => text.contains(&other.to_string()),
    }
}

/// Decodes base64 `data` and writes it to the next file of `images`; the
/// placeholder line says where, or why not.
fn save(
    files: &mut Vec<PathBuf>,
    images: Option<&ImageDir>,
    kind: &str,
    mime: &str,
    data: &str,
    uri: Option<&str>,
) -> String {
    let of = uri.map(|u| format!(" {u}")).unwrap_or_default();
    let bytes = match base64::engine::general_purpose::STANDARD.decode(data.trim()) {
        Ok(bytes) => bytes,
        Err(_) => return format!("[{kind}{of} ({mime}): not saved, its data is not valid base64]"),
    };
    let size = crate::text::group_digits(bytes.len() as u64);
    let Some(images) = images else {
        return format!("[{kind}{of} ({mime}, {size} bytes): not saved]");
    };
    let path = images
        .dir
        .join(format!("{}-{}.{}", images.stem, files.len() + 1, extension(mime)));
    match write(&images.dir, &path, &bytes) {
        Ok(()) => {
            let line = format!("[{kind}{of} ({mime}, {size} bytes) saved to {}]", path.display());
            files.push(path);
            line
        }
        Err(e) => format!("[{kind}{of} ({mime}, {size} bytes): not saved ({e})]"),
    }
}

fn write(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(path, bytes)
}

/// A file extension for a MIME type: its subtype when it is a plain word
/// (`png`, `wav`), `jpg` for JPEG, `svg` for SVG, else `bin`.
pub(super) fn extension(mime: &str) -> String {
    let sub = mime
        .split(';')
        .next()
        .unwrap_or("")
        .split('/')
        .nth(1)
        .unwrap_or("");
    match sub {
        "jpeg" => "jpg".to_owned(),
        "svg+xml" => "svg".to_owned(),
        s if !s.is_empty() && s.len() <= 8 && s.chars().all(|c| c.is_ascii_alphanumeric()) => s.to_owned(),
        _ => "bin".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_links_and_embedded_resources_read_in_order() {
        let r = result(json!({
            "content": [
                {"type": "text", "text": "first"},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain", "description": "A file"},
                {"type": "resource", "resource": {"uri": "mem://note", "mimeType": "text/markdown", "text": "# Note"}},
            ],
            "isError": true,
        }));
        let out = render(&r, None);
        assert_eq!(
            out.text,
            "first\n[resource link: a.txt file:///a.txt (text/plain) — A file]\n[resource mem://note (text/markdown)]\n# Note"
        );
        assert!(out.is_error);
        assert_eq!(render(&result(json!({"content": []})), None).text, "(no content)");
    }

    #[test]
    fn structured_content_is_added_once() {
        let both = result(json!({
            "content": [{"type": "text", "text": "{\"sum\": 3}"}],
            "structuredContent": {"sum": 3},
        }));
        assert_eq!(render(&both, None).text, "{\"sum\": 3}");
        let said = result(json!({
            "content": [{"type": "text", "text": "Successfully wrote to /w/a.txt"}],
            "structuredContent": {"content": "Successfully wrote to /w/a.txt"},
        }));
        assert_eq!(render(&said, None).text, "Successfully wrote to /w/a.txt");
        let more = result(json!({
            "content": [{"type": "text", "text": "done"}],
            "structuredContent": {"count": 7},
        }));
        assert_eq!(
            render(&more, None).text,
            "done\nstructured content:\n{\n  \"count\": 7\n}"
        );
        let alone = result(json!({"content": [], "structuredContent": {"sum": 3}}));
        assert_eq!(
            render(&alone, None).text,
            "structured content:\n{\n  \"sum\": 3\n}"
        );
    }

    #[test]
    fn images_are_saved_and_stand_as_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let images = ImageDir {
            dir: dir.path().join("spill"),
            stem: "call_1".to_owned(),
        };
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG fake");
        let r = result(json!({
            "content": [
                {"type": "image", "data": png, "mimeType": "image/png"},
                {"type": "image", "data": "!!", "mimeType": "image/jpeg"},
                {"type": "resource", "resource": {"uri": "mem://blob", "mimeType": "image/jpeg", "blob": png}},
            ],
        }));
        let out = render(&r, Some(&images));
        let first = images.dir.join("call_1-1.png");
        let second = images.dir.join("call_1-2.jpg");
        assert_eq!(out.files, [first.clone(), second.clone()]);
        assert_eq!(std::fs::read(&first).unwrap(), b"\x89PNG fake");
        let lines: Vec<&str> = out.text.lines().collect();
        assert_eq!(
            lines[0],
            format!("[image (image/png, 9 bytes) saved to {}]", first.display())
        );
        assert_eq!(
            lines[1],
            "[image (image/jpeg): not saved, its data is not valid base64]"
        );
        assert_eq!(
            lines[2],
            format!(
                "[resource mem://blob (image/jpeg, 9 bytes) saved to {}]",
                second.display()
            )
        );
        assert_eq!(
            render(&r, None).text.lines().next(),
            Some("[image (image/png, 9 bytes): not saved]")
        );
    }

    #[test]
    fn extensions_come_from_the_subtype() {
        assert_eq!(extension("image/png"), "png");
        assert_eq!(extension("image/jpeg"), "jpg");
        assert_eq!(extension("image/svg+xml"), "svg");
        assert_eq!(extension("audio/wav; codecs=1"), "wav");
        assert_eq!(extension("application/vnd.weird-thing"), "bin");
    }
}
