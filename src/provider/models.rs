//! The models a provider serves, for the app's `/model` picker: OpenAI's
//! and OpenAI-compatible servers' `GET {base}/models` (`data[].id`), and
//! Anthropic's `GET {base}/v1/models` (`data[].id`, with `x-api-key` and
//! `anthropic-version`). One request, a short timeout; the caller shows
//! what it got or the sentence of what went wrong.

use super::Wire;
use serde_json::Value;
use std::time::Duration;

/// How long the listing may take.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// The ids of a `{"data": [{"id": ...}]}` answer, sorted, without repeats.
#[must_use]
pub fn parse_ids(body: &Value) -> Vec<String> {
    let mut ids: Vec<String> = body
        .get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// The models `wire` serves at `base_url` (the provider's own endpoint when
/// `None`), with `api_key` when given.
///
/// # Errors
/// One sentence: the server could not be reached, refused the listing
/// (with its HTTP status), or answered something that is not a model list.
pub async fn list(wire: Wire, base_url: Option<&str>, api_key: Option<&str>) -> Result<Vec<String>, String> {
    super::http::install_crypto();
    let client = reqwest::Client::builder()
        .connect_timeout(LIST_TIMEOUT)
        .build()
        .map_err(|e| format!("cannot set up the HTTP client ({e})"))?;
    let base = base_url.unwrap_or(wire.default_base_url()).trim_end_matches('/');
    let request = match wire {
        Wire::OpenAi => {
            let r = client.get(format!("{base}/models"));
            match api_key {
                Some(key) => r.bearer_auth(key),
                None => r,
            }
        }
        Wire::Anthropic => client
            .get(format!("{base}/v1/models"))
            .header("x-api-key", api_key.unwrap_or_default())
            .header("anthropic-version", "2023-06-01"),
    };
    let response = tokio::time::timeout(LIST_TIMEOUT, request.send())
        .await
        .map_err(|_| {
            format!(
                "the server at {base} did not answer within {}s",
                LIST_TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| format!("cannot reach {base} ({})", super::http::describe_reqwest(&e)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!(
            "the server at {base} refused to list its models (HTTP {})",
            status.as_u16()
        ));
    }
    let body = tokio::time::timeout(LIST_TIMEOUT, response.bytes())
        .await
        .map_err(|_| format!("the server at {base} stopped answering"))?
        .map_err(|e| format!("cannot read the model list ({e})"))?;
    let value: Value = serde_json::from_slice(&body)
        .map_err(|_| format!("the server at {base} did not answer with a model list"))?;
    Ok(parse_ids(&value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_sorted_and_once() {
        let body = serde_json::json!({"object": "list", "data": [{"id": "gpt-4o"}, {"id": "gpt-4o-mini"}, {"id": "gpt-4o"}, {"object": "model"}]});
        assert_eq!(parse_ids(&body), vec!["gpt-4o", "gpt-4o-mini"]);
        assert!(parse_ids(&serde_json::json!({"error": "no"})).is_empty());
    }
}
