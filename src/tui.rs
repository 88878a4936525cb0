//! The full-screen app (DESIGN §9), on top of the runtime.
//!
//! - [`App`]: the state and its update, `handle(AppEvent) -> Vec<Effect>`;
//!   pure apart from the composer widget's own state, so behaviour tests
//!   drive it with events and no terminal.
//! - `view`: drawing from the state (never mutates it, never fails).
//! - [`run`]: the terminal, the event loop and frame coalescing; the
//!   app's [`Effect::Op`]s go to its session's
//!   [`SessionHandle`](crate::runtime::SessionHandle), whose events come
//!   back as [`AppEvent::Service`].
//!
//! Who may call it: the command line (`strata` with no subcommand) and
//! tests. It uses the runtime for everything it shows; it never talks to a
//! provider or the store from the UI task.

mod app;
mod cache_chart;
mod cache_view;
mod chat;
mod context_pane;
mod editor;
mod event;
mod fmt;
mod keymap;
mod legend;
mod menu;
mod overlay;
mod pager;
mod paste;
mod readline;
mod slash;
mod streaming;
mod terminal;
mod theme;
mod tool_block;
mod view;

pub use crate::runtime::service::{EnvLookup, Launch};
pub use app::{ANSWER_GUARD_MS, App, Notice, RewriteQuestion, SendQuestion};
pub use chat::{badges, excluded_badge, message_lines, report_badge};
pub use event::{
    AppEvent, CompressAsk, CompressPreviewView, ContextSnapshot, Effect, ExportFormat, KeptRow, Opening,
    RequestView, SessionView,
};
pub use keymap::{Action, Key, KeyMap};
pub use overlay::{Accept, ApprovalPrompt, ContextList, Overlay, Picker, Preview};
pub use pager::Pager;
pub use slash::{SlashCommand, SlashError};
pub use terminal::{Ended, MAX_FPS, open_session, run, translate};
pub use view::draw;

impl App {
    /// Opens the session picker (as `--resume` without an id does).
    pub fn open_sessions(&mut self) -> Vec<Effect> {
        self.open_picker()
    }
}
