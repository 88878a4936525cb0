//! Decodes an OpenAI chat-completions event stream (`chat.completion.chunk`
//! objects in SSE `data:` lines, ended by `data: [DONE]`) into
//! [`StreamEvent`]s. Pure: no I/O.
//!
//! Tolerates what real servers send (FACTS.md): no usage chunk at all, a
//! usage chunk with empty `choices` after the finish reason, `usage: null`
//! on every chunk, tool-call deltas that repeat `id` and `name` on every
//! chunk (passed on only when new), no `[DONE]`, and an `error` object in
//! the stream. Usage and `Done` are emitted last, once the stream ends.

use crate::domain::{FinishReason, ProviderUsage, StreamEvent};
use crate::provider::ProviderError;
use crate::provider::http::{Endpoint, ErrorInfo, classify};
use crate::provider::retry::{Decoder, Progress};
use serde_json::Value;
use std::collections::BTreeMap;

/// Decoder state for one attempt.
#[derive(Debug, Default)]
pub(crate) struct OpenAiDecoder {
    /// A chunk was understood.
    received: bool,
    /// `data: [DONE]` arrived.
    done: bool,
    finish_reason: Option<FinishReason>,
    usage: Option<ProviderUsage>,
    /// Per tool-call index: the id and name already passed on.
    calls: BTreeMap<usize, (Option<String>, Option<String>)>,
}

impl Decoder for OpenAiDecoder {
    fn event(
        &mut self,
        event: &eventsource_stream::Event,
        endpoint: &Endpoint,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| ProviderError::Protocol {
            message: endpoint.redact(&format!("a stream chunk is not valid JSON ({e})")),
        })?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            let info = ErrorInfo::from_value(&chunk).unwrap_or_else(|| ErrorInfo::plain(data.to_owned()));
            return Err(classify(endpoint, None, None, &info));
        }
        self.received = true;
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage_from(usage));
        }
        let choices = chunk
            .get("choices")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for choice in choices
            .iter()
            .filter(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        {
            if let Some(delta) = choice.get("delta") {
                self.delta(delta, out);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(FinishReason::parse(reason));
            }
        }
        Ok(())
    }

    fn is_complete(&self) -> bool {
        self.done
    }

    fn progress(&self) -> Progress {
        match (self.received, self.finish_reason.is_some() || self.done) {
            (false, _) => Progress::Nothing,
            (true, true) => Progress::Finished,
            (true, false) => Progress::Partial,
        }
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some(usage) = self.usage.take() {
            out.push(StreamEvent::Usage(usage));
        }
        out.push(StreamEvent::Done {
            finish_reason: self.finish_reason.take(),
        });
    }
}

impl OpenAiDecoder {
    fn delta(&mut self, delta: &Value, out: &mut Vec<StreamEvent>) {
        let text = |key: &str| delta.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
        // Reasoning text: `reasoning_content` (llama.cpp, DeepSeek, vLLM) or `reasoning` (OpenRouter, Ollama).
        if let Some(reasoning) = text("reasoning_content").or_else(|| text("reasoning")) {
            out.push(StreamEvent::ReasoningDelta {
                text: reasoning.to_owned(),
            });
        }
        if let Some(content) = text("content") {
            out.push(StreamEvent::TextDelta {
                text: content.to_owned(),
            });
        }
        let calls = delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for (position, call) in calls.iter().enumerate() {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|i| usize::try_from(i).ok())
                .unwrap_or(position);
            let function = call.get("function");
            let field = |v: Option<&Value>| {
                v.and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
            };
            let id = field(call.get("id"));
            let name = field(function.and_then(|f| f.get("name")));
            let arguments = field(function.and_then(|f| f.get("arguments"))).unwrap_or_default();
            let (seen_id, seen_name) = self.calls.entry(index).or_default();
            let id = id.filter(|id| seen_id.as_ref() != Some(id));
            let name = name.filter(|name| seen_name.as_ref() != Some(name));
            if id.is_none() && name.is_none() && arguments.is_empty() {
                continue;
            }
            if id.is_some() {
                seen_id.clone_from(&id);
            }
            if name.is_some() {
                seen_name.clone_from(&name);
            }
            out.push(StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            });
        }
    }
}

fn usage_from(usage: &Value) -> ProviderUsage {
    let number = |path: &[&str]| {
        path.iter()
            .try_fold(usage, |v, key| v.get(key))
            .and_then(Value::as_u64)
    };
    ProviderUsage {
        prompt_tokens: number(&["prompt_tokens"]),
        completion_tokens: number(&["completion_tokens"]),
        cache_read_tokens: number(&["prompt_tokens_details", "cached_tokens"]),
        cache_write_tokens: None,
        reasoning_tokens: number(&["completion_tokens_details", "reasoning_tokens"]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> Endpoint {
        Endpoint {
            provider: "openai",
            url: "http://127.0.0.1:1/v1/chat/completions".to_owned(),
            key_env: "OPENAI_API_KEY".to_owned(),
            api_key: None,
        }
    }

    fn feed(decoder: &mut OpenAiDecoder, data: &str) -> Result<Vec<StreamEvent>, ProviderError> {
        let event = eventsource_stream::Event {
            data: data.to_owned(),
            ..Default::default()
        };
        let mut out = Vec::new();
        decoder.event(&event, &endpoint(), &mut out).map(|()| out)
    }

    #[test]
    fn repeated_tool_call_ids_and_names_are_passed_on_once() {
        let mut decoder = OpenAiDecoder::default();
        let chunk = |args: &str| {
            format!(
                r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"call_1","type":"function","function":{{"name":"get_weather","arguments":"{args}"}}}}]}}}}]}}"#
            )
        };
        let first = feed(&mut decoder, &chunk("{")).unwrap();
        let second = feed(&mut decoder, &chunk("}")).unwrap();
        let empty = feed(&mut decoder, &chunk("")).unwrap();
        assert_eq!(
            first,
            vec![StreamEvent::ToolCallDelta {
                index: 0,
                id: Some("call_1".to_owned()),
                name: Some("get_weather".to_owned()),
                arguments: "{".to_owned()
            }]
        );
        assert_eq!(
            second,
            vec![StreamEvent::ToolCallDelta {
                index: 0,
                id: None,
                name: None,
                arguments: "}".to_owned()
            }]
        );
        assert!(empty.is_empty());
    }

    #[test]
    fn usage_with_cached_tokens_comes_before_done() {
        let mut decoder = OpenAiDecoder::default();
        feed(
            &mut decoder,
            r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}],"usage":null}"#,
        )
        .unwrap();
        feed(
            &mut decoder,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        )
        .unwrap();
        feed(
            &mut decoder,
            r#"{"choices":[],"usage":{"prompt_tokens":26,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":5},"completion_tokens_details":{"reasoning_tokens":2}}}"#,
        )
        .unwrap();
        feed(&mut decoder, "[DONE]").unwrap();
        assert!(decoder.is_complete());
        assert_eq!(decoder.progress(), Progress::Finished);
        let mut out = Vec::new();
        decoder.finish(&mut out);
        assert_eq!(
            out,
            vec![
                StreamEvent::Usage(ProviderUsage {
                    prompt_tokens: Some(26),
                    completion_tokens: Some(8),
                    cache_read_tokens: Some(5),
                    cache_write_tokens: None,
                    reasoning_tokens: Some(2),
                }),
                StreamEvent::Done {
                    finish_reason: Some(FinishReason::Stop)
                },
            ]
        );
    }

    #[test]
    fn progress_tells_empty_from_cut_from_finished() {
        let mut decoder = OpenAiDecoder::default();
        assert_eq!(decoder.progress(), Progress::Nothing);
        feed(&mut decoder, "[DONE]").unwrap();
        assert_eq!(decoder.progress(), Progress::Nothing);
        let mut decoder = OpenAiDecoder::default();
        feed(
            &mut decoder,
            r#"{"choices":[{"index":0,"delta":{"content":"par"}}]}"#,
        )
        .unwrap();
        assert_eq!(decoder.progress(), Progress::Partial);
        feed(
            &mut decoder,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
        )
        .unwrap();
        assert_eq!(decoder.progress(), Progress::Finished);
    }

    #[test]
    fn reasoning_and_text_deltas_are_separate() {
        let mut decoder = OpenAiDecoder::default();
        let out = feed(
            &mut decoder,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"think","content":"say"}}]}"#,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                StreamEvent::ReasoningDelta {
                    text: "think".to_owned()
                },
                StreamEvent::TextDelta {
                    text: "say".to_owned()
                }
            ]
        );
    }

    #[test]
    fn errors_inside_the_stream_are_classified() {
        let mut decoder = OpenAiDecoder::default();
        let error = feed(
            &mut decoder,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}"#,
        )
        .unwrap_err();
        assert!(error.is_overflow());
        let error = feed(&mut decoder, "{not json").unwrap_err();
        assert!(matches!(error, ProviderError::Protocol { .. }));
    }
}
