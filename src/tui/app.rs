//! The app's state and its update function: [`App::handle`] takes one
//! [`AppEvent`] and returns the [`Effect`]s for its session and terminal. No I/O,
//! no clock (time arrives in events), no terminal: behaviour tests drive it
//! with events, and drawing (see `view`) only reads it. The one service it
//! holds is the chat pane's code highlighter, which it only hands text to
//! (a channel send) and drains. The tool side (tool blocks, approvals) is
//! in `tools`, the composer's in `compose`.

use super::chat::{ChatPane, Streaming};
use super::event::{AppEvent, ContextSnapshot, Effect};
use super::keymap::{Action, KeyMap};
use super::overlay::{ListKind, Overlay};
use super::readline::{self, Edited};
use super::slash;
use crate::conversation::Phase;
use crate::domain::{LayerName, MessageStatus, Session, Usage};
use crate::render::Highlighter;
use crate::runtime::Op;
use crate::runtime::service::ServiceEvent;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use interrupt::Working;
use ratatui_textarea::TextArea;

mod ask;
mod attach;
mod compose;
mod context;
mod folds;
mod history;
mod interrupt;
mod overlay_keys;
mod rewrite;
mod select;
mod slash_menu;
mod tools;
mod turn_end;

pub use ask::SendQuestion;
pub use attach::ATTACH_KEYS;
pub(super) use context::{LIST_HELP, PREVIEW_HELP};
pub use rewrite::RewriteQuestion;
pub(super) use select::HELP as SELECT_HELP;

/// The notice while a cancelled turn winds down.
const CANCELLING: &str = "cancelling the reply…";

/// A notice in the status bar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// One sentence.
    pub text: String,
    /// A problem (drawn in the error style).
    pub error: bool,
}

/// Provider and model in the header.
#[derive(Clone, Debug, Default)]
pub struct Header {
    /// Provider name.
    pub provider: String,
    /// Model name.
    pub model: String,
    /// Whether it is the embedded model.
    pub embedded: bool,
}

/// The whole app state.
pub struct App {
    pub(super) keymap: KeyMap,
    pub(super) width: u16,
    pub(super) height: u16,
    pub(super) header: Header,
    pub(super) session: Option<Session>,
    pub(super) chat: ChatPane,
    pub(super) context: Option<ContextSnapshot>,
    pub(super) stale: Vec<LayerName>,
    pub(super) context_shown: Option<bool>,
    pub(super) detail: bool,
    pub(super) composer: TextArea<'static>,
    /// The long pastes folded in the draft (see `paste`).
    folds: Vec<crate::tui::paste::Fold>,
    /// The question before sending a message larger than the window.
    pub(super) question: Option<SendQuestion>,
    /// The question before `/model` or `/reload` rewrites the prompt.
    rewrite: Option<rewrite::RewriteQuestion>,
    /// The question about files a message names that are not attached
    /// without the user's say-so (see `attach`).
    attach: Option<crate::runtime::service::AttachQuestion>,
    /// The `/` menu's selection.
    menu: super::menu::Menu,
    history: Vec<String>,
    history_at: Option<usize>,
    pub(super) overlay: Option<Overlay>,
    pub(super) draft_tokens: u64,
    draft_ticket: u64,
    /// Whether `draft_tokens` counts the draft as it is now.
    draft_counted: bool,
    next_ticket: u64,
    pub(super) busy: bool,
    /// The turn's phase and since when (unix ms), while busy.
    pub(super) phase: Option<(Phase, i64)>,
    pub(super) progress: Option<String>,
    pub(super) notice: Option<Notice>,
    pub(super) last_usage: Option<Usage>,
    pub(super) now_ms: i64,
    interrupt_armed: bool,
    /// Before this time (unix ms) a key does not answer the approval or
    /// the attach question on screen: it was typed as the question
    /// appeared, meant for the composer ([`ANSWER_GUARD_MS`]).
    pub(super) answers_from_ms: i64,
    pub(super) spinner: usize,
    dirty: bool,
    /// Approvals asked while another one is open, oldest first.
    approvals: std::collections::VecDeque<crate::runtime::service::ApprovalRequest>,
    /// `/tools` was sent: its answer (the next notice) opens the tools list.
    /// The user cancelled the turn in progress (Ctrl-C); it winds down.
    cancelling: bool,
    /// A command that can take long (a compression, a model switch, a
    /// reload) runs: what it is, when it started (unix ms), and whether Esc
    /// or Ctrl-C stops it.
    pub(super) working: Option<Working>,
    /// A compression preview that arrived while the composer held text: it
    /// opens once the composer is empty.
    pub(super) deferred_preview: Option<crate::tui::event::CompressPreviewView>,
    /// The last error said while the turn runs: what broke a reply that
    /// ends interrupted without the user cancelling it.
    pub(super) turn_error: Option<String>,
    /// Every notice of this run, oldest first, with when (unix ms).
    notices_log: Vec<(String, i64)>,
    /// The selection mode, the edit being resent, the preview setting.
    pub(super) control: select::Control,
}

/// How many notices the log keeps (the oldest go first).
const NOTICES_KEPT: usize = 1_000;

/// How long after an approval or an attach question appears its keys
/// start to answer it: a key pressed sooner was typed for the composer
/// before the question was seen (`a` of "also" must not allow a command).
pub const ANSWER_GUARD_MS: i64 = 500;
impl App {
    /// A fresh app of `width`×`height` cells with `keymap`.
    #[must_use]
    pub fn new(keymap: KeyMap, width: u16, height: u16) -> Self {
        let mut composer = TextArea::default();
        composer.set_placeholder_text("Message, or /help");
        composer.set_cursor_line_style(ratatui::style::Style::new());
        let mut chat = ChatPane::default();
        chat.expand_key = keymap.label_for(Action::ToggleSummaries).unwrap_or_default();
        chat.tools.toggle_key = keymap.label_for(Action::Send).unwrap_or_default();
        Self {
            keymap,
            width,
            height,
            header: Header::default(),
            session: None,
            chat,
            context: None,
            stale: Vec::new(),
            context_shown: None,
            detail: false,
            composer,
            folds: Vec::new(),
            question: None,
            rewrite: None,
            attach: None,
            menu: super::menu::Menu::default(),
            history: Vec::new(),
            history_at: None,
            overlay: None,
            draft_tokens: 0,
            draft_ticket: 0,
            draft_counted: true,
            next_ticket: 0,
            busy: false,
            phase: None,
            progress: None,
            notice: None,
            last_usage: None,
            now_ms: 0,
            interrupt_armed: false,
            answers_from_ms: 0,
            spinner: 0,
            dirty: true,
            approvals: std::collections::VecDeque::new(),
            cancelling: false,
            turn_error: None,
            working: None,
            deferred_preview: None,
            notices_log: Vec::new(),
            control: select::Control::default(),
        }
    }

    /// Hands the chat pane a code highlighter (see [`Highlighter`]); its
    /// waker should post [`AppEvent::Highlighted`]. Without one, code in
    /// replies is drawn plain.
    pub fn set_highlighter(&mut self, highlighter: Highlighter) {
        self.chat.set_highlighter(highlighter);
        self.dirty = true;
    }

    /// Layers marked stale (their files changed since the prompt was frozen).
    #[must_use]
    pub fn stale(&self) -> &[LayerName] {
        &self.stale
    }

    /// Whether something changed since the last [`App::take_dirty`].
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Whether a reply is streaming.
    #[must_use]
    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// The current session, if one was started or resumed.
    #[must_use]
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The messages shown (archived ones included).
    #[must_use]
    pub fn messages(&self) -> &[crate::domain::Message] {
        &self.chat.messages
    }

    /// The reply streaming now, as far as it arrived.
    #[must_use]
    pub fn streaming_text(&self) -> Option<&str> {
        self.chat.streaming.as_ref().map(|s| s.text.as_str())
    }

    /// The context pane's data, once loaded.
    #[must_use]
    pub fn context(&self) -> Option<&ContextSnapshot> {
        self.context.as_ref()
    }

    /// The app's clock: the latest time an event carried (unix ms).
    #[must_use]
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    /// The notice on the status bar, if any.
    #[must_use]
    pub fn notice(&self) -> Option<&Notice> {
        self.notice.as_ref()
    }

    /// The open overlay, if any.
    #[must_use]
    pub fn overlay(&self) -> Option<&Overlay> {
        self.overlay.as_ref()
    }

    /// The composer's text.
    #[must_use]
    pub fn draft(&self) -> String {
        self.composer.lines().join("\n")
    }

    /// Whether the context pane is shown at the current width.
    #[must_use]
    pub fn context_visible(&self) -> bool {
        self.context_shown.unwrap_or(self.width >= 100) && self.width >= 60 && self.height >= 6
    }

    /// Applies one event; returns what its session and terminal must do, in order.
    pub fn handle(&mut self, event: impl Into<AppEvent>) -> Vec<Effect> {
        let effects = self.apply(event.into());
        // A command that can take long shows as work in progress until
        // the service says it ended.
        for e in &effects {
            if let Effect::Op(Op::Run(command)) = e
                && let Some(label) = command.working_label()
            {
                self.working = Some(Working {
                    label,
                    since: self.now_ms,
                    cancellable: command.cancellable(),
                });
            }
        }
        self.open_deferred_preview();
        effects
    }

    fn apply(&mut self, event: AppEvent) -> Vec<Effect> {
        if !matches!(event, AppEvent::Tick { .. } | AppEvent::Highlighted)
            || self.busy
            || self.working.is_some()
        {
            self.dirty = true;
        }
        match event {
            AppEvent::Key(key) if key.kind != KeyEventKind::Release => self.key(key),
            AppEvent::Key(_) => Vec::new(),
            AppEvent::Paste(text) => {
                if self.approval_paste(&text) || self.preview_paste(&text) {
                    return Vec::new();
                }
                if let Some(Overlay::Picker(p)) = &mut self.overlay {
                    p.query.push_str(&text.replace('\n', " "));
                    return self.search();
                }
                // Terminals paste line breaks as carriage returns.
                self.chat.tools.selected = None;
                self.question = None;
                self.paste_text(&text.replace("\r\n", "\n").replace('\r', "\n"))
            }
            AppEvent::Wheel(rows) => {
                match &mut self.overlay {
                    Some(o) => o.scroll(-rows),
                    None => self.chat.scroll_by(i64::from(rows)),
                }
                Vec::new()
            }
            AppEvent::Resize { width, height } => {
                self.width = width;
                self.height = height;
                Vec::new()
            }
            AppEvent::Clock { now_ms } => {
                self.now_ms = self.now_ms.max(now_ms);
                self.chat.tools.now_ms = self.now_ms;
                Vec::new()
            }
            AppEvent::Tick { now_ms } => {
                self.now_ms = now_ms;
                self.chat.tools.now_ms = now_ms;
                self.spinner = self.spinner.wrapping_add(1);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Progress(line)) => {
                self.progress = Some(line);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Connected {
                provider,
                model,
                embedded,
            }) => {
                self.header = Header {
                    provider,
                    model,
                    embedded,
                };
                self.progress = None;
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Loaded(view)) => {
                let report = view
                    .context
                    .as_ref()
                    .map(|c| c.report.clone())
                    .unwrap_or_default();
                let other_session =
                    view.session.as_ref().map(|s| s.id) != self.session.as_ref().map(|s| s.id);
                if other_session {
                    self.chat.scroll = 0;
                    self.forget_control();
                }
                self.session = view.session;
                self.chat.set(view.messages, report);
                self.chat.pending_user = None;
                self.chat.streaming = None;
                let stored = view.context.as_ref().and_then(|c| c.last_usage.clone());
                // Another session's numbers never stay on the status bar.
                if other_session || stored.is_some() {
                    self.last_usage = stored;
                }
                if let Some(c) = &view.context {
                    self.chat.set_completions(completions(c));
                }
                self.context = view.context;
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Message(m)) => {
                match m.role {
                    crate::domain::Role::User => self.chat.pending_user = None,
                    crate::domain::Role::Tool => {
                        if let Some(id) = &m.tool_call_id {
                            self.tool_result_arrived(id);
                        }
                    }
                    crate::domain::Role::Assistant if m.status != MessageStatus::Streaming => {
                        self.chat.streaming = None;
                    }
                    _ => {}
                }
                self.chat.upsert(*m);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Tokens(counts)) => {
                self.chat.set_tokens(counts);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Context(c)) => {
                self.chat.set_report(c.report.clone());
                if c.last_usage.is_some() {
                    self.last_usage.clone_from(&c.last_usage);
                }
                self.chat.set_completions(completions(&c));
                self.context = Some(*c);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Phase(phase)) => {
                // Counting servers up keeps the wait's start.
                let since = match (&self.phase, &phase) {
                    (Some((Phase::StartingServers { .. }, since)), Phase::StartingServers { .. }) => *since,
                    // So does the prompt being read, from the first token
                    // wait on.
                    (
                        Some((Phase::WaitingForFirstToken | Phase::ReadingPrompt { .. }, since)),
                        Phase::ReadingPrompt { .. },
                    ) => *since,
                    _ => self.now_ms,
                };
                self.phase = Some((phase, since));
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::StreamStarted { now_ms }) => {
                if let Some(s) = &mut self.chat.streaming {
                    s.started_ms = now_ms;
                }
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Delta { text, now_ms }) => {
                self.now_ms = self.now_ms.max(now_ms);
                let s = self.chat.streaming.get_or_insert_with(Streaming::default);
                s.first_ms.get_or_insert(now_ms);
                s.last_ms = now_ms;
                s.text.push_str(&text);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Usage(u)) => {
                if let (Some(id), Some(n)) = (u.message_id, u.completion_tokens) {
                    self.chat.set_completions([(id, n)]);
                }
                self.last_usage = Some(u);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Unsent(text)) => {
                self.chat.pending_user = None;
                self.chat.streaming = None;
                if self.draft().is_empty() {
                    self.put_draft(&text);
                    return self.draft_changed();
                }
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Edited(edit)) => {
                let line = format!(
                    "Edited message {}: {} message(s) archived (/undo-resend brings them back).",
                    edit.pos, edit.archived
                );
                self.notify(&line, false);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::CommandDone) => {
                self.working = None;
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::TurnDone { status }) => {
                self.turn_done(status);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::DraftTokens { ticket, tokens }) => {
                if ticket == self.draft_ticket {
                    self.draft_tokens = tokens;
                    self.draft_counted = true;
                    return self.count_answers_question();
                }
                self.fold_counted(ticket, tokens).unwrap_or_default()
            }
            AppEvent::Service(ServiceEvent::Sessions { ticket, rows }) => {
                if let Some(Overlay::Picker(p)) = &mut self.overlay
                    && p.ticket == ticket
                {
                    p.rows = rows;
                    p.selected = 0;
                    p.loaded = true;
                }
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Request(view)) => {
                if let Some(o) = &mut self.overlay {
                    o.set_request(view);
                }
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Stale(layers)) => {
                self.stale = layers;
                Vec::new()
            }
            AppEvent::Highlighted => {
                // Nothing new (drained by an earlier wake): no frame needed.
                if self.chat.highlights_arrived() > 0 {
                    self.dirty = true;
                }
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Tool(event)) => self.tool_event(event),
            AppEvent::History(earlier) => {
                self.history_loaded(earlier);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::ContextList(rows)) => {
                self.context_rows(rows);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Choices { kind, items }) => {
                self.choices(kind, items);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::CompressPreview(outcome)) => {
                self.preview_arrived(context::preview_view(&outcome));
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Compressed(outcome)) => {
                self.notify(&outcome.feedback, false);
                Vec::new()
            }
            AppEvent::Edited(text) => {
                self.editor_returned(text);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::AttachAsk(question)) => {
                self.attach_asked(*question);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::ToolList(listing)) => {
                self.listed(ListKind::Tools, &listing);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::McpList(listing)) => {
                self.listed(ListKind::Mcp, &listing);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Notice(text)) => {
                self.notify(&text, false);
                Vec::new()
            }
            AppEvent::Service(ServiceEvent::Error(text)) => {
                if self.busy {
                    self.turn_error = Some(text.clone());
                }
                self.notify(&text, true);
                Vec::new()
            }
            AppEvent::Failed(text) => {
                self.notify(&text, true);
                Vec::new()
            }
        }
    }

    /// An approval or attach question is on screen from now: keys answer
    /// it only after [`ANSWER_GUARD_MS`].
    pub(super) fn question_appeared(&mut self) {
        self.answers_from_ms = self.now_ms + ANSWER_GUARD_MS;
    }

    fn notify(&mut self, text: &str, error: bool) {
        // Every notice is kept whole for the log (F6, /log): the status
        // bar cuts long ones.
        if self.notices_log.len() >= NOTICES_KEPT {
            self.notices_log.remove(0);
        }
        let kind = if error { "error: " } else { "" };
        self.notices_log.push((format!("{kind}{text}"), self.now_ms));
        self.notice = Some(Notice {
            text: text.to_owned(),
            error,
        });
    }

    /// The notices of this run, oldest first, with when (unix ms).
    #[must_use]
    pub fn notices_log(&self) -> &[(String, i64)] {
        &self.notices_log
    }

    fn ticket(&mut self) -> u64 {
        self.next_ticket += 1;
        self.next_ticket
    }

    fn key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let action = self.keymap.action(&key);
        if action != Some(Action::Interrupt) {
            self.interrupt_armed = false;
        }
        // A preview asks too: Enter stores its summary.
        let asking =
            self.attach.is_some() || matches!(self.overlay, Some(Overlay::Approval(_) | Overlay::Preview(_)));
        // Esc and Ctrl-C close the question whenever they come: they allow
        // nothing.
        let closes = matches!(action, Some(Action::Interrupt | Action::Close));
        if asking && !closes && self.now_ms < self.answers_from_ms {
            self.notify(
                "a key pressed as the question appeared answers nothing; read the question, then answer it",
                false,
            );
            return Vec::new();
        }
        if matches!(self.overlay, Some(Overlay::Approval(_))) {
            return self.approval_key(key, action);
        }
        if let Some(effects) = self.control_overlay_key(key, action) {
            return effects;
        }
        if self.overlay.is_some() {
            return self.overlay_key(key, action);
        }
        if self.selecting()
            && let Some(effects) = self.select_key(key, action)
        {
            return effects;
        }
        if self.chat.tools.selected.is_some()
            && let Some(effects) = self.tools_key(action)
        {
            return effects;
        }
        if let Some(effects) = self.attach_key(key, action) {
            return effects;
        }
        if let Some(effects) = self.question_key(action) {
            return effects;
        }
        if let Some(effects) = self.rewrite_key(action) {
            return effects;
        }
        if let Some(effects) = self.menu_key(action) {
            return effects;
        }
        match action {
            Some(Action::Interrupt) => self.interrupt(),
            Some(Action::Send) => self.submit(),
            Some(Action::Newline) => {
                self.composer.insert_newline();
                self.draft_changed()
            }
            Some(Action::HistoryPrev) if self.composer.cursor().0 == 0 => {
                self.recall(-1);
                let effects = self.draft_changed();
                self.menu.hidden = true;
                effects
            }
            Some(Action::HistoryNext) if self.composer.cursor().0 + 1 >= self.composer.lines().len() => {
                self.recall(1);
                let effects = self.draft_changed();
                self.menu.hidden = true;
                effects
            }
            Some(Action::Complete) => {
                if let Some(done) = slash::complete(&self.draft()) {
                    self.set_draft(&done);
                }
                Vec::new()
            }
            Some(Action::ScrollUp) => self.scroll(3),
            Some(Action::ScrollDown) => self.scroll(-3),
            Some(Action::PageUp) => self.scroll(self.page()),
            Some(Action::PageDown) => self.scroll(-self.page()),
            Some(Action::Bottom) => {
                self.chat.scroll = 0;
                Vec::new()
            }
            Some(Action::ToggleContext) => {
                self.context_shown = Some(!self.context_visible());
                Vec::new()
            }
            Some(Action::ToggleDetail) => {
                self.detail = !self.detail;
                Vec::new()
            }
            Some(Action::ToggleSummaries) => {
                if let Some(effects) = self.expand_folds() {
                    return effects;
                }
                self.chat.summaries_expanded = !self.chat.summaries_expanded;
                Vec::new()
            }
            Some(Action::ToggleArchived) => {
                self.chat.show_archived = !self.chat.show_archived;
                Vec::new()
            }
            Some(Action::SelectTools) => {
                self.end_selection();
                self.select_tools()
            }
            Some(Action::SelectMessages) => self.select_messages(),
            Some(Action::ContextList) => self.open_context_list(),
            Some(Action::Sessions) => self.open_picker(),
            Some(Action::Help) => {
                self.overlay = Some(Overlay::help());
                Vec::new()
            }
            Some(Action::Notices) => {
                self.overlay = Some(Overlay::notices(&self.notices_log));
                Vec::new()
            }
            Some(Action::Close) => {
                if self.control.editing.is_some() {
                    return self.cancel_edit();
                }
                if let Some(effects) = self.stop_working() {
                    return effects;
                }
                self.end_selection();
                self.notice = None;
                // While the first request waits for MCP servers, Esc sends it
                // without them.
                if self.busy && matches!(self.phase, Some((Phase::StartingServers { .. }, _))) {
                    return vec![Effect::Op(Op::SkipServers)];
                }
                Vec::new()
            }
            None if key.code == KeyCode::Char('?')
                && !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
                && self.draft().is_empty() =>
            {
                self.overlay = Some(Overlay::legend());
                Vec::new()
            }
            Some(Action::HistoryPrev | Action::HistoryNext) | None => {
                if key.code == KeyCode::Backspace
                    && key.modifiers.is_empty()
                    && self.delete_fold_before_cursor()
                {
                    return self.draft_changed();
                }
                match readline::edit(&mut self.composer, &key) {
                    Some(Edited::Text) => return self.draft_changed(),
                    Some(Edited::Cursor) => return Vec::new(),
                    None => {}
                }
                if self.composer.input(key) {
                    self.draft_changed()
                } else {
                    Vec::new()
                }
            }
        }
    }

    fn page(&self) -> i64 {
        i64::from(self.height.saturating_sub(6).max(1))
    }

    fn scroll(&mut self, rows: i64) -> Vec<Effect> {
        self.chat.scroll_by(rows);
        Vec::new()
    }

    /// Shows the service's answer to `/tools` or `/mcp`, unless a tool call
    /// waits for its answer (then only its head, as a notice).
    fn listed(&mut self, kind: ListKind, listing: &crate::runtime::service::Listing) {
        if matches!(self.overlay, Some(Overlay::Approval(_))) {
            self.notify(&listing.head, false);
        } else {
            self.overlay = Some(Overlay::listing(kind, listing));
        }
    }
}

/// Replies' output tokens as the provider counted them, from the
/// session's requests.
fn completions(c: &ContextSnapshot) -> impl Iterator<Item = (crate::domain::MessageId, u64)> + '_ {
    c.requests
        .iter()
        .filter_map(|r| Some((r.message_id?, r.completion_tokens?)))
}
