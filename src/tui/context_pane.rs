//! The context pane: where the window goes. A stacked bar of the window,
//! one row per budget category (expandable to layers and sources), the
//! threshold (requested/effective), the cache boundary, cached tokens of
//! the last response, `~` on estimates, stale layers, the last compaction
//! and why automatic compression is blocked. It adds the draft's tokens
//! and the streaming reply's to the history live.

use super::event::ContextSnapshot;
use super::{fmt, theme};
use crate::domain::LayerName;
use crate::runtime::tool_costs::ToolServers;
use crate::tokens::Category;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

/// What the pane shows beyond the snapshot.
#[derive(Clone, Copy, Debug, Default)]
pub struct Live<'a> {
    /// Tokens of the composer's draft.
    pub draft_tokens: u64,
    /// Estimated tokens of the reply streaming now.
    pub streaming_tokens: u64,
    /// Layers changed on disk since the prompt was frozen.
    pub stale: &'a [LayerName],
    /// Show layer and source rows.
    pub detail: bool,
}

/// Draws the pane; `None` shows a placeholder while the snapshot loads.
pub fn render(snapshot: Option<&ContextSnapshot>, live: Live<'_>, area: Rect, buf: &mut Buffer) {
    let block = Block::default()
        .borders(Borders::LEFT)
        .title(Span::styled(" Context ", theme::title()))
        .title(Span::styled("? explains ", theme::dim()));
    let inner = block.inner(area);
    block.render(area, buf);
    let lines = match snapshot {
        Some(s) => lines(s, live, inner.width),
        None => vec![Line::styled("loading…", theme::dim())],
    };
    // The chart of the session's requests, below the figures when there is
    // room for both.
    let chart = super::cache_chart::HEIGHT;
    let text_rows = u16::try_from(lines.len()).unwrap_or(u16::MAX);
    let (text, plot) = match snapshot {
        Some(s) if s.requests.len() >= 2 && inner.height >= text_rows.saturating_add(chart + 1) => (
            Rect {
                height: inner.height - chart,
                ..inner
            },
            Some((
                s,
                Rect {
                    y: inner.y + inner.height - chart,
                    height: chart,
                    ..inner
                },
            )),
        ),
        _ => (inner, None),
    };
    Paragraph::new(lines).wrap(Wrap { trim: false }).render(text, buf);
    if let Some((s, area)) = plot {
        super::cache_chart::render(&s.requests, s.budget.threshold.effective, area, buf);
    }
}

fn approx(exact: bool) -> &'static str {
    if exact { "" } else { "~" }
}

/// The tools category by server (when MCP servers are configured): one
/// row each, expanded to each tool with its tokens and `deferred`; what
/// deferral saves per request.
fn server_rows(servers: &ToolServers, detail: bool, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width);
    let mut out = Vec::new();
    for server in &servers.servers {
        let deferred = server.tools.iter().filter(|t| t.deferred).count();
        let state = match server.status.as_str() {
            "ready" | "builtin" if deferred == server.tools.len() && deferred > 0 => " deferred".to_owned(),
            "ready" | "builtin" if deferred > 0 => format!(" {deferred} deferred"),
            "ready" | "builtin" => String::new(),
            other => format!(" {other}"),
        };
        let name = fmt::cut(&server.name, width.saturating_sub(16));
        out.push(Line::styled(
            format!("   {name} {}{state}", fmt::tokens(server.tokens)),
            theme::dim(),
        ));
        if detail {
            for tool in &server.tools {
                let name = fmt::cut(&tool.name, width.saturating_sub(14));
                let mark = if tool.deferred { " d" } else { "" };
                out.push(Line::styled(
                    format!("     {name} {}{mark}", fmt::tokens(tool.tokens)),
                    theme::dim(),
                ));
            }
        }
    }
    if servers.deferred_saving_tokens != 0 {
        let saved = servers.deferred_saving_tokens;
        let figure = fmt::tokens(saved.unsigned_abs());
        let line = if saved > 0 {
            format!("   deferral saves {figure}/request")
        } else {
            format!("   deferral costs {figure}/request")
        };
        out.push(Line::styled(line, theme::dim()));
    }
    out
}

/// The pane's lines for a width.
#[must_use]
pub fn lines(s: &ContextSnapshot, live: Live<'_>, width: u16) -> Vec<Line<'static>> {
    let b = &s.budget;
    let a = approx(b.exact);
    let extra = live.draft_tokens + live.streaming_tokens;
    let c = &b.categories;
    let totals_of = [
        &c.stable,
        &c.context,
        &c.volatile,
        &c.tools,
        &c.history,
        &c.reserved_output,
        &c.free,
    ];
    let cats: Vec<(&str, &Category)> = super::legend::CATEGORIES
        .iter()
        .zip(totals_of)
        .map(|((label, _), cat)| (*label, cat))
        .collect();
    let mut totals: Vec<u64> = cats.iter().map(|(_, c)| c.tokens).collect();
    totals[4] += extra;
    totals[6] = totals[6].saturating_sub(extra);
    let input: u64 = totals[..5].iter().sum();
    let mut out = vec![
        Line::from(vec![
            Span::raw(format!(
                "input {a}{} / {}",
                fmt::tokens(input),
                fmt::tokens(b.window)
            )),
            Span::styled(window_source_label(&b.window_source), theme::dim()),
            Span::styled(format!("  {}", b.tokenizer), theme::dim()),
        ]),
        bar(&totals, b.window, width),
    ];
    for (i, (name, cat)) in cats.iter().enumerate() {
        // Tools that are off say why instead of showing 0.
        let off = (i == 3).then_some(s.tools_off.as_deref()).flatten();
        // The history's figure is its messages alone: the framing is in
        // the input total and, expanded, a row of its own.
        let shown = if i == 4 {
            totals[i].saturating_sub(framing(cat))
        } else {
            totals[i]
        };
        let figure = match off {
            Some(_) => format!("{:>7}", "off"),
            None => format!("{a}{:>6}", fmt::tokens(shown)),
        };
        out.push(Line::from(vec![
            Span::styled("■ ", theme::category(i)),
            Span::raw(format!("{name:<10}{figure}")),
        ]));
        if let Some(why) = off {
            let why = fmt::cut(why, usize::from(width).saturating_sub(3));
            out.push(Line::styled(format!("   {why}"), theme::dim()));
        }
        if i == 3
            && off.is_none()
            && let Some(note) = &s.sandbox_note
        {
            let note = fmt::cut(&format!("⚠ {note}"), usize::from(width).saturating_sub(3));
            out.push(Line::styled(format!("   {note}"), theme::warning()));
        }
        let by_server = s.tool_servers.as_ref().filter(|t| t.mcp().next().is_some());
        if i == 3
            && let Some(servers) = by_server
        {
            out.extend(server_rows(servers, live.detail, width));
        } else if live.detail {
            for item in &cat.items {
                let stale = live
                    .stale
                    .iter()
                    .any(|l| item.name == l.as_str() || item.name.starts_with(&format!("{}:", l.as_str())));
                let name = if i == 4 && item.name == "overhead" {
                    "framing"
                } else {
                    &item.name
                };
                let name = fmt::cut(name, usize::from(width).saturating_sub(12));
                let mut spans = vec![Span::styled(
                    format!("   {name} {}", fmt::tokens(item.tokens)),
                    theme::dim(),
                )];
                if stale {
                    spans.push(Span::styled(" stale", theme::stale()));
                }
                out.push(Line::from(spans));
            }
        }
        if i == 4 && live.draft_tokens > 0 {
            out.push(Line::styled(
                format!("   + draft {}", fmt::tokens(live.draft_tokens)),
                theme::dim(),
            ));
        }
        if i == 4 && live.streaming_tokens > 0 {
            out.push(Line::styled(
                format!("   + reply ~{}", fmt::tokens(live.streaming_tokens)),
                theme::dim(),
            ));
        }
        if i == 1 {
            out.push(Line::styled(
                format!("── cache boundary {a}{} ──", fmt::tokens(b.boundary_tokens)),
                theme::boundary(),
            ));
        }
    }
    out.extend(threshold_lines(b));
    if let Some(p) = s.prepared_tokens {
        out.push(Line::raw(format!("next request {a}{}", fmt::tokens(p))));
    }
    // The other two figures, when the pipeline cut, pruned or dropped
    // something (otherwise they differ from what is sent only by framing).
    let prelimit = s.prelimit_tokens.filter(|&t| Some(t) != s.prepared_tokens);
    let stored = Some(s.stored_tokens).filter(|&t| t > 0 && Some(t) != s.prepared_tokens);
    let reduced = s.report.iter().any(|r| {
        !matches!(
            r.action,
            crate::pipeline::Action::Kept | crate::pipeline::Action::Merged
        )
    });
    if reduced && (prelimit.is_some() || stored.is_some()) {
        let show = |v: Option<u64>| v.map_or_else(|| "–".to_owned(), |t| format!("{a}{}", fmt::tokens(t)));
        out.push(Line::styled(
            format!(
                "before fitting {} · stored {}",
                show(prelimit.or(s.prelimit_tokens)),
                show(Some(s.stored_tokens))
            ),
            theme::dim(),
        ));
    }
    out.extend(super::cache_view::compression_warning(s));
    out.extend(super::cache_view::cache_lines(s));
    if !live.stale.is_empty() {
        let names: Vec<&str> = live.stale.iter().map(|l| l.as_str()).collect();
        out.push(Line::styled(
            format!("stale: {}", names.join(", ")),
            theme::stale(),
        ));
        out.push(Line::styled("/reload or /new applies", theme::stale()));
    }
    for w in &s.prompt_warnings {
        let w = fmt::cut(w, usize::from(width).saturating_sub(2));
        out.push(Line::styled(format!("⚠ {w}"), theme::stale()));
    }
    if let Some(c) = &s.last_compaction {
        let how = match c.trigger {
            crate::domain::CompactionTrigger::Auto => "auto",
            crate::domain::CompactionTrigger::Manual => "manual",
            crate::domain::CompactionTrigger::Overflow => "overflow",
        };
        let undone = if c.undone_at.is_some() { " (undone)" } else { "" };
        out.push(Line::raw(format!(
            "compacted {how} {}→{}{undone}",
            fmt::tokens(c.tokens_before),
            fmt::tokens(c.tokens_after)
        )));
    }
    if let Some(reason) = &s.blocked_reason {
        out.push(Line::styled(
            format!("compression blocked: {reason}"),
            theme::error(),
        ));
    }
    if let Some(e) = &s.prepare_error {
        out.push(Line::styled(e.clone(), theme::error()));
    }
    out
}

/// The history category's framing row (`overhead`): the tokens every
/// request spends on roles and reply priming.
fn framing(history: &Category) -> u64 {
    history
        .items
        .iter()
        .filter(|i| i.name == "overhead")
        .map(|i| i.tokens)
        .sum()
}

/// `threshold 5.2k (85 % of usable)`, and, when the value in
/// force is not what the config asks, what it asks and why it differs.
fn threshold_lines(b: &crate::tokens::Budget) -> Vec<Line<'static>> {
    use crate::tokens::Adjustment;
    let t = &b.threshold;
    let mut out = vec![Line::raw(format!(
        "threshold {} ({} % of usable)",
        fmt::tokens(t.effective),
        t.percent_of(b.effective_window)
    ))];
    let why = match t.adjustment(b.effective_window) {
        Adjustment::None => return out,
        Adjustment::Floor => format!(
            "raised to the {} floor",
            fmt::tokens(crate::tokens::THRESHOLD_FLOOR)
        ),
        Adjustment::SmallWindow => format!("held at {} % of usable", crate::tokens::SMALL_WINDOW_PERCENT),
        Adjustment::Capped => "lowered to the cap".to_owned(),
    };
    let asked = crate::tokens::Threshold {
        effective: t.requested,
        ..*t
    }
    .percent_of(b.effective_window);
    out.push(Line::styled(
        format!("  asked {} ({asked} %); {why}", fmt::tokens(t.requested)),
        theme::dim(),
    ));
    out
}

/// Where the window comes from, when it is not strata's catalog: what the
/// server said, what an overflow error stated, or the config.
fn window_source_label(source: &str) -> &'static str {
    match source {
        "server" => " (server)",
        "overflow_error" => " (overflow error)",
        "config" => " (config)",
        _ => "",
    }
}

/// A stacked bar of the window, one coloured run per category.
fn bar(totals: &[u64], window: u64, width: u16) -> Line<'static> {
    let cells = usize::from(width);
    if cells == 0 || window == 0 {
        return Line::default();
    }
    let mut spans = Vec::new();
    let mut used = 0usize;
    let mut acc = 0u64;
    for (i, t) in totals.iter().enumerate() {
        acc += t;
        let end = usize::try_from((u128::from(acc.min(window)) * cells as u128 / u128::from(window)) as u64)
            .unwrap_or(cells)
            .min(cells);
        let end = if i + 1 == totals.len() { cells } else { end };
        if end > used {
            let glyph = if i + 1 == totals.len() { "░" } else { "█" };
            spans.push(Span::styled(glyph.repeat(end - used), theme::category(i)));
            used = end;
        }
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Fingerprint, PromptId, PromptMode, SessionId, SystemPrompt};
    use crate::tokens::{Budget, BudgetInput, ThresholdSettings};

    fn snapshot(tools_off: Option<&str>) -> ContextSnapshot {
        let session_id = SessionId::new();
        let prompt = SystemPrompt {
            id: PromptId::new(),
            session_id,
            version: 1,
            text: "p".into(),
            layers: Vec::new(),
            boundary_offset: None,
            sha256: String::new(),
            fingerprint: Fingerprint {
                provider: crate::domain::ProviderKind::Local,
                model: "m".into(),
                mode: PromptMode::Minimal,
                tool_set_hash: String::new(),
                template_version: 1,
            },
            created_at: 0,
        };
        let budget = Budget::compute(BudgetInput {
            layers: &[],
            boundary_offset: None,
            history: &[],
            history_tokens: &[],
            tools: &[],
            window: 4_096,
            reserved_output: 512,
            threshold: ThresholdSettings::default(),
            tokenizer: "gguf",
            exact: true,
        });
        ContextSnapshot {
            prompt,
            budget,
            report: Vec::new(),
            prepared_tokens: None,
            prelimit_tokens: None,
            compression_helps: false,
            stored_tokens: 0,
            prepare_error: None,
            last_usage: None,
            requests: Vec::new(),
            last_compaction: None,
            blocked_reason: None,
            tools_off: tools_off.map(str::to_owned),
            sandbox_note: None,
            tool_servers: None,
            prompt_warnings: Vec::new(),
        }
    }

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn what_the_prompt_leaves_out_is_shown_in_the_pane() {
        let mut s = snapshot(None);
        s.prompt_warnings =
            vec!["The minimal prompt mode leaves out /w/CLAUDE.md; the model does not see them.".into()];
        let shown = text(&lines(&s, Live::default(), 60));
        assert!(
            shown
                .iter()
                .any(|l| l.starts_with("⚠ The minimal prompt mode leaves out")),
            "{shown:?}"
        );
        assert!(
            !text(&lines(&snapshot(None), Live::default(), 60))
                .iter()
                .any(|l| l.starts_with('⚠'))
        );
    }

    #[test]
    fn a_shell_the_kernel_cannot_sandbox_is_said_under_the_tools_row() {
        let mut s = snapshot(None);
        s.sandbox_note = Some("shell is not sandboxed: this kernel has no Landlock".into());
        let shown = text(&lines(&s, Live::default(), 60));
        let row = shown.iter().position(|l| l.contains("tools")).unwrap();
        assert_eq!(
            shown[row + 1].trim(),
            "⚠ shell is not sandboxed: this kernel has no Landlock"
        );
        let plain = text(&lines(&snapshot(None), Live::default(), 60));
        assert!(!plain.iter().any(|l| l.contains("sandboxed")), "{plain:?}");
    }

    #[test]
    fn tools_that_are_off_say_why_instead_of_zero() {
        let live = Live::default();
        let off = text(&lines(
            &snapshot(Some("the embedded model has no tool calling")),
            live,
            60,
        ));
        let row = off.iter().position(|l| l.contains("tools")).unwrap();
        assert!(off[row].ends_with("off"), "{off:?}");
        assert!(off[row + 1].contains("the embedded model has no tool calling"));
        let on = text(&lines(&snapshot(None), Live::default(), 40));
        let row = on.iter().position(|l| l.contains("tools")).unwrap();
        assert!(on[row].ends_with('0'), "{on:?}");
        assert!(!on[row + 1].contains("tool"));
    }

    #[test]
    fn the_tools_category_shows_each_server_and_expanded_each_tool() {
        use crate::runtime::tool_costs::{ServerCost, ToolCostRow, ToolServers};
        let row = |name: &str, tokens: u64, deferred: bool| ToolCostRow {
            name: name.into(),
            tokens,
            deferred,
        };
        let mut s = snapshot(None);
        s.tool_servers = Some(ToolServers {
            servers: vec![
                ServerCost {
                    name: "builtin".into(),
                    status: "builtin".into(),
                    why: None,
                    tokens: 1_900,
                    tools: vec![row("read_file", 1_500, false), row("tool_search", 400, false)],
                },
                ServerCost {
                    name: "time".into(),
                    status: "ready".into(),
                    why: None,
                    tokens: 420,
                    tools: vec![
                        row("time__convert_time", 260, true),
                        row("time__get_current_time", 160, true),
                    ],
                },
                ServerCost {
                    name: "gone".into(),
                    status: "unavailable".into(),
                    why: Some("It exited.".into()),
                    tokens: 0,
                    tools: Vec::new(),
                },
            ],
            deferred_saving_tokens: 2_300,
        });
        let collapsed = text(&lines(&s, Live::default(), 60));
        let at = collapsed.iter().position(|l| l.contains("■ tools")).unwrap();
        assert_eq!(collapsed[at + 1].trim(), "builtin 1.9k");
        assert_eq!(collapsed[at + 2].trim(), "time 420 deferred");
        assert_eq!(collapsed[at + 3].trim(), "gone 0 unavailable");
        assert_eq!(collapsed[at + 4].trim(), "deferral saves 2.3k/request");
        let expanded = text(&lines(
            &s,
            Live {
                detail: true,
                ..Live::default()
            },
            60,
        ));
        let at = expanded.iter().position(|l| l.contains("■ tools")).unwrap();
        assert_eq!(expanded[at + 2].trim(), "read_file 1.5k");
        assert_eq!(expanded[at + 5].trim(), "time__convert_time 260 d");
    }
}
