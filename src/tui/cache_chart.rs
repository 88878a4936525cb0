//! The session at a glance: a chart of every request's prompt tokens and
//! cached tokens, the compression threshold drawn across, compactions and
//! cache breaks marked (ratatui's `Chart`, Braille lines).

use super::{fmt, theme};
use crate::runtime::cache_report::RequestPoint;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, LegendPosition, Widget};

/// Rows the chart takes: a caption and the plot.
pub const HEIGHT: u16 = 7;

/// Draws the chart of `requests` with `threshold` into `area` (nothing
/// for fewer than two requests).
pub fn render(requests: &[RequestPoint], threshold: u64, area: Rect, buf: &mut Buffer) {
    if requests.len() < 2 || area.height < 3 || area.width < 10 {
        return;
    }
    let point = |i: usize, v: u64| {
        #[allow(clippy::cast_precision_loss)]
        let p = (i as f64, v as f64);
        p
    };
    let prompt: Vec<(f64, f64)> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| point(i, r.prompt_tokens))
        .collect();
    let cached: Vec<(f64, f64)> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| point(i, r.cached_tokens.unwrap_or(0)))
        .collect();
    let last = requests.len() - 1;
    let threshold_line = vec![point(0, threshold), point(last, threshold)];
    let breaks: Vec<(f64, f64)> = requests
        .iter()
        .enumerate()
        .filter(|(_, r)| r.cache_break.is_some())
        .map(|(i, r)| point(i, r.prompt_tokens))
        .collect();
    let compactions: Vec<(f64, f64)> = requests
        .iter()
        .enumerate()
        .filter(|(_, r)| r.compaction)
        .map(|(i, r)| point(i, r.prompt_tokens))
        .collect();
    let top = requests
        .iter()
        .map(|r| r.prompt_tokens)
        .max()
        .unwrap_or(0)
        .max(threshold)
        .max(1);
    let caption = Line::from(vec![
        Span::styled("prompt", theme::category(4)),
        Span::styled(" · ", theme::dim()),
        Span::styled("cached", theme::category(0)),
        Span::styled(" · ", theme::dim()),
        Span::styled("threshold", theme::dim()),
        Span::styled(format!(" · {} req", requests.len()), theme::dim()),
    ]);
    let caption_area = Rect { height: 1, ..area };
    caption.render(caption_area, buf);
    let plot = Rect {
        y: area.y + 1,
        height: area.height - 1,
        ..area
    };
    let line = |data, style| {
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(style)
            .data(data)
    };
    let dots = |data, style| {
        Dataset::default()
            .marker(Marker::Dot)
            .graph_type(GraphType::Scatter)
            .style(style)
            .data(data)
    };
    let mut datasets = vec![
        line(&threshold_line, theme::dim()),
        line(&prompt, theme::category(4)),
        line(&cached, theme::category(0)),
    ];
    if !compactions.is_empty() {
        datasets.push(dots(&compactions, theme::boundary()));
    }
    if !breaks.is_empty() {
        datasets.push(dots(&breaks, theme::warning()));
    }
    #[allow(clippy::cast_precision_loss)]
    let (x_max, y_max) = (last.max(1) as f64, top as f64 * 1.05);
    Chart::new(datasets)
        .legend_position(None::<LegendPosition>)
        .x_axis(Axis::default().bounds([0.0, x_max]).style(Style::default()))
        .y_axis(
            Axis::default()
                .bounds([0.0, y_max])
                .labels([
                    Line::styled("0", theme::dim()),
                    Line::styled(fmt::tokens(top), theme::dim()),
                ])
                .style(theme::dim()),
        )
        .render(plot, buf);
}
