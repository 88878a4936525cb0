//! The budget of the next request (DESIGN §5 "Budget categories"): where
//! the context window goes, by category, with the marks the context pane and
//! `strata context` show.
//!
//! Pure: the caller supplies the frozen prompt's layer table (tokens per
//! layer), the history with its per-message counts (from
//! [`TokenCache::count_history`](super::TokenCache::count_history)), the
//! tool schema items and the window settings. Serialises to the
//! `strata context --json` contract without `session_id` and `model`, which
//! the CLI adds around it (`#[serde(flatten)]`).
//!
//! Item names:
//! - `stable`, `context`, `volatile`: one item per layer, named by the layer
//!   (`identity`, `project`, `cache_boundary`, ...), in prompt order. A layer
//!   read from files is followed by one item per file that contributed text,
//!   named `<layer>: <path>` (e.g. `project: /repo/AGENTS.md`). A file item is
//!   a part of the layer item before it, not added to the category again; its
//!   tokens are the layer's tokens apportioned by the file's share of the
//!   layer's characters (the layer table has no per-file tokens). Built-in
//!   texts (`builtin:` paths) and files that added nothing get no item.
//! - `tools`: one item per tool schema, named by the function name.
//! - `history`: always the six items `user`, `assistant`, `tool` (tool
//!   results), `summary` (messages of kind `summary`, whatever their role),
//!   `system` (system messages kept from an import) and `overhead` (the
//!   per-request tokens of [`request_overhead`]: reply priming, plus the
//!   system prompt's message framing).
//! - `reserved_output`: one item `max_tokens`.
//! - `free`: no items; `window` minus every other category, never below 0.
//!
//! Invariant: when nothing overflows, the seven category totals add up to
//! `window` exactly.

use super::overhead::request_overhead;
use super::threshold::{Threshold, ThresholdSettings};
use crate::domain::{LayerInfo, Message, MessageKind, Role, Tier};
use serde::{Deserialize, Serialize};

/// One named row of a category.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetItem {
    /// Layer, `layer: path`, tool, history role or `max_tokens`.
    pub name: String,
    /// Tokens.
    pub tokens: u64,
}

/// One category: its total and its rows (see the module doc for which rows
/// add up to the total).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Category {
    /// Total tokens of the category.
    pub tokens: u64,
    /// Rows.
    pub items: Vec<BudgetItem>,
}

/// The seven categories of DESIGN §5, in display order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Categories {
    /// Prompt layers of the stable tier.
    pub stable: Category,
    /// Prompt layers of the context tier.
    pub context: Category,
    /// Prompt layers of the volatile tier (from the cache boundary marker on).
    pub volatile: Category,
    /// Tool schemas.
    pub tools: Category,
    /// Messages by role, plus the per-request overhead.
    pub history: Category,
    /// The output reserve (`max_tokens`).
    pub reserved_output: Category,
    /// What is left of the window.
    pub free: Category,
}

/// The budget of one request. Token figures are estimates under
/// `tokenizer`; they are exact only when `exact` is true.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Context window of the model, tokens.
    pub window: u64,
    /// Where `window` comes from: `config`, `catalog`, `default`, `server`
    /// or `overflow_error` (set by the runtime; empty from
    /// [`Budget::compute`] alone).
    #[serde(default)]
    pub window_source: String,
    /// Output reserve (`max_tokens`), tokens.
    pub reserved_output: u64,
    /// `window − reserved_output`.
    pub effective_window: u64,
    /// Compression threshold on the request input.
    pub threshold: Threshold,
    /// Tokens before the prompt-cache boundary (the stable and context
    /// layers).
    pub boundary_tokens: u64,
    /// Tokenizer id (`o200k_base`, ...).
    pub tokenizer: String,
    /// Whether counts match the provider's tokenizer.
    pub exact: bool,
    /// Where the window goes.
    pub categories: Categories,
}

/// Everything [`Budget::compute`] needs.
#[derive(Clone, Copy, Debug)]
pub struct BudgetInput<'a> {
    /// The frozen prompt's layer table (tokens per layer, sources).
    pub layers: &'a [LayerInfo],
    /// Byte offset of the cache boundary marker in the prompt text, if any.
    pub boundary_offset: Option<usize>,
    /// The messages that will be sent, in order.
    pub history: &'a [Message],
    /// Tokens of each message of `history` (same order and length; a
    /// missing entry counts as 0), framing included.
    pub history_tokens: &'a [u32],
    /// Tool schemas offered, one item each (see `tool_schema_items`).
    pub tools: &'a [BudgetItem],
    /// Context window, tokens.
    pub window: u64,
    /// Output reserve (`max_tokens`), tokens.
    pub reserved_output: u64,
    /// Threshold ratio and cap.
    pub threshold: ThresholdSettings,
    /// Tokenizer id the counts were made with.
    pub tokenizer: &'a str,
    /// Whether that tokenizer is exact for the model.
    pub exact: bool,
}

/// History item names, in display order.
const HISTORY_ITEMS: [&str; 6] = ["user", "assistant", "tool", "summary", "system", "overhead"];

/// Index into [`HISTORY_ITEMS`] of a message's row.
fn history_row(message: &Message) -> usize {
    if message.kind == MessageKind::Summary {
        return 3;
    }
    match message.role {
        Role::User => 0,
        Role::Assistant => 1,
        Role::Tool => 2,
        Role::System => 4,
    }
}

/// The category of one tier: a row per layer, then its file rows.
fn tier_category(layers: &[LayerInfo], tier: Tier) -> Category {
    let mut category = Category::default();
    for layer in layers.iter().filter(|l| l.tier == tier) {
        let tokens = layer.tokens as u64;
        category.tokens += tokens;
        category.items.push(BudgetItem {
            name: layer.name.as_str().to_owned(),
            tokens,
        });
        let files: Vec<_> = layer
            .sources
            .iter()
            .filter(|s| s.kept_chars > 0 && !s.path.starts_with("builtin:"))
            .collect();
        let kept: u64 = files.iter().map(|s| s.kept_chars).sum();
        let denominator = kept.max(layer.chars as u64).max(1);
        for source in files {
            let share = u128::from(tokens) * u128::from(source.kept_chars) / u128::from(denominator);
            category.items.push(BudgetItem {
                name: format!("{}: {}", layer.name.as_str(), source.path),
                tokens: u64::try_from(share).unwrap_or(tokens),
            });
        }
    }
    category
}

impl Budget {
    /// Computes the budget (see the module doc for categories and items).
    #[must_use]
    pub fn compute(input: BudgetInput<'_>) -> Self {
        let stable = tier_category(input.layers, Tier::Stable);
        let context = tier_category(input.layers, Tier::Context);
        let volatile = tier_category(input.layers, Tier::Volatile);

        let boundary_tokens = match input.boundary_offset {
            Some(offset) => input
                .layers
                .iter()
                .filter(|l| l.end <= offset)
                .map(|l| l.tokens as u64)
                .sum(),
            None => stable.tokens + context.tokens,
        };

        let tools = Category {
            tokens: input.tools.iter().map(|i| i.tokens).sum(),
            items: input.tools.to_vec(),
        };

        let mut rows = [0u64; HISTORY_ITEMS.len()];
        for (i, message) in input.history.iter().enumerate() {
            let n = input.history_tokens.get(i).copied().unwrap_or(0);
            rows[history_row(message)] += u64::from(n);
        }
        rows[5] = u64::from(request_overhead(!input.layers.is_empty()));
        let history = Category {
            tokens: rows.iter().sum(),
            items: HISTORY_ITEMS
                .iter()
                .zip(rows)
                .map(|(name, tokens)| BudgetItem {
                    name: (*name).to_owned(),
                    tokens,
                })
                .collect(),
        };

        let reserved_output = Category {
            tokens: input.reserved_output,
            items: vec![BudgetItem {
                name: "max_tokens".to_owned(),
                tokens: input.reserved_output,
            }],
        };

        let used = stable.tokens
            + context.tokens
            + volatile.tokens
            + tools.tokens
            + history.tokens
            + reserved_output.tokens;
        let free = Category {
            tokens: input.window.saturating_sub(used),
            items: Vec::new(),
        };

        Self {
            window: input.window,
            window_source: String::new(),
            reserved_output: input.reserved_output,
            effective_window: input.window.saturating_sub(input.reserved_output),
            threshold: Threshold::from_settings(input.window, input.reserved_output, input.threshold),
            boundary_tokens,
            tokenizer: input.tokenizer.to_owned(),
            exact: input.exact,
            categories: Categories {
                stable,
                context,
                volatile,
                tools,
                history,
                reserved_output,
                free,
            },
        }
    }

    /// Estimated input tokens of the request: prompt, tools and history
    /// (everything but the output reserve and free space). This is what the
    /// compression trigger compares with `threshold.effective`.
    #[must_use]
    pub fn input_tokens(&self) -> u64 {
        let c = &self.categories;
        c.stable.tokens + c.context.tokens + c.volatile.tokens + c.tools.tokens + c.history.tokens
    }

    /// This budget made to add up to a prepared request of `input_tokens`
    /// (the pipeline's `prepared_tokens` plus tool schemas): the history's
    /// `overhead` row takes what the layer and message rows leave — the
    /// request framing, the omitted-messages note and the few tokens where
    /// layers join — so that the categories sum to what is sent, and `free`
    /// is recomputed. Built from the prepared request's per-message tokens
    /// (the pipeline report's `tokens_after`), this is the budget the gauge,
    /// the pane and `strata context` show.
    #[must_use]
    pub fn fitted_to(mut self, input_tokens: u64) -> Self {
        let c = &mut self.categories;
        let is_overhead = |i: &BudgetItem| i.name == "overhead";
        let messages: u64 = c
            .history
            .items
            .iter()
            .filter(|i| !is_overhead(i))
            .map(|i| i.tokens)
            .sum();
        let rest = c.stable.tokens + c.context.tokens + c.volatile.tokens + c.tools.tokens + messages;
        let overhead = input_tokens.saturating_sub(rest);
        for item in c.history.items.iter_mut().filter(|i| is_overhead(i)) {
            item.tokens = overhead;
        }
        c.history.tokens = messages + overhead;
        c.free.tokens = self
            .window
            .saturating_sub(rest + overhead + c.reserved_output.tokens);
        self
    }

    /// Tokens by which input plus output reserve exceed the window (0 when
    /// the request fits).
    #[must_use]
    pub fn overflow(&self) -> u64 {
        (self.input_tokens() + self.reserved_output).saturating_sub(self.window)
    }

    /// Whether the input estimate has reached the compression threshold.
    #[must_use]
    pub fn over_threshold(&self) -> bool {
        self.input_tokens() >= self.threshold.effective
    }
}

#[cfg(test)]
mod tests;
