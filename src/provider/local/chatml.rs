//! ChatML rendering of a [`ChatRequest`] for the embedded model.
//!
//! Owns the prompt layout the model was trained on:
//! `<|im_start|>{role}\n{content}<|im_end|>\n` per turn, then
//! `<|im_start|>assistant\n` to open the reply (SmolLM2-Instruct's template).
//!
//! Invariant: the turn markers are kept apart from message text
//! ([`Piece::Marker`] vs [`Piece::Text`]), so text that happens to contain
//! `<|im_end|>` is tokenised as ordinary text and cannot close a turn.
//! Rendering is deterministic: the same request gives the same pieces, which
//! is what lets the engine re-use the KV cache for a shared prefix.
//!
//! The model has no native tool calling: tool calls of an assistant message
//! are written out as text lines after its content, and a `tool` message
//! becomes a `user` turn that says which call it answers. Tool schemas in the
//! request are not rendered. Pure; called by the engine thread and by tests.

use crate::domain::{ChatRequest, RequestMessage, Role};

/// A ChatML special token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// `<|im_start|>`: opens a turn.
    ImStart,
    /// `<|im_end|>`: closes a turn (the model's end-of-turn token).
    ImEnd,
}

impl Marker {
    /// The token's text, as the tokenizer knows it.
    #[must_use]
    pub fn text(self) -> &'static str {
        match self {
            Self::ImStart => "<|im_start|>",
            Self::ImEnd => "<|im_end|>",
        }
    }
}

/// One piece of a rendered prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// A special token, tokenised as itself.
    Marker(Marker),
    /// Ordinary text, tokenised with special-token parsing off.
    Text(String),
}

/// A rendered prompt: markers and text in order, adjacent text merged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChatmlPrompt {
    pieces: Vec<Piece>,
}

impl ChatmlPrompt {
    /// The pieces in order.
    #[must_use]
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    /// The prompt as one string (markers written as their text).
    #[must_use]
    pub fn to_text(&self) -> String {
        self.pieces
            .iter()
            .map(|piece| match piece {
                Piece::Marker(marker) => marker.text(),
                Piece::Text(text) => text.as_str(),
            })
            .collect()
    }

    fn marker(&mut self, marker: Marker) {
        self.pieces.push(Piece::Marker(marker));
    }

    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(Piece::Text(last)) = self.pieces.last_mut() {
            last.push_str(text);
        } else {
            self.pieces.push(Piece::Text(text.to_owned()));
        }
    }

    fn turn(&mut self, role: &str, content: &str) {
        self.marker(Marker::ImStart);
        self.text(role);
        self.text("\n");
        self.text(content);
        self.marker(Marker::ImEnd);
        self.text("\n");
    }
}

/// Renders `request` as ChatML, ending with an open assistant turn.
///
/// The system turn carries `request.system.text` (omitted when empty);
/// messages follow in order. `max_tokens`, `temperature` and `tools` are not
/// part of the prompt.
#[must_use]
pub fn render(request: &ChatRequest) -> ChatmlPrompt {
    let mut prompt = ChatmlPrompt::default();
    if !request.system.text.is_empty() {
        prompt.turn("system", &request.system.text);
    }
    for message in &request.messages {
        let (role, content) = turn_of(message);
        prompt.turn(role, &content);
    }
    prompt.marker(Marker::ImStart);
    prompt.text("assistant\n");
    prompt
}

/// The ChatML role and content of one message.
fn turn_of(message: &RequestMessage) -> (&'static str, String) {
    match message.role {
        Role::System => ("system", message.content.clone()),
        Role::User => ("user", message.content.clone()),
        Role::Assistant => {
            let mut content = message.content.clone();
            for call in &message.tool_calls {
                if !content.is_empty() {
                    content.push('\n');
                }
                content.push_str(&format!(
                    "[tool call {}: {}({})]",
                    call.id, call.name, call.arguments
                ));
            }
            ("assistant", content)
        }
        Role::Tool => {
            let id = message.tool_call_id.as_deref().unwrap_or("?");
            ("user", format!("[result of tool call {id}]\n{}", message.content))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{RequestSystem, ToolCall};

    fn message(role: Role, content: &str) -> RequestMessage {
        RequestMessage {
            role,
            content: content.to_owned(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    fn request(system: &str, messages: Vec<RequestMessage>) -> ChatRequest {
        ChatRequest {
            model: "smollm2".to_owned(),
            system: RequestSystem {
                text: system.to_owned(),
                boundary_offset: None,
            },
            messages,
            max_tokens: 16,
            tools: Vec::new(),
            temperature: None,
        }
    }

    #[test]
    fn renders_system_user_and_open_assistant_turn() {
        let prompt = render(&request("Be brief.", vec![message(Role::User, "Hi")]));
        assert_eq!(
            prompt.to_text(),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn empty_system_prompt_is_left_out() {
        let prompt = render(&request("", vec![message(Role::User, "Hi")]));
        assert_eq!(
            prompt.to_text(),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn markers_are_separate_pieces_and_text_is_merged() {
        let prompt = render(&request("S", vec![message(Role::User, "U")]));
        assert_eq!(
            prompt.pieces(),
            &[
                Piece::Marker(Marker::ImStart),
                Piece::Text("system\nS".to_owned()),
                Piece::Marker(Marker::ImEnd),
                Piece::Text("\n".to_owned()),
                Piece::Marker(Marker::ImStart),
                Piece::Text("user\nU".to_owned()),
                Piece::Marker(Marker::ImEnd),
                Piece::Text("\n".to_owned()),
                Piece::Marker(Marker::ImStart),
                Piece::Text("assistant\n".to_owned()),
            ]
        );
    }

    #[test]
    fn marker_text_inside_a_message_stays_text() {
        let prompt = render(&request("", vec![message(Role::User, "a<|im_end|>b")]));
        let markers = prompt
            .pieces()
            .iter()
            .filter(|piece| matches!(piece, Piece::Marker(_)))
            .count();
        assert_eq!(markers, 3);
        assert!(
            prompt
                .pieces()
                .contains(&Piece::Text("user\na<|im_end|>b".to_owned()))
        );
    }

    #[test]
    fn tool_calls_and_results_are_rendered_as_text() {
        let mut call = message(Role::Assistant, "Let me look.");
        call.tool_calls.push(ToolCall {
            id: "call_1".to_owned(),
            name: "read_file".to_owned(),
            arguments: r#"{"path":"a.rs"}"#.to_owned(),
        });
        let mut result = message(Role::Tool, "fn main() {}");
        result.tool_call_id = Some("call_1".to_owned());
        let text = render(&request("", vec![call, result])).to_text();
        assert_eq!(
            text,
            "<|im_start|>assistant\nLet me look.\n[tool call call_1: read_file({\"path\":\"a.rs\"})]<|im_end|>\n\
             <|im_start|>user\n[result of tool call call_1]\nfn main() {}<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn a_follow_up_turn_extends_the_previous_prompt() {
        let first = render(&request("S", vec![message(Role::User, "Q1")]));
        let second = render(&request(
            "S",
            vec![
                message(Role::User, "Q1"),
                message(Role::Assistant, "A1"),
                message(Role::User, "Q2"),
            ],
        ));
        assert!(second.to_text().starts_with(&first.to_text()));
    }
}
