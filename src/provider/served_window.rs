//! The context window an OpenAI-compatible *local* server actually serves,
//! asked of the server itself: llama.cpp, Ollama, vLLM and LM Studio each
//! say it their own way, and each may serve less than the model was trained
//! for (llama.cpp's `-c`, Ollama's `num_ctx`).
//!
//! Sources, in the order they are tried (one HTTP request each, short
//! timeouts; the first answer wins):
//!
//! 1. `GET {base}/models` — llama.cpp: `data[].meta.n_ctx` (`n_ctx_train`
//!    is the model's maximum, not what is served); vLLM:
//!    `data[].max_model_len`.
//! 2. `GET {root}/props` — llama.cpp: `default_generation_settings.n_ctx`.
//! 3. `GET {root}/api/v0/models` — LM Studio: `data[].loaded_context_length`.
//! 4. `POST {root}/api/show` `{"model": M}` — Ollama: `num_ctx` in
//!    `parameters` when set, else Ollama's default [`OLLAMA_DEFAULT_NUM_CTX`]
//!    (never `model_info.*.context_length`, the trained maximum).
//!
//! `{base}` is the configured base URL (`…/v1`), `{root}` the same without
//! its trailing `/v1`. A model entry is the one whose `id` is the session's
//! model, or the only one listed (llama.cpp serves one model under its file
//! name whatever the client calls it). The parsers are pure and tested on
//! recorded answers.

use serde_json::Value;
use std::time::Duration;

/// Ollama's `num_ctx` when a model does not set one (Ollama's documented
/// default for its `num_ctx` parameter).
pub const OLLAMA_DEFAULT_NUM_CTX: u64 = 4_096;

/// How long one discovery request may take before the next source is tried.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(3);

/// Which kind of server answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    /// llama.cpp's `llama-server`.
    LlamaCpp,
    /// Ollama.
    Ollama,
    /// vLLM.
    Vllm,
    /// LM Studio.
    LmStudio,
}

impl ServerKind {
    /// The stored name (`llama_cpp`, `ollama`, `vllm`, `lm_studio`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LlamaCpp => "llama_cpp",
            Self::Ollama => "ollama",
            Self::Vllm => "vllm",
            Self::LmStudio => "lm_studio",
        }
    }

    /// The server's name for people.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::LlamaCpp => "llama.cpp",
            Self::Ollama => "Ollama",
            Self::Vllm => "vLLM",
            Self::LmStudio => "LM Studio",
        }
    }
}

/// A served window as a server stated it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServedWindow {
    /// The window, tokens.
    pub tokens: u64,
    /// Who said it.
    pub server: ServerKind,
    /// Which field it came from, for people (`meta.n_ctx of GET /v1/models`,
    /// `Ollama's default num_ctx` ...).
    pub detail: String,
}

fn positive(v: Option<&Value>) -> Option<u64> {
    v?.as_u64().filter(|&n| n > 0)
}

/// The entry of an OpenAI-style `data` list for `model`: the one whose
/// `id` is `model`, else the only one.
fn entry<'a>(body: &'a Value, key: &str, model: &str) -> Option<&'a Value> {
    let list = body.get(key)?.as_array()?;
    list.iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (list.len() == 1).then(|| &list[0]))
}

/// `GET /v1/models` of llama.cpp (`meta.n_ctx`) or vLLM (`max_model_len`).
#[must_use]
pub fn parse_models(body: &Value, model: &str) -> Option<ServedWindow> {
    let m = entry(body, "data", model)?;
    if let Some(tokens) = positive(m.pointer("/meta/n_ctx")) {
        return Some(ServedWindow {
            tokens,
            server: ServerKind::LlamaCpp,
            detail: "meta.n_ctx of GET /v1/models".to_owned(),
        });
    }
    positive(m.get("max_model_len")).map(|tokens| ServedWindow {
        tokens,
        server: ServerKind::Vllm,
        detail: "max_model_len of GET /v1/models".to_owned(),
    })
}

/// `GET /props` of llama.cpp.
#[must_use]
pub fn parse_props(body: &Value) -> Option<ServedWindow> {
    positive(body.pointer("/default_generation_settings/n_ctx")).map(|tokens| ServedWindow {
        tokens,
        server: ServerKind::LlamaCpp,
        detail: "default_generation_settings.n_ctx of GET /props".to_owned(),
    })
}

/// `GET /api/v0/models` of LM Studio (the loaded model's window).
#[must_use]
pub fn parse_lm_studio(body: &Value, model: &str) -> Option<ServedWindow> {
    let m = entry(body, "data", model)?;
    positive(m.get("loaded_context_length")).map(|tokens| ServedWindow {
        tokens,
        server: ServerKind::LmStudio,
        detail: "loaded_context_length of GET /api/v0/models".to_owned(),
    })
}

/// `POST /api/show` of Ollama: `num_ctx` from `parameters` (a text of
/// `name value` lines), else Ollama's default. `None` when the body is not
/// an Ollama answer (no `parameters`, `modelfile` or `model_info`).
#[must_use]
pub fn parse_ollama_show(body: &Value) -> Option<ServedWindow> {
    let is_ollama = ["parameters", "modelfile", "model_info", "details"]
        .iter()
        .any(|k| body.get(k).is_some());
    if !is_ollama {
        return None;
    }
    let set = body
        .get("parameters")
        .and_then(Value::as_str)
        .into_iter()
        .flat_map(str::lines)
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            (parts.next() == Some("num_ctx")).then(|| parts.next()?.parse::<u64>().ok())?
        })
        .next_back()
        .filter(|&n| n > 0);
    Some(match set {
        Some(tokens) => ServedWindow {
            tokens,
            server: ServerKind::Ollama,
            detail: "num_ctx in the parameters of POST /api/show".to_owned(),
        },
        None => ServedWindow {
            tokens: OLLAMA_DEFAULT_NUM_CTX,
            server: ServerKind::Ollama,
            detail: format!("Ollama's default num_ctx of {OLLAMA_DEFAULT_NUM_CTX} (the model sets none)"),
        },
    })
}

/// The base URL without a trailing `/` and without its `/v1`.
fn root_of(base: &str) -> &str {
    let base = base.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base)
}

/// Sends `request` and reads a JSON answer; `None` for anything else.
async fn json_of(request: reqwest::RequestBuilder) -> Option<Value> {
    let response = tokio::time::timeout(DISCOVERY_TIMEOUT, request.send())
        .await
        .ok()?
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = tokio::time::timeout(DISCOVERY_TIMEOUT, response.bytes())
        .await
        .ok()?
        .ok()?;
    serde_json::from_slice(&body).ok()
}

async fn get_json(client: &reqwest::Client, url: &str) -> Option<Value> {
    json_of(client.get(url)).await
}

async fn post_json(client: &reqwest::Client, url: &str, body: &Value) -> Option<Value> {
    let request = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string());
    json_of(request).await
}

/// Asks the server at `base_url` (an OpenAI-compatible base, usually ending
/// in `/v1`) what window it serves for `model`; `None` when no source
/// answered (an unknown server, or it is down: the caller keeps its
/// window). `api_key` goes into an `Authorization: Bearer` header when
/// given. Never an error: discovery is best effort.
pub async fn discover(base_url: &str, model: &str, api_key: Option<&str>) -> Option<ServedWindow> {
    let client = super::http::bearer_client(api_key, DISCOVERY_TIMEOUT).ok()?;
    let base = base_url.trim_end_matches('/');
    let root = root_of(base);
    if let Some(found) = get_json(&client, &format!("{base}/models"))
        .await
        .and_then(|b| parse_models(&b, model))
    {
        return Some(found);
    }
    if let Some(found) = get_json(&client, &format!("{root}/props"))
        .await
        .and_then(|b| parse_props(&b))
    {
        return Some(found);
    }
    if let Some(found) = get_json(&client, &format!("{root}/api/v0/models"))
        .await
        .and_then(|b| parse_lm_studio(&b, model))
    {
        return Some(found);
    }
    post_json(
        &client,
        &format!("{root}/api/show"),
        &serde_json::json!({ "model": model }),
    )
    .await
    .and_then(|b| parse_ollama_show(&b))
}

/// The window an overflow error states, if it states one: llama.cpp's
/// `n_ctx` field (passed as `n_ctx`), or the text of llama.cpp ("exceeds the
/// available context size (4096 tokens)"), OpenAI and vLLM ("maximum
/// context length is 8192 tokens").
#[must_use]
pub fn stated_window(message: &str, n_ctx: Option<u64>) -> Option<u64> {
    if let Some(n) = n_ctx.filter(|&n| n > 0) {
        return Some(n);
    }
    let lower = message.to_lowercase();
    [
        "available context size",
        "maximum context length is",
        "context window of",
        "context length of",
    ]
    .into_iter()
    .find_map(|phrase| number_after(&lower, phrase))
}

/// The request's size an overflow error states, if it does: llama.cpp's
/// "request (5031 tokens) exceeds", OpenAI's "your messages resulted in
/// 9000 tokens".
#[must_use]
pub fn stated_prompt_tokens(message: &str) -> Option<u64> {
    let lower = message.to_lowercase();
    ["request (", "resulted in"]
        .into_iter()
        .find_map(|phrase| number_after(&lower, phrase))
}

/// The positive number (digits, thousands commas allowed) that follows
/// `phrase` in `lower`, spaces and an opening parenthesis skipped.
fn number_after(lower: &str, phrase: &str) -> Option<u64> {
    let start = lower.find(phrase)? + phrase.len();
    let digits: String = lower[start..]
        .trim_start_matches([' ', '('])
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok().filter(|&n: &u64| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn llama_cpp_models_give_the_served_n_ctx_not_the_trained_one() {
        let body = json!({"object": "list", "data": [{"id": "SmolLM2.gguf",
            "meta": {"n_ctx": 3072, "n_ctx_train": 8192, "n_vocab": 49152}}]});
        let w = parse_models(&body, "smollm2").unwrap();
        assert_eq!((w.tokens, w.server), (3072, ServerKind::LlamaCpp));
    }

    #[test]
    fn vllm_models_give_max_model_len_of_the_named_model() {
        let body =
            json!({"data": [{"id": "a", "max_model_len": 4096}, {"id": "qwen", "max_model_len": 32768}]});
        let w = parse_models(&body, "qwen").unwrap();
        assert_eq!((w.tokens, w.server), (32768, ServerKind::Vllm));
        assert_eq!(
            parse_models(&body, "other"),
            None,
            "two models, none named: no guess"
        );
    }

    #[test]
    fn ollama_uses_num_ctx_when_set_and_its_default_otherwise() {
        let set = json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx 16384\ntemperature 0.7",
            "model_info": {"qwen2.context_length": 32768}});
        assert_eq!(parse_ollama_show(&set).unwrap().tokens, 16384);
        let unset = json!({"modelfile": "FROM x", "model_info": {"llama.context_length": 131072}});
        let w = parse_ollama_show(&unset).unwrap();
        assert_eq!(w.tokens, OLLAMA_DEFAULT_NUM_CTX);
        assert!(w.detail.contains("default"), "{}", w.detail);
        assert_eq!(parse_ollama_show(&json!({"error": "model not found"})), None);
    }

    #[test]
    fn props_and_lm_studio() {
        let props = json!({"default_generation_settings": {"n_ctx": 512}});
        assert_eq!(parse_props(&props).unwrap().tokens, 512);
        let lms = json!({"data": [{"id": "qwen2.5-7b", "max_context_length": 32768, "loaded_context_length": 4096}]});
        assert_eq!(parse_lm_studio(&lms, "qwen2.5-7b").unwrap().tokens, 4096);
    }

    #[test]
    fn overflow_errors_state_their_window() {
        assert_eq!(stated_window("whatever", Some(3072)), Some(3072));
        assert_eq!(
            stated_window(
                "request (5031 tokens) exceeds the available context size (3072 tokens), try increasing it",
                None
            ),
            Some(3072)
        );
        assert_eq!(
            stated_window(
                "This model's maximum context length is 8,192 tokens. However, your messages resulted in 9000 tokens.",
                None
            ),
            Some(8192)
        );
        assert_eq!(stated_window("prompt is too long", None), None);
        assert_eq!(
            stated_prompt_tokens("request (5031 tokens) exceeds the available context size (3072 tokens)"),
            Some(5031)
        );
        assert_eq!(
            stated_prompt_tokens("However, your messages resulted in 9,000 tokens."),
            Some(9000)
        );
    }

    #[test]
    fn the_root_drops_v1() {
        assert_eq!(root_of("http://127.0.0.1:8080/v1/"), "http://127.0.0.1:8080");
        assert_eq!(root_of("http://h:1/api"), "http://h:1/api");
    }
}
