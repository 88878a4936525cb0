//! The summarised messages as a summariser reads them, each only when read:
//! pruned (DESIGN §7 phase 1) for a model, whose input is capped; for the
//! extractive summariser with only old images replaced, so it finds the
//! error lines and paths of long tool outputs that pruning reduces to one
//! line. An earlier summary is reduced to the message merged after its end
//! marker (its body is passed separately, as the summary being updated; a
//! summary with nothing merged is left out).

use super::assemble::split_summary;
use super::extractive::Messages;
use super::prune::Pruner;
use crate::domain::{Message, MessageKind, Role};
use std::borrow::Cow;

/// How the summariser reads a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// As free pruning leaves it.
    Pruned,
    /// As it was, old images replaced.
    Whole,
}

/// The summarised range of a history, read on demand.
pub(crate) struct Transcript<'p, 'a> {
    pruner: &'p Pruner<'a>,
    history: &'a [Message],
    reading: Read,
    /// History indices of the messages the summariser reads, in order.
    index: Vec<usize>,
}

impl<'p, 'a> Transcript<'p, 'a> {
    /// The transcript of the history indices `summarised` (ascending).
    pub(crate) fn new(
        pruner: &'p Pruner<'a>,
        history: &'a [Message],
        summarised: &[usize],
        reading: Read,
    ) -> Self {
        let index = summarised
            .iter()
            .copied()
            .filter(|&i| {
                history[i].kind != MessageKind::Summary
                    || split_summary(&pruner.message(i).content).1.is_some()
            })
            .collect();
        Self {
            pruner,
            history,
            reading,
            index,
        }
    }

    /// Every message, read now.
    pub(crate) fn to_vec(&self) -> Vec<Message> {
        (0..self.index.len()).map(|p| self.get(p).into_owned()).collect()
    }
}

impl<'a> Messages<'a> for Transcript<'_, 'a> {
    fn len(&self) -> usize {
        self.index.len()
    }

    fn role(&self, position: usize) -> Role {
        self.history[self.index[position]].role
    }

    fn get(&self, position: usize) -> Cow<'a, Message> {
        let i = self.index[position];
        let m = match self.reading {
            Read::Pruned => self.pruner.message(i),
            Read::Whole => self.pruner.with_images_stripped(i),
        };
        if m.kind != MessageKind::Summary {
            return m;
        }
        let rest = split_summary(&m.content).1.unwrap_or("").to_owned();
        let mut copy = m.into_owned();
        copy.kind = MessageKind::Normal;
        copy.content = rest;
        Cow::Owned(copy)
    }
}
