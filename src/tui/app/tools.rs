//! The tool side of the app's update: tool events fill the chat's tool
//! blocks and open the approval overlay (one at a time; a second request
//! waits for the first answer); the overlay's keys answer the call; with
//! the tool blocks selected, keys move between them and expand them. Part
//! of [`App`]'s update; no I/O.

use super::App;
use crate::conversation::Approval;
use crate::runtime::ApprovalAnswer;
use crate::runtime::Op;
use crate::runtime::service::ToolEvent;
use crate::tui::event::Effect;
use crate::tui::keymap::Action;
use crate::tui::overlay::{Overlay, approval_shows_detail};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;

/// What a key in the approval overlay does.
enum Answered {
    Nothing,
    Answer(Approval),
    /// `y` or `a` while the overlay cannot show the call's detail.
    Unseen,
}

/// The notice when `y` or `a` is pressed on an overlay too small to show
/// what the call would do.
const UNSEEN: &str = "The terminal is too small to show what this call would do; enlarge it to \
     allow the call, or press n or Esc to deny it.";

impl App {
    /// Applies a tool event of the round that runs.
    pub(super) fn tool_event(&mut self, event: ToolEvent) -> Vec<Effect> {
        match event {
            ToolEvent::Started {
                call,
                summary,
                now_ms,
            } => {
                self.now_ms = self.now_ms.max(now_ms);
                self.chat.tools.now_ms = self.now_ms;
                let live = self.chat.tools.live_mut(&call.id);
                live.summary = Some(summary);
                live.asked = false;
                live.started_ms = Some(now_ms);
            }
            ToolEvent::Progress { tool_call_id, tail } => {
                self.chat.tools.live_mut(&tool_call_id).tail = tail;
            }
            ToolEvent::Finished {
                tool_call_id,
                status,
                diff,
                now_ms,
            } => {
                let live = self.chat.tools.live_mut(&tool_call_id);
                live.finished_ms = Some(now_ms);
                live.status = Some(status);
                live.diff = diff;
            }
            ToolEvent::Answered { tool_call_id, status } => {
                let live = self.chat.tools.live_mut(&tool_call_id);
                live.asked = false;
                live.answered = Some(status);
            }
            ToolEvent::ApprovalNeeded(request) => {
                let live = self.chat.tools.live_mut(&request.call.id);
                live.asked = true;
                live.summary = Some(request.summary.clone());
                if matches!(self.overlay, Some(Overlay::Approval(_))) {
                    self.approvals.push_back(*request);
                } else {
                    // It replaces any other overlay: the turn waits for it.
                    self.overlay = Some(Overlay::approval(*request));
                    self.question_appeared();
                }
            }
        }
        Vec::new()
    }

    /// A call's result arrived: a call seen running ends now for its
    /// block (the elapsed time it shows when the result has no duration).
    pub(super) fn tool_result_arrived(&mut self, tool_call_id: &str) {
        let now = self.now_ms;
        if let Some(live) = self.chat.tools.live.get_mut(tool_call_id)
            && let Some(started) = live.started_ms
            && live.finished_ms.is_none()
        {
            live.finished_ms = Some(now.max(started));
            live.rev += 1;
        }
    }

    /// The turn ended: an approval still open has nothing left to answer.
    pub(super) fn tools_turn_done(&mut self) {
        self.chat.tools.turn_running = false;
        // Results read back with the session rather than sent one by one.
        let ids: Vec<String> = self.chat.tools.live.keys().cloned().collect();
        for id in ids {
            self.tool_result_arrived(&id);
        }
        self.approvals.clear();
        if matches!(self.overlay, Some(Overlay::Approval(_))) {
            self.overlay = None;
        }
    }

    /// A key in the approval overlay: `y` allows once, `a` until strata
    /// exits (neither while the screen is too small to show the call's
    /// detail), `n` starts a reason (Enter denies with it, Esc goes back),
    /// Esc denies without one, Ctrl-C closes it and cancels the turn; the
    /// arrows and pages scroll the detail.
    pub(super) fn approval_key(&mut self, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
        if action == Some(Action::Interrupt) {
            // The cancelled turn ends the call; nothing is answered.
            self.overlay = None;
            self.approvals.clear();
            return self.interrupt();
        }
        let screen = Rect::new(0, 0, self.width, self.height);
        let Some(Overlay::Approval(prompt)) = self.overlay.as_mut() else {
            return Vec::new();
        };
        let seen = approval_shows_detail(prompt, screen);
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        let close = action == Some(Action::Close);
        let outcome = match (&mut prompt.reason, key.code) {
            (_, KeyCode::Up | KeyCode::Down | KeyCode::PageUp | KeyCode::PageDown) => {
                let rows = match key.code {
                    KeyCode::Up => -1,
                    KeyCode::Down => 1,
                    KeyCode::PageUp => -10,
                    _ => 10,
                };
                prompt.pager.scroll_by(rows);
                Answered::Nothing
            }
            (None, _) if close => Answered::Answer(Approval::Deny { reason: None }),
            (None, KeyCode::Char(c)) if plain => match c.to_ascii_lowercase() {
                'y' | 'a' if !seen => Answered::Unseen,
                'y' => Answered::Answer(Approval::Once),
                // Leaving the sandbox is allowed once at a time.
                'a' if prompt.request.leaves_sandbox || prompt.request.grant.is_empty() => Answered::Nothing,
                // A rule that may delete files takes a second `a`.
                'a' if prompt.request.grant_risky && !prompt.confirming => {
                    prompt.confirming = true;
                    Answered::Nothing
                }
                'a' => Answered::Answer(Approval::UntilExit),
                'n' => {
                    prompt.reason = Some(String::new());
                    Answered::Nothing
                }
                _ => Answered::Nothing,
            },
            (None, KeyCode::Home) => {
                prompt.pager.to_top();
                Answered::Nothing
            }
            (None, KeyCode::End) => {
                prompt.pager.to_end();
                Answered::Nothing
            }
            (Some(_), _) if close => {
                prompt.reason = None;
                Answered::Nothing
            }
            (Some(text), _) if key.code == KeyCode::Enter || action == Some(Action::Send) => {
                let reason = text.trim();
                Answered::Answer(Approval::Deny {
                    reason: (!reason.is_empty()).then(|| reason.to_owned()),
                })
            }
            (Some(text), KeyCode::Backspace) => {
                text.pop();
                Answered::Nothing
            }
            (Some(text), KeyCode::Char(c)) if plain => {
                text.push(c);
                Answered::Nothing
            }
            _ => Answered::Nothing,
        };
        match outcome {
            Answered::Nothing => Vec::new(),
            Answered::Unseen => {
                self.notify(UNSEEN, true);
                Vec::new()
            }
            Answered::Answer(approval) => self.answer(approval),
        }
    }

    /// Pasted text goes into the reason being typed (on one line).
    pub(super) fn approval_paste(&mut self, text: &str) -> bool {
        if let Some(Overlay::Approval(prompt)) = &mut self.overlay {
            if let Some(reason) = &mut prompt.reason {
                reason.push_str(&text.replace(['\r', '\n'], " "));
            }
            return true;
        }
        false
    }

    /// Answers the open approval and shows the next one waiting, if any.
    fn answer(&mut self, approval: Approval) -> Vec<Effect> {
        let Some(Overlay::Approval(prompt)) = self.overlay.take() else {
            return Vec::new();
        };
        let tool_call_id = prompt.request.call.id.clone();
        if self.notice.as_ref().is_some_and(|n| n.text == UNSEEN) {
            self.notice = None;
        }
        let live = self.chat.tools.live_mut(&tool_call_id);
        live.asked = false;
        if matches!(approval, Approval::Deny { .. }) {
            live.answered = Some(crate::domain::ToolStatus::Denied);
        }
        self.overlay = self.approvals.pop_front().map(Overlay::approval);
        if self.overlay.is_some() {
            self.question_appeared();
        }
        vec![Effect::Op(Op::Approve(ApprovalAnswer {
            tool_call_id,
            approval,
        }))]
    }

    /// Selects the newest tool block (the blocks then have the keys).
    pub(super) fn select_tools(&mut self) -> Vec<Effect> {
        if !self.chat.select_tool(0) {
            self.notify(
                "there are no tool calls to select yet; they show under the replies that make them",
                false,
            );
        }
        Vec::new()
    }

    /// A key while the tool blocks are selected: Up and Down move between
    /// them, Enter or Tab expands or collapses the selected one, Esc (or
    /// the select key again) gives the keys back to the composer. `None`
    /// when the key is not theirs: the app's other keys keep the selection,
    /// typing ends it and goes to the composer.
    pub(super) fn tools_key(&mut self, action: Option<Action>) -> Option<Vec<Effect>> {
        match action {
            Some(Action::HistoryPrev) => {
                self.chat.select_tool(-1);
            }
            Some(Action::HistoryNext) => {
                self.chat.select_tool(1);
            }
            Some(Action::Send | Action::Complete) => self.chat.toggle_selected(),
            Some(Action::Close | Action::SelectTools) => self.chat.tools.selected = None,
            Some(
                Action::Interrupt
                | Action::ScrollUp
                | Action::ScrollDown
                | Action::PageUp
                | Action::PageDown
                | Action::Bottom
                | Action::ToggleContext
                | Action::ToggleDetail
                | Action::ToggleSummaries
                | Action::ToggleArchived
                | Action::Sessions
                | Action::Help
                | Action::Notices
                | Action::SelectMessages
                | Action::ContextList,
            ) => return None,
            Some(Action::Newline) | None => {
                self.chat.tools.selected = None;
                return None;
            }
        }
        Some(Vec::new())
    }
}
