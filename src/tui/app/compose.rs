//! The composer's side of the app: submitting a message or a slash
//! command and asking for the draft's token count (earlier inputs are in
//! `history`). Part of [`App`]'s update; no I/O.

use super::App;
use super::select::Mark;
use crate::runtime::Op;
use crate::runtime::service::Command;
use crate::runtime::service::McpAction;
use crate::tui::chat::Streaming;
use crate::tui::event::{CompressAsk, Effect, ExportFormat};
use crate::tui::overlay::Overlay;
use crate::tui::slash::{self, Invocation, SlashCommand};

impl App {
    /// Replaces the composer's text (the yank buffer is kept; the folds
    /// are the caller's to keep or drop).
    pub(super) fn set_draft(&mut self, text: &str) {
        let yank = self.composer.yank_text();
        self.composer.select_all();
        self.composer.cut();
        self.composer.insert_str(text);
        self.composer.set_yank_text(yank);
    }

    /// The draft changed: its folds' tokens are counted first, then the
    /// whole message (see `folds`).
    pub(super) fn draft_changed(&mut self) -> Vec<Effect> {
        self.prune_folds();
        self.menu = crate::tui::menu::Menu::default();
        self.draft_ticket = self.ticket();
        self.draft_counted = false;
        if let Some(count) = self.count_a_fold() {
            return vec![count];
        }
        let text = self.message_text();
        if text.trim().is_empty() || text.starts_with('/') {
            self.draft_tokens = 0;
            self.draft_counted = true;
            return Vec::new();
        }
        vec![Effect::Op(Op::CountDraft {
            ticket: self.draft_ticket,
            text,
        })]
    }

    pub(super) fn submit(&mut self) -> Vec<Effect> {
        let text = self.message_text();
        if text.trim().is_empty() {
            return Vec::new();
        }
        // An edit is sent as written, even when it starts with `/`.
        if let Some(edit) = self.control.editing.take() {
            return self.resend(edit, text);
        }
        match slash::parse(&text) {
            Some(Err(e)) => {
                self.notify(&e.to_string(), true);
                Vec::new()
            }
            Some(Ok(inv)) => {
                if self.busy && !inv.command.available_while_streaming() {
                    self.notify(
                        &format!(
                            "/{} is not available while a reply streams; wait for it or press Ctrl-C",
                            inv.command.name()
                        ),
                        true,
                    );
                    return Vec::new();
                }
                // Kept first: a command may end the app (`/quit`).
                let mut effects = self.take_draft(&text);
                self.notice = None;
                effects.extend(self.command(inv));
                effects
            }
            None => {
                if self.busy {
                    self.notify(
                        "a reply is streaming; wait for it or press Ctrl-C to cancel it",
                        true,
                    );
                    return Vec::new();
                }
                if self.asks_before_sending(&text) {
                    return Vec::new();
                }
                self.send_message(text)
            }
        }
    }

    /// Sends `text` (the draft as a message) and clears the composer.
    pub(super) fn send_message(&mut self, text: String) -> Vec<Effect> {
        let send = Effect::send(text.clone());
        self.start_turn(text, send)
    }

    /// Starts a turn with `effect` (a send, or an edit resent) showing
    /// `text` as the user's message until it is stored; clears the composer.
    pub(super) fn start_turn(&mut self, text: String, effect: Effect) -> Vec<Effect> {
        self.folds_sent();
        let mut effects = self.take_draft(&text);
        self.notice = None;
        self.turn_error = None;
        // What the last turn's calls did is in their results now; a server
        // may give this turn's calls the same ids.
        self.chat.tools.live.clear();
        self.busy = true;
        self.chat.tools.turn_running = true;
        self.chat.scroll = 0;
        self.chat.pending_user = Some(text.clone());
        self.chat.streaming = Some(Streaming {
            started_ms: self.now_ms,
            last_ms: self.now_ms,
            ..Streaming::default()
        });
        effects.push(effect);
        effects
    }

    pub(super) fn command(&mut self, inv: Invocation) -> Vec<Effect> {
        let arg = inv.arg;
        match inv.command {
            SlashCommand::New => vec![Effect::Op(Op::Run(Command::NewSession))],
            SlashCommand::Compress => self.compress_command(&arg),
            SlashCommand::UndoCompress => vec![Effect::Op(Op::Run(Command::UndoCompress))],
            SlashCommand::Context => self.open_context_list(),
            SlashCommand::Pin => self.mark_command("pin", &arg, Mark::Pin(true)),
            SlashCommand::Unpin => self.mark_command("unpin", &arg, Mark::Pin(false)),
            SlashCommand::Exclude => self.mark_command("exclude", &arg, Mark::Exclude(true)),
            SlashCommand::Include => self.mark_command("include", &arg, Mark::Exclude(false)),
            SlashCommand::UndoResend => vec![Effect::Op(Op::Run(Command::UndoEditMessage))],
            SlashCommand::TakeOver => vec![Effect::Op(Op::Run(Command::TakeOver))],
            SlashCommand::AutoCompress => match arg.as_str() {
                "on" => vec![Effect::Op(Op::Run(Command::AutoCompress(true)))],
                "off" => vec![Effect::Op(Op::Run(Command::AutoCompress(false)))],
                other => {
                    self.notify(&format!("/auto-compress takes on or off, not '{other}'"), true);
                    Vec::new()
                }
            },
            SlashCommand::Sessions => self.open_picker(),
            SlashCommand::Resume if arg.is_empty() => self.open_picker(),
            SlashCommand::Resume => vec![Effect::Op(Op::Run(Command::Resume(arg)))],
            SlashCommand::Rename => vec![Effect::Op(Op::Run(Command::Rename(arg)))],
            SlashCommand::Fork => vec![Effect::Op(Op::Run(Command::Fork))],
            SlashCommand::Prompt => {
                self.overlay = Some(Overlay::prompt());
                Vec::new()
            }
            SlashCommand::Inspect => {
                self.overlay = Some(Overlay::request());
                vec![Effect::Op(Op::Run(Command::InspectRequest))]
            }
            SlashCommand::Reload => {
                self.ask_rewrite("/reload".to_owned(), Effect::Op(Op::Run(Command::Reload)))
            }
            SlashCommand::Model if arg.is_empty() => {
                self.open_choices(crate::runtime::service::ChoiceKind::Model)
            }
            SlashCommand::Model => {
                self.ask_rewrite(format!("/model {arg}"), Effect::Op(Op::Run(Command::Model(arg))))
            }
            SlashCommand::Memory => vec![Effect::Op(Op::Run(Command::Memory(arg)))],
            SlashCommand::Skill if arg.is_empty() => {
                self.open_choices(crate::runtime::service::ChoiceKind::Skill)
            }
            SlashCommand::Skill => vec![Effect::Op(Op::Run(Command::Skill(arg)))],
            SlashCommand::Export => match arg.as_str() {
                "" | "md" | "markdown" => vec![Effect::Op(Op::Run(Command::Export(ExportFormat::Markdown)))],
                "json" => vec![Effect::Op(Op::Run(Command::Export(ExportFormat::Json)))],
                other => {
                    self.notify(&format!("/export takes md or json, not '{other}'"), true);
                    Vec::new()
                }
            },
            SlashCommand::Tools => match arg.split_whitespace().collect::<Vec<_>>().as_slice() {
                [] => vec![Effect::Op(Op::Run(Command::Tools))],
                [state @ ("on" | "off"), name] => vec![Effect::Op(Op::Run(Command::ToggleTool {
                    name: (*name).to_owned(),
                    on: *state == "on",
                }))],
                _ => {
                    self.notify(
                        &format!(
                            "/tools takes nothing (to list the tools), on NAME or off NAME; not '{arg}'"
                        ),
                        true,
                    );
                    Vec::new()
                }
            },
            SlashCommand::UndoEdit => vec![Effect::Op(Op::Run(Command::UndoEdit))],
            SlashCommand::Mcp => {
                let action = match arg.split_whitespace().collect::<Vec<_>>().as_slice() {
                    [] => McpAction::List,
                    [state @ ("on" | "off"), server] => McpAction::Switch {
                        server: (*server).to_owned(),
                        on: *state == "on",
                    },
                    ["accept"] => McpAction::Accept,
                    ["decline"] => McpAction::Decline,
                    _ => {
                        self.notify(
                            &format!(
                                "/mcp takes nothing (to list the servers), on SERVER, off SERVER, accept or decline; not '{arg}'"
                            ),
                            true,
                        );
                        return Vec::new();
                    }
                };
                vec![Effect::Op(Op::Run(Command::Mcp(action)))]
            }
            SlashCommand::Log => {
                self.overlay = Some(Overlay::notices(&self.notices_log));
                Vec::new()
            }
            SlashCommand::Help => {
                self.overlay = Some(Overlay::help());
                Vec::new()
            }
            SlashCommand::Quit => vec![Effect::Quit],
        }
    }

    /// `/compress`, `/compress TOPIC`, `/compress here N`.
    fn compress_command(&mut self, arg: &str) -> Vec<Effect> {
        let mut ask = CompressAsk {
            preview: self.control.preview,
            ..CompressAsk::default()
        };
        match arg.split_whitespace().collect::<Vec<_>>().as_slice() {
            [] => {}
            ["here", n] => match n.parse::<usize>() {
                Ok(n) if n > 0 => ask.keep_last = Some(n),
                _ => {
                    self.notify(
                        &format!(
                            "/compress here takes how many of the last exchanges to keep, a number from 1, e.g. /compress here 2; not '{n}'"
                        ),
                        true,
                    );
                    return Vec::new();
                }
            },
            ["here"] => {
                self.notify(
                    "/compress here needs how many of the last exchanges to keep, e.g. /compress here 2",
                    true,
                );
                return Vec::new();
            }
            _ => ask.topic = Some(arg.to_owned()),
        }
        vec![Effect::Op(Op::Run(Command::Compress(ask)))]
    }
}
