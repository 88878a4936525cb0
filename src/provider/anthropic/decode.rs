//! Decodes an Anthropic Messages event stream into [`StreamEvent`]s. Pure:
//! no I/O.
//!
//! Events (Anthropic's streaming documentation): `message_start` (input,
//! cache-creation and cache-read tokens), `content_block_start` /
//! `content_block_delta` (`text_delta`, `input_json_delta`,
//! `thinking_delta`) / `content_block_stop`, `message_delta` (output tokens,
//! stop reason), `message_stop`, `ping`, `error`. Unknown events and delta
//! types are ignored. Usage is emitted once, just before `Done`, with
//! `prompt_tokens` = input + cache read + cache write.

use crate::domain::{FinishReason, ProviderUsage, StreamEvent};
use crate::provider::ProviderError;
use crate::provider::http::{Endpoint, ErrorInfo, classify};
use crate::provider::retry::{Decoder, Progress};
use serde_json::Value;
use std::collections::BTreeMap;

/// Decoder state for one attempt.
#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder {
    /// `message_start` arrived.
    started: bool,
    /// `message_stop` arrived.
    stopped: bool,
    stop_reason: Option<FinishReason>,
    input_tokens: Option<u64>,
    cache_read_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
    output_tokens: Option<u64>,
    /// Content block index → tool call index (position among tool calls).
    tool_blocks: BTreeMap<u64, usize>,
}

impl Decoder for AnthropicDecoder {
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
        let value: Value = serde_json::from_str(data).map_err(|e| ProviderError::Protocol {
            message: endpoint.redact(&format!("a stream event is not valid JSON ({e})")),
        })?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                self.started = true;
                if let Some(usage) = value.get("message").and_then(|m| m.get("usage")) {
                    self.read_usage(usage);
                }
            }
            "content_block_start" => self.block_start(&value, out),
            "content_block_delta" => self.block_delta(&value, out),
            "message_delta" => {
                if let Some(reason) = value
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(FinishReason::parse(reason));
                }
                if let Some(usage) = value.get("usage") {
                    self.read_usage(usage);
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let info = ErrorInfo::from_value(&value).unwrap_or_else(|| ErrorInfo::plain(data.to_owned()));
                return Err(classify(endpoint, None, None, &info));
            }
            _ => {}
        }
        Ok(())
    }

    fn is_complete(&self) -> bool {
        self.stopped
    }

    fn progress(&self) -> Progress {
        if self.stopped || self.stop_reason.is_some() {
            Progress::Finished
        } else if self.started {
            Progress::Partial
        } else {
            Progress::Nothing
        }
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) {
        let known = [
            self.input_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
            self.output_tokens,
        ];
        if known.iter().any(Option::is_some) {
            let prompt_tokens = self.input_tokens.map(|input| {
                input + self.cache_read_tokens.unwrap_or(0) + self.cache_write_tokens.unwrap_or(0)
            });
            out.push(StreamEvent::Usage(ProviderUsage {
                prompt_tokens,
                completion_tokens: self.output_tokens,
                cache_read_tokens: self.cache_read_tokens,
                cache_write_tokens: self.cache_write_tokens,
                reasoning_tokens: None,
            }));
        }
        out.push(StreamEvent::Done {
            finish_reason: self.stop_reason.take(),
        });
    }
}

impl AnthropicDecoder {
    fn read_usage(&mut self, usage: &Value) {
        let number = |key: &str| usage.get(key).and_then(Value::as_u64);
        self.input_tokens = number("input_tokens").or(self.input_tokens);
        self.cache_read_tokens = number("cache_read_input_tokens").or(self.cache_read_tokens);
        self.cache_write_tokens = number("cache_creation_input_tokens").or(self.cache_write_tokens);
        self.output_tokens = number("output_tokens").or(self.output_tokens);
    }

    fn block_start(&mut self, value: &Value, out: &mut Vec<StreamEvent>) {
        let Some(block) = value.get("content_block") else {
            return;
        };
        let text = |key: &str| {
            block
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = text("text") {
                    out.push(StreamEvent::TextDelta { text });
                }
            }
            Some("thinking") => {
                if let Some(text) = text("thinking") {
                    out.push(StreamEvent::ReasoningDelta { text });
                }
            }
            Some("tool_use") => {
                let index = self.tool_blocks.len();
                let block_index = value.get("index").and_then(Value::as_u64).unwrap_or(u64::MAX);
                self.tool_blocks.insert(block_index, index);
                // Streaming sends `input: {}` and the JSON in deltas; a filled-in input is sent as is.
                let arguments = block
                    .get("input")
                    .filter(|input| input.as_object().is_some_and(|o| !o.is_empty()))
                    .map(Value::to_string)
                    .unwrap_or_default();
                out.push(StreamEvent::ToolCallDelta {
                    index,
                    id: text("id"),
                    name: text("name"),
                    arguments,
                });
            }
            _ => {}
        }
    }

    fn block_delta(&mut self, value: &Value, out: &mut Vec<StreamEvent>) {
        let Some(delta) = value.get("delta") else {
            return;
        };
        let text = |key: &str| {
            delta
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                if let Some(text) = text("text") {
                    out.push(StreamEvent::TextDelta { text });
                }
            }
            Some("thinking_delta") => {
                if let Some(text) = text("thinking") {
                    out.push(StreamEvent::ReasoningDelta { text });
                }
            }
            Some("input_json_delta") => {
                let block_index = value.get("index").and_then(Value::as_u64).unwrap_or(u64::MAX);
                if let (Some(&index), Some(arguments)) =
                    (self.tool_blocks.get(&block_index), text("partial_json"))
                {
                    out.push(StreamEvent::ToolCallDelta {
                        index,
                        id: None,
                        name: None,
                        arguments,
                    });
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> Endpoint {
        Endpoint {
            provider: "anthropic",
            url: "http://127.0.0.1:1/v1/messages".to_owned(),
            key_env: "ANTHROPIC_API_KEY".to_owned(),
            api_key: None,
        }
    }

    fn feed(decoder: &mut AnthropicDecoder, data: &str) -> Result<Vec<StreamEvent>, ProviderError> {
        let event = eventsource_stream::Event {
            data: data.to_owned(),
            ..Default::default()
        };
        let mut out = Vec::new();
        decoder.event(&event, &endpoint(), &mut out).map(|()| out)
    }

    #[test]
    fn usage_adds_cache_reads_and_writes_to_the_prompt() {
        let mut d = AnthropicDecoder::default();
        feed(&mut d, r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":1}}}"#).unwrap();
        assert_eq!(d.progress(), Progress::Partial);
        feed(
            &mut d,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}"#,
        )
        .unwrap();
        feed(&mut d, r#"{"type":"message_stop"}"#).unwrap();
        assert!(d.is_complete());
        let mut out = Vec::new();
        d.finish(&mut out);
        assert_eq!(
            out,
            vec![
                StreamEvent::Usage(ProviderUsage {
                    prompt_tokens: Some(3210),
                    completion_tokens: Some(42),
                    cache_read_tokens: Some(3000),
                    cache_write_tokens: Some(200),
                    reasoning_tokens: None,
                }),
                StreamEvent::Done {
                    finish_reason: Some(FinishReason::Stop)
                },
            ]
        );
    }

    #[test]
    fn tool_use_blocks_become_indexed_tool_call_deltas() {
        let mut d = AnthropicDecoder::default();
        feed(
            &mut d,
            r#"{"type":"message_start","message":{"usage":{"input_tokens":1}}}"#,
        )
        .unwrap();
        feed(
            &mut d,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        )
        .unwrap();
        let start = feed(&mut d, r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}"#).unwrap();
        let delta = feed(&mut d, r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"p\":"}}"#).unwrap();
        assert_eq!(
            start,
            vec![StreamEvent::ToolCallDelta {
                index: 0,
                id: Some("toolu_1".to_owned()),
                name: Some("read".to_owned()),
                arguments: String::new()
            }]
        );
        assert_eq!(
            delta,
            vec![StreamEvent::ToolCallDelta {
                index: 0,
                id: None,
                name: None,
                arguments: "{\"p\":".to_owned()
            }]
        );
    }

    #[test]
    fn thinking_and_text_deltas() {
        let mut d = AnthropicDecoder::default();
        let out = feed(
            &mut d,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![StreamEvent::ReasoningDelta {
                text: "hm".to_owned()
            }]
        );
        let out = feed(
            &mut d,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}"#,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![StreamEvent::TextDelta {
                text: "Hi".to_owned()
            }]
        );
        assert!(feed(&mut d, r#"{"type":"ping"}"#).unwrap().is_empty());
        assert!(feed(&mut d, r#"{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"x"}}"#).unwrap().is_empty());
    }

    #[test]
    fn error_events_are_classified() {
        let mut d = AnthropicDecoder::default();
        let error = feed(
            &mut d,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .unwrap_err();
        assert!(matches!(error, ProviderError::Overloaded { .. }));
        let error = feed(&mut d, r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 1 > 0"}}"#).unwrap_err();
        assert!(error.is_overflow());
    }
}
