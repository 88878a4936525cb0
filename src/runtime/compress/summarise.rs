//! The model call of a compression: the summary prompt sent to the
//! session's provider, and its failures mapped to the engine's policy.

use crate::compress::{SummaryFailure, SummaryOutcome};
use crate::domain::{ChatRequest, RequestMessage, RequestSystem, Role, StreamEvent};
use crate::provider::{Provider, ProviderError};
use futures::StreamExt;

/// Asks `provider` for the summary (one user message holding the whole
/// summary prompt, at most twice the target as output) and maps failures to
/// the engine's policy: authentication and network failures abort, the rest
/// fall back.
pub(super) async fn summarise(
    provider: Option<&dyn Provider>,
    model: &str,
    prompt: &str,
    target_tokens: u32,
) -> SummaryOutcome {
    let Some(provider) = provider else {
        return SummaryOutcome::Failed(SummaryFailure::NoModel(format!(
            "no connection to {model} is open"
        )));
    };
    let request = ChatRequest {
        model: model.to_owned(),
        system: RequestSystem {
            text: String::new(),
            boundary_offset: None,
        },
        messages: vec![RequestMessage {
            role: Role::User,
            content: prompt.to_owned(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }],
        max_tokens: u64::from(target_tokens) * 2,
        tools: Vec::new(),
        temperature: None,
    };
    let mut stream = provider.stream(request);
    let mut text = String::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(StreamEvent::TextDelta { text: t }) => text.push_str(&t),
            Ok(_) => {}
            Err(e) => return SummaryOutcome::Failed(failure_of(e)),
        }
    }
    SummaryOutcome::Summary(text)
}

fn failure_of(e: ProviderError) -> SummaryFailure {
    let why = e.to_string();
    match e {
        ProviderError::Auth { .. } | ProviderError::NoKey { .. } => SummaryFailure::Auth(why),
        ProviderError::Network { .. } | ProviderError::Broken { .. } => SummaryFailure::Network(why),
        ProviderError::EmptyResponse | ProviderError::Protocol { .. } => SummaryFailure::Malformed(why),
        ProviderError::Local { .. } => SummaryFailure::NoModel(why),
        _ => SummaryFailure::Other(why),
    }
}
