//! The styles Markdown is drawn with. The TUI's theme module builds one
//! [`MarkdownTheme`] (or takes the default) and passes it to
//! [`super::render_markdown_with`]; nothing else in `render` picks colours,
//! except highlighted code, whose colours come from the syntect theme.

use ratatui::style::{Color, Modifier, Style};

/// One style per Markdown element. Inline styles are patched over the style
/// of the block they are in (a link in a heading is bold and underlined).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkdownTheme {
    /// `# Heading` (level 1), marker included.
    pub heading1: Style,
    /// Headings of levels 2-6.
    pub heading: Style,
    /// `*emphasis*`.
    pub emphasis: Style,
    /// `**strong**`.
    pub strong: Style,
    /// `~~strikethrough~~`.
    pub strikethrough: Style,
    /// `` `inline code` ``.
    pub code_inline: Style,
    /// Code block text until (or unless) it is highlighted.
    pub code_block: Style,
    /// The fence lines around a code block (```` ```rust ````).
    pub code_fence: Style,
    /// Link text.
    pub link: Style,
    /// The ` (url)` shown after link text.
    pub link_url: Style,
    /// The `│ ` bar of a block quote.
    pub quote_bar: Style,
    /// Text inside a block quote.
    pub quote_text: Style,
    /// List bullets and numbers, task boxes.
    pub list_marker: Style,
    /// A thematic break, and table borders.
    pub rule: Style,
    /// Table header cells.
    pub table_header: Style,
    /// Raw HTML, shown as text.
    pub html: Style,
}

impl Default for MarkdownTheme {
    fn default() -> Self {
        let dim = Style::default().add_modifier(Modifier::DIM);
        Self {
            heading1: Style::default()
                .fg(Color::Cyan)
                .add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            heading: Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            emphasis: Style::default().add_modifier(Modifier::ITALIC),
            strong: Style::default().add_modifier(Modifier::BOLD),
            strikethrough: Style::default().add_modifier(Modifier::CROSSED_OUT),
            code_inline: Style::default().fg(Color::Yellow),
            code_block: Style::default().fg(Color::Gray),
            code_fence: dim,
            link: Style::default()
                .fg(Color::Blue)
                .add_modifier(Modifier::UNDERLINED),
            link_url: dim,
            quote_bar: Style::default().fg(Color::DarkGray),
            quote_text: Style::default().add_modifier(Modifier::ITALIC),
            list_marker: Style::default().fg(Color::LightBlue),
            rule: Style::default().fg(Color::DarkGray),
            table_header: Style::default().add_modifier(Modifier::BOLD),
            html: dim,
        }
    }
}
