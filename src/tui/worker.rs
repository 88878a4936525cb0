//! The driver: the app's client of its open session. It maps the app's
//! [`Effect`]s onto [`Op`]s of the session's [`SessionHandle`], which runs
//! the service off the UI task, and the service's events onto
//! [`AppEvent`]s on an unbounded channel (sending never waits).

use super::event::{AppEvent, Effect};
use crate::runtime::input_history::HistoryEvent;
use crate::runtime::service::{Command, Launch, ServiceEvent, Sink};
use crate::runtime::{AttachConsent, Op, SessionHandle};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The app's handle on its session; dropping it cancels the turn in
/// progress and stops the session's threads once their current job ends.
pub struct Driver {
    handle: SessionHandle,
}

impl Driver {
    /// Opens the session (see [`SessionHandle::spawn`]); its events
    /// arrive on `events`.
    #[must_use]
    pub fn start(launch: Launch, events: mpsc::UnboundedSender<AppEvent>) -> Self {
        let service_events = events.clone();
        let sink: Sink = Arc::new(move |e: ServiceEvent| {
            let _ = service_events.send(AppEvent::Service(e));
        });
        let handle = SessionHandle::spawn(launch, sink, move |e| {
            let _ = events.send(match e {
                HistoryEvent::Loaded(rows) => AppEvent::History(rows),
                HistoryEvent::Failed(text) => AppEvent::Failed(text),
            });
        });
        Self { handle }
    }

    /// Runs one effect; returns false for [`Effect::Quit`].
    pub fn run(&self, effect: Effect) -> bool {
        let command = match effect {
            Effect::Quit => {
                self.handle.cancel();
                return false;
            }
            Effect::Cancel => {
                self.handle.cancel();
                return true;
            }
            Effect::Approve(answer) => {
                self.handle.approve(answer);
                return true;
            }
            // Run by the terminal loop itself (it owns the screen).
            Effect::EditInEditor(_) => return true,
            Effect::SkipServers => return self.op(Op::SkipServers),
            Effect::ListSessions { ticket, search } => return self.op(Op::ListSessions { ticket, search }),
            Effect::CountDraft { ticket, text } => return self.op(Op::CountDraft { ticket, text }),
            Effect::RememberInput(text) => return self.op(Op::RememberInput(text)),
            Effect::Send(text) => {
                return self.op(Op::Send {
                    text,
                    consent: AttachConsent::default(),
                });
            }
            Effect::SendAttaching { text, allowed } => {
                let consent = AttachConsent {
                    allowed,
                    answered: true,
                };
                return self.op(Op::Send { text, consent });
            }
            Effect::EditResend { message, text } => return self.op(Op::EditSend { message, text }),
            Effect::NewSession => Command::NewSession,
            Effect::Resume(id) => Command::Resume(id),
            Effect::Rename(title) => Command::Rename(title),
            Effect::Fork => Command::Fork,
            Effect::Compress(ask) => Command::Compress(ask),
            Effect::LoadContextList => Command::ContextList,
            Effect::ListChoices(kind) => Command::ListChoices(kind),
            Effect::SetPinned { message, on } => Command::Pin { message, on },
            Effect::SetExcluded { message, on } => Command::Exclude { message, on },
            Effect::ApplyPreview {
                summary,
                edited,
                force,
            } => Command::ApplyPreview {
                summary,
                edited,
                force,
            },
            Effect::CancelPreview => Command::CancelPreview,
            Effect::UndoEditMessage => Command::UndoEditMessage,
            Effect::AutoCompress(on) => Command::AutoCompress(on),
            Effect::UndoCompress => Command::UndoCompress,
            Effect::Reload => Command::Reload,
            Effect::Model(name) => Command::Model(name),
            Effect::Memory(text) => Command::Memory(text),
            Effect::Skill(name) => Command::Skill(name),
            Effect::Export(format) => Command::Export(format),
            Effect::InspectRequest => Command::InspectRequest,
            Effect::Tools => Command::Tools,
            Effect::ToggleTool { name, on } => Command::ToggleTool { name, on },
            Effect::UndoEdit => Command::UndoEdit,
            Effect::Mcp(action) => Command::Mcp(action),
        };
        self.op(Op::Run(command))
    }

    fn op(&self, op: Op) -> bool {
        self.handle.send(op);
        true
    }
}
