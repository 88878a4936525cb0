//! Executing the core's [`Effect::Compress`](crate::conversation::Effect)
//! inside a turn (DESIGN §7 "Triggers"): the conversation's own prompt,
//! counter and counted history are compressed with its engine (nothing is
//! re-read from the store), the compaction is stored in one transaction, and
//! the new active history goes back to the core with the result. Whether to
//! compress, how many passes and what happens next are the core's decisions.

use super::chat::TurnHost;
use super::compress::{CompressRequest, SummarizerArg};
use super::service::ServiceEvent;
use super::{Runtime, RuntimeError};
use crate::compress::Trigger;
use crate::config::ModelChoice;
use crate::conversation::{Compacted, Conversation};
use crate::provider::Provider;

/// The choice a conversation was opened with, as far as compression needs
/// it: provider and model (for the rebuilt prompt), window and reserve.
pub(super) fn conversation_choice(conversation: &Conversation) -> ModelChoice {
    let session = conversation.session();
    ModelChoice {
        provider: session.provider,
        model: session.model.clone(),
        context_window: conversation.window(),
        window_source: crate::config::WindowSource::Catalog,
        max_tokens: conversation.max_tokens(),
        api_key_env: None,
        base_url: None,
    }
}

impl Runtime {
    /// One compression of `conversation` for `trigger`, with its engine and
    /// the session's summariser: `Some` with the stored compaction and the
    /// new history, `None` when nothing changed (a no-op, or a summary that
    /// aborted; both shown through `host`).
    ///
    /// # Errors
    /// [`RuntimeError::Store`].
    pub(super) async fn compress_in_turn(
        &mut self,
        conversation: &mut Conversation,
        provider: &dyn Provider,
        trigger: Trigger,
        host: &mut dyn TurnHost,
    ) -> Result<Option<Box<Compacted>>, RuntimeError> {
        let choice = conversation_choice(conversation);
        let session = conversation.session().clone();
        host.emit(ServiceEvent::Notice("Compressing the conversation…".to_owned()));
        let history_tokens = conversation.history_tokens();
        let mut snapshot = self.snapshot_of(
            conversation.prompt().clone(),
            conversation.counter().clone(),
            conversation.messages().to_vec(),
            history_tokens,
            &choice,
        );
        if let Ok(prepared) = conversation.report() {
            snapshot.sent_with(&prepared);
        }
        let request = CompressRequest {
            force: false,
            trigger,
            topic: None,
            summarizer: SummarizerArg::Config,
            dry_run: false,
            choice: &choice,
            provider: Some(provider),
            keep_last: None,
            up_to: None,
            summary: None,
            summary_edited: false,
            preview: false,
        };
        let result = self
            .compress_planned(&session, conversation.engine_mut(), &snapshot, &request)
            .await;
        let (outcome, stored) = match result {
            Ok(done) => done,
            Err(RuntimeError::Compress(why)) => {
                host.emit(ServiceEvent::Notice(why));
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        for w in &outcome.warnings {
            host.emit(ServiceEvent::Notice(w.clone()));
        }
        host.emit(ServiceEvent::Compressed(Box::new(outcome)));
        Ok(stored.map(|stored| {
            host.compacted(&stored.compaction, &stored.plan);
            Box::new(Compacted {
                plan: stored.plan,
                prompt: stored.prompt,
            })
        }))
    }
}
