//! Helpers to drain a provider stream and read what it said.
#![allow(dead_code)]

use futures::StreamExt;
use std::time::Duration;
use strata::domain::{FinishReason, ProviderUsage, StreamEvent};
use strata::provider::{EventStream, ProviderError, RetryPolicy, Timeouts};

/// Retries as in production but with millisecond waits.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        base: Duration::from_millis(1),
        cap: Duration::from_millis(4),
        max_retry_after: Duration::from_secs(5),
    }
}

pub fn timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(5),
        idle: Duration::from_secs(10),
    }
}

/// Every event until the end, and the error that ended the stream, if any.
/// Panics if anything follows an error or `Done`.
pub async fn collect(mut stream: EventStream) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            // The request's progress (connected, retrying) is checked by
            // the tests about it; here only the reply counts.
            Ok(event) if event.is_progress() => {}
            Ok(event) => {
                assert!(
                    !matches!(events.last(), Some(StreamEvent::Done { .. })),
                    "event after Done: {event:?}"
                );
                events.push(event);
            }
            Err(error) => {
                assert!(stream.next().await.is_none(), "stream goes on after an error");
                return (events, Some(error));
            }
        }
    }
    (events, None)
}

pub fn text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

pub fn usages(events: &[StreamEvent]) -> Vec<ProviderUsage> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Usage(u) => Some(*u),
            _ => None,
        })
        .collect()
}

/// The finish reason of the last event, which must be `Done`.
pub fn finish_reason(events: &[StreamEvent]) -> Option<FinishReason> {
    match events.last() {
        Some(StreamEvent::Done { finish_reason }) => finish_reason.clone(),
        other => panic!("stream did not end with Done: {other:?}"),
    }
}

/// A tool call put together from its deltas.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// Assembles tool calls the way a consumer must: `id`/`name` are set,
/// `arguments` appended.
pub fn tool_calls(events: &[StreamEvent]) -> Vec<Call> {
    let mut calls: Vec<Call> = Vec::new();
    for event in events {
        if let StreamEvent::ToolCallDelta {
            index,
            id,
            name,
            arguments,
        } = event
        {
            if calls.len() <= *index {
                calls.resize(index + 1, Call::default());
            }
            let call = &mut calls[*index];
            if let Some(id) = id {
                call.id.clone_from(id);
            }
            if let Some(name) = name {
                call.name.clone_from(name);
            }
            call.arguments.push_str(arguments);
        }
    }
    calls
}
