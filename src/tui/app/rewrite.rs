//! The question before a command that rewrites the prompt and so the
//! provider's cached prefix (`/model`, `/reload`), with what it costs:
//! "this rewrites the prompt: ~14.2k of the next request's 15.0k tokens
//! will be uncached". Enter confirms, Esc cancels, other keys wait. The
//! figure comes from the context snapshot: another model reads nothing
//! from the old model's cache; a reload keeps the tools and the layers
//! before the first stale one. A reload with nothing stale goes without a
//! question (it changes nothing, or only what the watcher missed). Part of
//! [`App`]'s update; no I/O.

use super::App;
use crate::runtime::Op;
use crate::runtime::service::Command;
use crate::tui::event::Effect;
use crate::tui::fmt;
use crate::tui::keymap::Action;

/// The open question.
#[derive(Clone, Debug, PartialEq)]
pub struct RewriteQuestion {
    /// The command it asks about (`/model gpt-4o`, `/reload`).
    pub command: String,
    /// What runs when confirmed.
    pub effect: Effect,
    /// Tokens of the next request that will not be read from the cache.
    pub uncached: u64,
    /// Tokens of the next request.
    pub next: u64,
}

impl RewriteQuestion {
    /// The sentence, with the figure.
    #[must_use]
    pub fn sentence(&self) -> String {
        format!(
            "{} rewrites the prompt: ~{} of the next request's {} tokens will be uncached.",
            self.command,
            fmt::tokens(self.uncached),
            fmt::tokens(self.next)
        )
    }
}

impl App {
    /// `effect` for `command`, asked first when the session has a request
    /// whose cache it would break.
    pub(super) fn ask_rewrite(&mut self, command: String, effect: Effect) -> Vec<Effect> {
        let Some(context) = self.context.as_ref().filter(|_| self.session.is_some()) else {
            return vec![effect];
        };
        let next = context
            .prepared_tokens
            .unwrap_or_else(|| context.budget.input_tokens());
        let uncached = match &effect {
            // The model in use: nothing to rewrite, nothing to ask.
            Effect::Op(Op::Run(Command::Model(name))) if *name == self.header.model => return vec![effect],
            Effect::Op(Op::Run(Command::Reload)) => {
                let Some(first) = context
                    .prompt
                    .layers
                    .iter()
                    .position(|l| self.stale.contains(&l.name))
                else {
                    return vec![effect];
                };
                let kept: u64 = context.prompt.layers[..first]
                    .iter()
                    .map(|l| l.tokens as u64)
                    .sum::<u64>()
                    + context.budget.categories.tools.tokens;
                next.saturating_sub(kept)
            }
            _ => next,
        };
        self.rewrite = Some(RewriteQuestion {
            command,
            effect,
            uncached,
            next,
        });
        Vec::new()
    }

    /// A key while the question is open: Enter runs the command, Esc or
    /// Ctrl-C cancels it, any other key is ignored (nothing reaches the
    /// composer); `None` when no question is open.
    pub(super) fn rewrite_key(&mut self, action: Option<Action>) -> Option<Vec<Effect>> {
        self.rewrite.as_ref()?;
        Some(match action {
            Some(Action::Send) => self.rewrite.take().map(|q| vec![q.effect]).unwrap_or_default(),
            Some(Action::Close | Action::Interrupt) => {
                if let Some(q) = self.rewrite.take() {
                    self.notify(
                        &format!("{} cancelled; the prompt is unchanged", q.command),
                        false,
                    );
                }
                Vec::new()
            }
            _ => Vec::new(),
        })
    }

    /// The open question, for the view.
    #[must_use]
    pub fn rewrite_question(&self) -> Option<&RewriteQuestion> {
        self.rewrite.as_ref()
    }
}
