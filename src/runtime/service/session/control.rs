//! Context control on the open session, for the app: the context list,
//! pins and exclusions, `/compress` with its preview and boundary, and edit
//! and resend with its undo. Each change re-reads the session so the chat,
//! the context pane and the list show the next request as it now is.

use super::SessionService;
use crate::domain::MessageId;
use crate::runtime::service::ServiceEvent;
use crate::runtime::{CompressOutcome, CompressRequest, SummarizerArg};
use std::future::Future;

/// `/compress` as the client asks for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompressAsk {
    /// The focus topic.
    pub topic: Option<String>,
    /// Keep exactly the last N exchanges verbatim (`/compress here N`).
    pub keep_last: Option<usize>,
    /// Summarise up to this message, keeping everything after it verbatim.
    pub up_to: Option<MessageId>,
    /// Show the summary first ([`ServiceEvent::CompressPreview`]); it is
    /// stored by [`Command::ApplyPreview`](super::Command::ApplyPreview).
    pub preview: bool,
}

/// A previewed compression waiting for the user: what was asked, so the
/// summary is applied at the same boundary.
#[derive(Clone, Debug)]
pub(super) struct PendingPreview {
    ask: CompressAsk,
    /// The summary as the summariser wrote it (an unchanged one is stored
    /// as not edited).
    summary: String,
    /// The session's active messages when it was made: the summary covers
    /// some of these, and is stored only over the same history.
    history: Vec<crate::domain::MessageId>,
}

impl SessionService {
    /// Sends the context list's rows ([`ServiceEvent::ContextList`]); an
    /// empty list before the session is stored.
    pub(super) fn context_list(&mut self) -> anyhow::Result<()> {
        let Some(session) = self.session.clone() else {
            self.emit(ServiceEvent::ContextList(Vec::new()));
            return Ok(());
        };
        let choice = self.choice()?;
        let mcp = self.mcp.clone();
        let rows = self.runtime.context_rows(&session, &choice, mcp.as_deref())?;
        self.emit(ServiceEvent::ContextList(rows));
        Ok(())
    }

    /// Pins or unpins (`pin`), or excludes or includes, one message; says
    /// what changed and shows the session again.
    ///
    /// # Errors
    /// The runtime's sentence for a refusal (nothing changed).
    pub(super) fn set_flag(&mut self, message: MessageId, pin: bool, on: bool) -> anyhow::Result<()> {
        let Some(session) = self.session.clone() else {
            anyhow::bail!("this session is empty; there is nothing to pin or exclude yet");
        };
        let choice = self.choice()?;
        let msg = message.to_string();
        let outcome = if pin {
            self.runtime.set_pin(&session, &choice, &msg, on)?
        } else {
            self.runtime.set_excluded(&session, &msg, on)?
        };
        self.reread()?;
        self.emit(ServiceEvent::Notice(outcome.sentence()));
        Ok(())
    }

    /// The stored history changed under the service: read it again, show
    /// it, and send the context list's rows for an open list.
    fn reread(&mut self) -> anyhow::Result<()> {
        self.forget_history();
        self.refresh()?;
        self.context_list()
    }

    /// `/compress` with its options: with `preview`, the summary is made and
    /// shown ([`ServiceEvent::CompressPreview`]) and nothing is stored until
    /// [`SessionService::apply_preview`]; without, it is stored at once.
    pub(super) async fn compress_with(&mut self, ask: CompressAsk) -> anyhow::Result<()> {
        self.preview = None;
        self.claim(false)?;
        // The history the preview is made from: taken before the summariser
        // runs, so a change made meanwhile (here or by another strata) is
        // a change.
        let history = self.active_ids()?;
        let outcome = self.run_compression(&ask, None, false).await?;
        if ask.preview && !outcome.noop {
            self.preview = Some(PendingPreview {
                summary: outcome.summary.clone().unwrap_or_default(),
                ask,
                history,
            });
            self.emit(ServiceEvent::CompressPreview(Box::new(outcome)));
            return Ok(());
        }
        self.after_compression(&outcome)
    }

    /// Stores the previewed compression with `summary` (the user's edit, or
    /// the summary as shown), at the boundary the preview had; `force`
    /// applies one that makes the request bigger.
    ///
    /// # Errors
    /// One sentence when no preview waits.
    pub(super) async fn apply_preview(
        &mut self,
        summary: String,
        edited: bool,
        force: bool,
    ) -> anyhow::Result<()> {
        let Some(pending) = self.preview.take() else {
            anyhow::bail!("no compression preview is waiting; run /compress again");
        };
        // A turn since the preview moved what a compression would cover:
        // the shown summary would archive messages it never read.
        if self.active_ids()? != pending.history {
            anyhow::bail!(
                "the conversation changed since the preview, so nothing was stored; run /compress again to see what it would store now"
            );
        }
        let edited = edited && summary.trim() != pending.summary.trim();
        let mut ask = pending.ask;
        ask.preview = false;
        let outcome = self.run_compression(&ask, Some((summary, edited)), force).await?;
        self.after_compression(&outcome)
    }

    /// The ids of the open session's active messages, in order.
    fn active_ids(&self) -> anyhow::Result<Vec<crate::domain::MessageId>> {
        let Some(session) = self.session.as_ref() else {
            return Ok(Vec::new());
        };
        Ok(self
            .runtime
            .store
            .messages(session.id, false)?
            .iter()
            .map(|m| m.id)
            .collect())
    }

    /// Drops a waiting preview (nothing was stored).
    pub(super) fn cancel_preview(&mut self) {
        if self.preview.take().is_some() {
            self.emit(ServiceEvent::Notice(
                "Compression cancelled; nothing changed.".to_owned(),
            ));
        }
    }

    async fn run_compression(
        &mut self,
        ask: &CompressAsk,
        summary: Option<(String, bool)>,
        force: bool,
    ) -> anyhow::Result<CompressOutcome> {
        let Some(session) = self.session.clone() else {
            anyhow::bail!("this session is empty; there is nothing to compress yet");
        };
        let choice = self.choice()?;
        let (summary, summary_edited) = summary.map_or((None, false), |(s, e)| (Some(s), e));
        let request = CompressRequest {
            force,
            trigger: crate::compress::Trigger::Manual,
            topic: ask.topic.clone(),
            summarizer: SummarizerArg::Config,
            dry_run: false,
            choice: &choice,
            provider: self.connected.as_ref().map(|c| c.provider.as_ref()),
            keep_last: ask.keep_last,
            up_to: ask.up_to,
            summary,
            summary_edited,
            preview: ask.preview,
        };
        Ok(self.runtime.compress(&session, &request).await?)
    }

    fn after_compression(&mut self, outcome: &CompressOutcome) -> anyhow::Result<()> {
        self.reread()?;
        let line = if outcome.noop {
            outcome.reason.clone().unwrap_or_else(|| outcome.feedback.clone())
        } else {
            outcome.feedback.clone()
        };
        self.emit(ServiceEvent::Notice(line));
        Ok(())
    }

    /// Edit and resend: archives `message` (a message the user wrote) and
    /// everything after it, then sends `text` as the turn. When the text
    /// could not be sent at all, the edit is undone and the text goes back
    /// to the client ([`ServiceEvent::Unsent`]).
    ///
    /// # Errors
    /// One sentence when the edit is refused (nothing changed) or the
    /// turn failed.
    pub async fn edit_and_send(
        &mut self,
        message: MessageId,
        text: String,
        cancel: impl Future<Output = ()>,
    ) -> anyhow::Result<()> {
        let Some(session) = self.session.clone() else {
            self.emit(ServiceEvent::Unsent(text));
            self.emit(ServiceEvent::TurnDone {
                status: crate::domain::MessageStatus::Error,
            });
            anyhow::bail!("this session is empty; there is no message to edit yet");
        };
        if let Err(e) = self.claim(false) {
            self.emit(ServiceEvent::Unsent(text));
            self.emit(ServiceEvent::TurnDone {
                status: crate::domain::MessageStatus::Error,
            });
            return Err(e);
        }
        let edit = match self.runtime.edit_message(&session, message, &text) {
            Ok(edit) => edit,
            Err(e) => {
                self.emit(ServiceEvent::Unsent(text));
                self.emit(ServiceEvent::TurnDone {
                    status: crate::domain::MessageStatus::Error,
                });
                return Err(e.into());
            }
        };
        self.forget_history();
        self.refresh()?;
        self.emit(ServiceEvent::Edited(Box::new(edit)));
        let stored_before = self.runtime.store.messages(session.id, false)?.len();
        // An edit is not held back for a question: what is withheld stays
        // out, and says so.
        let consent = crate::runtime::AttachConsent {
            allowed: Vec::new(),
            answered: true,
        };
        let result = self.send_attaching(text, consent, cancel).await;
        let stored_after = self.runtime.store.messages(session.id, false)?.len();
        if result.is_err() && stored_after == stored_before {
            // Nothing was sent: the history goes back to before the edit.
            match self.runtime.undo_edit_message(&session) {
                Ok(_) => self.emit(ServiceEvent::Notice(
                    "the edit was undone, since the new text was not sent".to_owned(),
                )),
                Err(e) => {
                    let line = self.runtime.client().edit_not_undone(&e.to_string());
                    self.emit(ServiceEvent::Error(line));
                }
            }
            self.reread()?;
        }
        result
    }

    /// The items of a picker: the models the connected provider serves
    /// (the current one first; the GGUF files of the models directory for
    /// the embedded model), or the workspace's skills. A provider that
    /// cannot list its models still gives the current one, and says why.
    pub(super) async fn list_choices(
        &mut self,
        kind: crate::runtime::service::ChoiceKind,
    ) -> anyhow::Result<()> {
        use crate::runtime::service::{Choice, ChoiceKind};
        let items = match kind {
            ChoiceKind::Skill => {
                let root = match &self.session {
                    Some(s) => std::path::PathBuf::from(&s.workspace),
                    None => crate::workspace::workspace_root(&self.cwd),
                };
                self.runtime
                    .skills(&root)
                    .into_iter()
                    .map(|s| Choice {
                        name: s.name,
                        detail: s.description.unwrap_or_default(),
                    })
                    .collect()
            }
            ChoiceKind::Model => {
                let choice = self.choice()?;
                let mut names = self.model_names(&choice).await;
                names.retain(|n| *n != choice.model);
                std::iter::once(Choice {
                    name: choice.model.clone(),
                    detail: "current".to_owned(),
                })
                .chain(names.into_iter().map(|name| Choice {
                    name,
                    detail: String::new(),
                }))
                .collect()
            }
        };
        self.emit(ServiceEvent::Choices { kind, items });
        Ok(())
    }

    /// The models `choice`'s provider serves, or the GGUF files the
    /// embedded model could run; an empty list (with the reason said) when
    /// the provider cannot list them.
    async fn model_names(&self, choice: &crate::config::ModelChoice) -> Vec<String> {
        use crate::config::ProviderKind;
        let wire = match choice.provider {
            ProviderKind::Local => {
                let dir = self.runtime.paths.models_dir();
                let mut files: Vec<String> = std::fs::read_dir(&dir)
                    .into_iter()
                    .flatten()
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("gguf")))
                    .map(|p| p.display().to_string())
                    .collect();
                files.sort();
                return files;
            }
            ProviderKind::OpenAi => crate::provider::Wire::OpenAi,
            ProviderKind::Anthropic => crate::provider::Wire::Anthropic,
        };
        let key = choice.api_key_env.as_deref().and_then(|k| (self.env)(k));
        match crate::provider::models::list(wire, choice.base_url.as_deref(), key.as_deref()).await {
            Ok(names) => names,
            Err(why) => {
                self.emit(ServiceEvent::Notice(format!(
                    "The model list is not available: {why}; type /model NAME instead."
                )));
                Vec::new()
            }
        }
    }

    /// `/undo-resend`: undoes the latest edit and resend.
    ///
    /// # Errors
    /// The runtime's sentence when there is none to undo.
    pub(super) fn undo_edit_message(&mut self) -> anyhow::Result<()> {
        let Some(session) = self.session.clone() else {
            anyhow::bail!("this session is empty; there is no edit to undo");
        };
        let undone = self.runtime.undo_edit_message(&session)?;
        self.reread()?;
        self.emit(ServiceEvent::Notice(format!(
            "Undid the edit: {} message(s) restored, {} archived.",
            undone.restored, undone.archived
        )));
        Ok(())
    }
}
