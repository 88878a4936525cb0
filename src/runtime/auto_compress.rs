//! Automatic compression around a chat turn (DESIGN §7 "Triggers"):
//! preflight before the request (up to three passes), after a response on
//! the provider's `prompt_tokens`, and once after an overflow error. The
//! engine's state (strikes, lockout, cooldown, last reading) is loaded from
//! and saved to the store, so it holds across processes.

use super::compress::{CompressRequest, SummarizerArg};
use super::{ChatOutput, Runtime, RuntimeError};
use crate::compress::{CompressionEngine, Decision, DefaultEngine, Trigger};
use crate::config::{ModelChoice, ProviderKind};
use crate::conversation::Conversation;
use crate::provider::Provider;

/// The choice a conversation was opened with, as far as compression needs
/// it: provider and model (for the rebuilt prompt), window and reserve.
pub(super) fn conversation_choice(conversation: &Conversation) -> ModelChoice {
    let session = conversation.session();
    ModelChoice {
        provider: ProviderKind::parse(&session.provider).unwrap_or(ProviderKind::OpenAi),
        model: session.model.clone(),
        context_window: conversation.window(),
        max_tokens: conversation.max_tokens(),
        api_key_env: None,
        base_url: None,
    }
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

impl Runtime {
    /// The session's engine for automatic compression in `conversation`.
    ///
    /// # Errors
    /// [`RuntimeError::Store`].
    pub(super) fn turn_engine(&self, conversation: &Conversation) -> Result<DefaultEngine, RuntimeError> {
        let choice = conversation_choice(conversation);
        self.compression_engine(conversation.session(), &choice, SummarizerArg::Config)
    }

    /// Preflight, right before the first request of a turn (the user's
    /// message is already stored): when the request's estimate reaches the
    /// threshold, compress up to three passes, stopping when a pass makes no
    /// progress. Returns whether the history changed (the conversation is
    /// reloaded; the request must be prepared again).
    ///
    /// # Errors
    /// [`RuntimeError::Store`]; summariser failures are shown, not returned.
    pub(super) async fn preflight(
        &mut self,
        conversation: &mut Conversation,
        engine: &mut DefaultEngine,
        provider: &dyn Provider,
        out: &mut dyn FnMut(ChatOutput<'_>),
    ) -> Result<bool, RuntimeError> {
        let choice = conversation_choice(conversation);
        let session = conversation.session().clone();
        let snapshot = self.snapshot(&session, &choice)?;
        let estimate = snapshot.input_tokens();
        // When the fixed part alone does not fit, compressing the history
        // cannot help: the pipeline reports the window as too small.
        if snapshot.fixed_tokens() + choice.max_tokens >= choice.context_window {
            return Ok(false);
        }
        if engine.should_compress(Trigger::Preflight, estimate, now_ms()) != Decision::Compress {
            return Ok(false);
        }
        let mut changed = false;
        while let Some(more) = self
            .compress_once(conversation, engine, provider, Trigger::Preflight, out)
            .await?
        {
            changed = true;
            if !more {
                break;
            }
        }
        Ok(changed)
    }

    /// After a response: record the reading, and compress when the
    /// provider's `prompt_tokens` reached the threshold.
    ///
    /// # Errors
    /// [`RuntimeError::Store`].
    pub(super) async fn after_response(
        &mut self,
        conversation: &mut Conversation,
        engine: &mut DefaultEngine,
        provider: &dyn Provider,
        prompt_tokens: u64,
        estimate: u64,
        out: &mut dyn FnMut(ChatOutput<'_>),
    ) -> Result<(), RuntimeError> {
        engine.on_usage(prompt_tokens, estimate);
        if engine.should_compress(Trigger::AfterResponse, prompt_tokens, now_ms()) == Decision::Compress {
            self.compress_once(conversation, engine, provider, Trigger::AfterResponse, out)
                .await?;
        }
        Ok(())
    }

    /// After an overflow error: whether one compression ran and changed the
    /// history, so the request may be sent once more.
    ///
    /// # Errors
    /// [`RuntimeError::Store`].
    pub(super) async fn overflow_retry(
        &mut self,
        conversation: &mut Conversation,
        engine: &mut DefaultEngine,
        provider: &dyn Provider,
        out: &mut dyn FnMut(ChatOutput<'_>),
    ) -> Result<bool, RuntimeError> {
        if engine.should_compress(Trigger::Overflow, 0, now_ms()) != Decision::Compress {
            return Ok(false);
        }
        Ok(self
            .compress_once(conversation, engine, provider, Trigger::Overflow, out)
            .await?
            .is_some())
    }

    /// One automatic compression pass. `None` when nothing changed (a
    /// no-op or an aborted summary, both shown); `Some(more)` after a stored
    /// compaction, `more` saying whether another preflight pass should run.
    async fn compress_once(
        &mut self,
        conversation: &mut Conversation,
        engine: &mut DefaultEngine,
        provider: &dyn Provider,
        trigger: Trigger,
        out: &mut dyn FnMut(ChatOutput<'_>),
    ) -> Result<Option<bool>, RuntimeError> {
        let choice = conversation_choice(conversation);
        let session = conversation.session().clone();
        out(ChatOutput::Notice("Compressing the conversation…"));
        let request = CompressRequest {
            trigger,
            topic: None,
            summarizer: SummarizerArg::Config,
            dry_run: false,
            choice: &choice,
            provider: Some(provider),
        };
        let result = self.compress_planned(&session, engine, &request).await;
        self.save_compression_state(&session, engine)?;
        let (outcome, plan) = match result {
            Ok(done) => done,
            Err(RuntimeError::Compress(why)) => {
                out(ChatOutput::Notice(&why));
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        for w in &outcome.warnings {
            out(ChatOutput::Notice(w));
        }
        out(ChatOutput::Compressed(&outcome));
        let Some(plan) = plan else {
            return Ok(None);
        };
        self.reload_history(conversation)?;
        Ok(Some(
            trigger == Trigger::Preflight && engine.continue_preflight(&plan),
        ))
    }

    /// Loads the session's current prompt and active messages into the
    /// conversation (a reply still streaming is left out: it is the turn's).
    fn reload_history(&mut self, conversation: &mut Conversation) -> Result<(), RuntimeError> {
        let id = conversation.session().id;
        let prompt = self.store.current_prompt(id)?.ok_or(RuntimeError::NoPrompt(id))?;
        let messages = super::session::settled(self.store.messages(id, false)?);
        conversation.replace_history(prompt, messages);
        Ok(())
    }
}
