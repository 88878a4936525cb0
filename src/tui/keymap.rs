//! Keybindings as data: a key maps to an [`Action`]. Defaults are built in;
//! the config's `[ui.keys]` table overrides them, e.g.
//! `[ui.keys]` / `"ctrl-t" = "toggle_context"`. Keys the map does not hold
//! go to the composer (or the open overlay), where the readline keys edit
//! (see `readline`): so the panes toggle on F-keys by default, and Ctrl-A,
//! Ctrl-E, Ctrl-D, Ctrl-W, Ctrl-K, Alt-B and Alt-F are left unbound.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::HashMap;

/// What a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Send the composer's text (or run the slash command).
    Send,
    /// Insert a newline in the composer.
    Newline,
    /// Cancel the reply in progress; when idle, pressed twice, quit.
    Interrupt,
    /// Recall the previous input (on the composer's first line).
    HistoryPrev,
    /// Recall the next input (on the composer's last line).
    HistoryNext,
    /// Complete a slash command.
    Complete,
    /// Scroll the chat up a few rows.
    ScrollUp,
    /// Scroll the chat down a few rows.
    ScrollDown,
    /// Scroll the chat a page up.
    PageUp,
    /// Scroll the chat a page down.
    PageDown,
    /// Jump to the newest message.
    Bottom,
    /// Show or hide the context pane.
    ToggleContext,
    /// Expand or collapse the context pane's layer and source rows.
    ToggleDetail,
    /// Expand or collapse compaction summaries and long pastes in the
    /// chat; with a folded paste in the composer, open it into its text.
    ToggleSummaries,
    /// Show or hide archived originals.
    ToggleArchived,
    /// Select the chat's tool blocks (the newest first): then Up and Down
    /// move between them, Enter or Tab expands or collapses the selected
    /// one, Esc or typing goes back to the composer.
    SelectTools,
    /// Select the chat's messages (the newest first): then Up and Down (or
    /// k and j) move between them, p pins, x excludes, e edits a message
    /// of yours and resends it, c compresses up to the selected one, Enter
    /// opens it, Esc goes back to the composer.
    SelectMessages,
    /// Open the context list: every message with its state in the next
    /// request and its tokens.
    ContextList,
    /// Open the session picker.
    Sessions,
    /// Open help.
    Help,
    /// Open the notices log.
    Notices,
    /// Close the overlay.
    Close,
}

impl Action {
    /// The config name (`toggle_context`, ...).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Send => "send",
            Self::Newline => "newline",
            Self::Interrupt => "interrupt",
            Self::HistoryPrev => "history_prev",
            Self::HistoryNext => "history_next",
            Self::Complete => "complete",
            Self::ScrollUp => "scroll_up",
            Self::ScrollDown => "scroll_down",
            Self::PageUp => "page_up",
            Self::PageDown => "page_down",
            Self::Bottom => "bottom",
            Self::ToggleContext => "toggle_context",
            Self::ToggleDetail => "toggle_detail",
            Self::ToggleSummaries => "toggle_summaries",
            Self::ToggleArchived => "toggle_archived",
            Self::SelectTools => "select_tools",
            Self::SelectMessages => "select_messages",
            Self::ContextList => "context_list",
            Self::Sessions => "sessions",
            Self::Help => "help",
            Self::Notices => "notices",
            Self::Close => "close",
        }
    }

    /// What it does, for help.
    #[must_use]
    pub fn description(self) -> &'static str {
        match self {
            Self::Send => "send the message or run the command",
            Self::Newline => "new line in the message",
            Self::Interrupt => "cancel the reply (keeps it); twice when idle: quit",
            Self::HistoryPrev => "previous input",
            Self::HistoryNext => "next input",
            Self::Complete => "complete a /command",
            Self::ScrollUp => "scroll up",
            Self::ScrollDown => "scroll down",
            Self::PageUp => "page up",
            Self::PageDown => "page down",
            Self::Bottom => "jump to the newest message",
            Self::ToggleContext => "show or hide the context pane",
            Self::ToggleDetail => "expand layers and sources in the context pane",
            Self::ToggleSummaries => "expand or collapse summaries and pastes",
            Self::ToggleArchived => "show or hide archived originals",
            Self::SelectTools => "select tool blocks: Up/Down move, Enter expands, Esc returns",
            Self::SelectMessages => {
                "select messages: Up/Down move, p pin, x exclude, e edit, c compress to here"
            }
            Self::ContextList => "the context list: every message, its state in the next request, its tokens",
            Self::Sessions => "session picker",
            Self::Help => "help",
            Self::Notices => "the notices log: every notice, warning and error, whole, newest first",
            Self::Close => "close the overlay",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        ALL_ACTIONS.iter().copied().find(|a| a.name() == name)
    }
}

const ALL_ACTIONS: [Action; 22] = [
    Action::Send,
    Action::Newline,
    Action::Interrupt,
    Action::HistoryPrev,
    Action::HistoryNext,
    Action::Complete,
    Action::ScrollUp,
    Action::ScrollDown,
    Action::PageUp,
    Action::PageDown,
    Action::Bottom,
    Action::ToggleContext,
    Action::ToggleDetail,
    Action::ToggleSummaries,
    Action::ToggleArchived,
    Action::SelectTools,
    Action::SelectMessages,
    Action::ContextList,
    Action::Sessions,
    Action::Help,
    Action::Notices,
    Action::Close,
];

/// A key with its modifiers (Shift is kept only for non-character keys,
/// since it is already in the character; Shift-Tab is `BackTab` alone, as
/// terminals send it with or without the modifier).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// The key.
    pub code: KeyCode,
    /// Ctrl, Alt, Shift.
    pub modifiers: KeyModifiers,
}

impl Key {
    /// A key from a terminal event.
    #[must_use]
    pub fn from_event(e: &KeyEvent) -> Self {
        let mut modifiers = e.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let code = match e.code {
            KeyCode::Char(c) => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::Char(c.to_ascii_lowercase())
            }
            KeyCode::BackTab => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            other => other,
        };
        Self { code, modifiers }
    }

    /// Parses `ctrl-c`, `alt-enter`, `shift-enter`, `shift-tab`, `f1`,
    /// `pageup`, `esc`, `tab`, `up`, `x`.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let lower = text.trim().to_ascii_lowercase();
        let mut parts: Vec<&str> = lower.split('-').collect();
        let last = parts.pop()?;
        let mut modifiers = KeyModifiers::NONE;
        for p in parts {
            modifiers |= match p {
                "ctrl" | "c" => KeyModifiers::CONTROL,
                "alt" | "a" | "m" => KeyModifiers::ALT,
                "shift" | "s" => KeyModifiers::SHIFT,
                _ => return None,
            };
        }
        let code = match last {
            "enter" | "return" => KeyCode::Enter,
            "esc" | "escape" => KeyCode::Esc,
            "tab" if modifiers.contains(KeyModifiers::SHIFT) => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "pageup" => KeyCode::PageUp,
            "pagedown" => KeyCode::PageDown,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            f if f.len() >= 2 && f.starts_with('f') => KeyCode::F(f[1..].parse().ok()?),
            c if c.chars().count() == 1 => KeyCode::Char(c.chars().next()?),
            _ => return None,
        };
        Some(Self { code, modifiers })
    }

    /// `ctrl-c`, `f1`, ... (for help).
    #[must_use]
    pub fn label(&self) -> String {
        let mut s = String::new();
        if self.modifiers.contains(KeyModifiers::CONTROL) {
            s.push_str("Ctrl-");
        }
        if self.modifiers.contains(KeyModifiers::ALT) {
            s.push_str("Alt-");
        }
        if self.modifiers.contains(KeyModifiers::SHIFT) {
            s.push_str("Shift-");
        }
        match self.code {
            KeyCode::Char(c) => s.push(c.to_ascii_uppercase()),
            KeyCode::F(n) => s.push_str(&format!("F{n}")),
            KeyCode::PageUp => s.push_str("PgUp"),
            KeyCode::PageDown => s.push_str("PgDn"),
            KeyCode::BackTab => s.push_str("Shift-Tab"),
            other => s.push_str(&format!("{other:?}")),
        }
        s
    }
}

/// Key → action.
#[derive(Clone, Debug)]
pub struct KeyMap {
    map: HashMap<Key, Action>,
}

const DEFAULTS: &[(&str, Action)] = &[
    ("enter", Action::Send),
    ("alt-enter", Action::Newline),
    ("shift-enter", Action::Newline),
    ("ctrl-j", Action::Newline),
    ("ctrl-c", Action::Interrupt),
    ("up", Action::HistoryPrev),
    ("down", Action::HistoryNext),
    ("tab", Action::Complete),
    ("alt-up", Action::ScrollUp),
    ("alt-down", Action::ScrollDown),
    ("pageup", Action::PageUp),
    ("pagedown", Action::PageDown),
    ("ctrl-end", Action::Bottom),
    ("f2", Action::ToggleContext),
    ("ctrl-t", Action::ToggleContext),
    ("f3", Action::ToggleDetail),
    ("f4", Action::ToggleSummaries),
    ("f5", Action::ToggleArchived),
    ("shift-tab", Action::SelectTools),
    ("f7", Action::SelectMessages),
    ("f8", Action::ContextList),
    ("ctrl-o", Action::Sessions),
    ("f1", Action::Help),
    ("f6", Action::Notices),
    ("esc", Action::Close),
];

impl Default for KeyMap {
    fn default() -> Self {
        let map = DEFAULTS
            .iter()
            .filter_map(|(k, a)| Key::parse(k).map(|k| (k, *a)))
            .collect();
        Self { map }
    }
}

impl KeyMap {
    /// The defaults with `[ui.keys]` applied from the config's `[ui]`
    /// table; each entry `"KEY" = "action"` binds a key (an action name of
    /// `"none"` unbinds it). Returns the map and one warning per entry that
    /// could not be used.
    #[must_use]
    pub fn from_config(ui: &toml::Table) -> (Self, Vec<String>) {
        let mut keymap = Self::default();
        let mut warnings = Vec::new();
        let Some(keys) = ui.get("keys").and_then(toml::Value::as_table) else {
            return (keymap, warnings);
        };
        for (key, value) in keys {
            let Some(k) = Key::parse(key) else {
                warnings.push(format!(
                    "config.toml: [ui.keys] '{key}' is not a key; use names like ctrl-t or f2"
                ));
                continue;
            };
            match value.as_str() {
                Some("none") => {
                    keymap.map.remove(&k);
                }
                Some(name) => match Action::parse(name) {
                    Some(a) => {
                        keymap.map.insert(k, a);
                    }
                    None => warnings.push(format!(
                        "config.toml: [ui.keys] '{key}' names an unknown action '{name}'; see /help for the names"
                    )),
                },
                None => warnings.push(format!(
                    "config.toml: [ui.keys] '{key}' must be an action name in quotes"
                )),
            }
        }
        (keymap, warnings)
    }

    /// The action bound to a key event.
    #[must_use]
    pub fn action(&self, e: &KeyEvent) -> Option<Action> {
        self.map.get(&Key::from_event(e)).copied()
    }

    /// The label of the first key bound to `action` (`Ctrl-E`), if any.
    #[must_use]
    pub fn label_for(&self, action: Action) -> Option<String> {
        self.bindings()
            .into_iter()
            .find(|(_, a)| *a == action)
            .map(|(l, _)| l)
    }

    /// Every binding, sorted by action then key label (for help).
    #[must_use]
    pub fn bindings(&self) -> Vec<(String, Action)> {
        let mut v: Vec<(String, Action)> = self.map.iter().map(|(k, a)| (k.label(), *a)).collect();
        v.sort_by_key(|(label, a)| (ALL_ACTIONS.iter().position(|x| x == a), label.clone()));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn defaults_bind_enter_and_ctrl_c() {
        let k = KeyMap::default();
        assert_eq!(
            k.action(&ev(KeyCode::Enter, KeyModifiers::NONE)),
            Some(Action::Send)
        );
        assert_eq!(
            k.action(&ev(KeyCode::Enter, KeyModifiers::ALT)),
            Some(Action::Newline)
        );
        assert_eq!(
            k.action(&ev(KeyCode::Enter, KeyModifiers::SHIFT)),
            Some(Action::Newline)
        );
        assert_eq!(
            k.action(&ev(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Interrupt)
        );
        assert_eq!(k.action(&ev(KeyCode::Char('x'), KeyModifiers::NONE)), None);
    }

    #[test]
    fn shift_tab_selects_tools_with_or_without_the_shift_flag() {
        let k = KeyMap::default();
        for m in [KeyModifiers::SHIFT, KeyModifiers::NONE] {
            assert_eq!(k.action(&ev(KeyCode::BackTab, m)), Some(Action::SelectTools));
        }
        assert_eq!(Key::parse("backtab"), Key::parse("shift-tab"));
        assert_eq!(k.label_for(Action::SelectTools).as_deref(), Some("Shift-Tab"));
    }

    #[test]
    fn readline_keys_are_unbound_and_the_panes_toggle_on_f_keys() {
        let k = KeyMap::default();
        for c in ['a', 'e', 'd', 'w', 'k', 'u', 'y', 'b', 'f'] {
            assert_eq!(
                k.action(&ev(KeyCode::Char(c), KeyModifiers::CONTROL)),
                None,
                "ctrl-{c}"
            );
        }
        for c in ['b', 'f', 'd'] {
            assert_eq!(
                k.action(&ev(KeyCode::Char(c), KeyModifiers::ALT)),
                None,
                "alt-{c}"
            );
        }
        let f = |n| k.action(&ev(KeyCode::F(n), KeyModifiers::NONE));
        assert_eq!(f(2), Some(Action::ToggleContext));
        assert_eq!(f(3), Some(Action::ToggleDetail));
        assert_eq!(f(4), Some(Action::ToggleSummaries));
        assert_eq!(f(5), Some(Action::ToggleArchived));
        assert_eq!(f(7), Some(Action::SelectMessages));
        assert_eq!(f(8), Some(Action::ContextList));
        assert_eq!(k.label_for(Action::ToggleSummaries).as_deref(), Some("F4"));
    }

    #[test]
    fn config_overrides_rebind_and_unbind() {
        let ui: toml::Table = toml::from_str(
            "[keys]\n\"f9\" = \"toggle_context\"\n\"ctrl-t\" = \"none\"\n\"ctrl-q\" = \"bogus\"\n\"nokey-x\" = \"help\"\n",
        )
        .unwrap();
        let (k, warnings) = KeyMap::from_config(&ui);
        assert_eq!(
            k.action(&ev(KeyCode::F(9), KeyModifiers::NONE)),
            Some(Action::ToggleContext)
        );
        assert_eq!(k.action(&ev(KeyCode::Char('t'), KeyModifiers::CONTROL)), None);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
    }
}
