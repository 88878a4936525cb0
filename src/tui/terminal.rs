//! The terminal side: entering and leaving the full screen (restored on
//! exit, on error and on panic), and the one event loop that owns the
//! terminal. It feeds terminal input, background results and ticks to the
//! app, hands its ops to the session's handle, and draws when something changed, at
//! most [`MAX_FPS`] times a second, after draining every queued event.
//! It runs one effect itself, [`Effect::EditInEditor`]: the full screen is
//! suspended while the user's editor has the terminal (see `editor`).

use super::app::App;
use super::event::{AppEvent, Effect, Opening};
use super::keymap::KeyMap;
use super::view;
use crate::domain::SessionId;
use crate::render::{Highlighter, HighlighterOptions};
use crate::runtime::SessionHandle;
use crate::runtime::input_history::HistoryEvent;
use crate::runtime::service::{Launch, ServiceEvent, Sink};
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, Event, EventStream,
    KeyboardEnhancementFlags, MouseEventKind, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use futures::StreamExt;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Frames per second at most.
pub const MAX_FPS: u64 = 120;

/// Rows scrolled per wheel notch.
const WHEEL_ROWS: i32 = 3;

/// How the app ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ended {
    /// The session open then (`None` for a new session nothing was sent
    /// in), so the caller can say how to come back to it.
    pub session: Option<SessionId>,
    /// The signal that ended it (`SIGTERM`, `SIGHUP`, `SIGINT` or
    /// `SIGQUIT` sent to the process), if one did.
    pub signal: Option<i32>,
}

/// Runs the app until the user quits or a signal ends it; returns how it
/// ended once the terminal is restored.
///
/// # Errors
/// When the terminal cannot be set up or drawn to.
pub fn run(launch: Launch) -> anyhow::Result<Ended> {
    use std::io::IsTerminal as _;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "the full-screen app needs a terminal on standard input and output; run it in a terminal, or use `strata chat MESSAGE` from scripts"
        );
    }
    let (keymap, warnings) = KeyMap::from_config(&launch.config.ui);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let mut terminal = ratatui::try_init()?;
    let enhanced = setup_extras();
    let result = rt.block_on(event_loop(&mut terminal, launch, keymap, warnings, enhanced));
    teardown_extras(enhanced);
    ratatui::restore();
    result
}

/// Mouse capture, bracketed paste and (where supported) key disambiguation
/// so Shift-Enter is seen; undone by [`teardown_extras`] and by the panic hook.
fn setup_extras() -> bool {
    let enhanced = crossterm::terminal::supports_keyboard_enhancement().unwrap_or(false);
    enable_extras(enhanced);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        teardown_extras(enhanced);
        ratatui::restore();
        previous(info);
    }));
    enhanced
}

fn enable_extras(enhanced: bool) {
    let mut out = std::io::stdout();
    let _ = crossterm::execute!(out, EnableMouseCapture, EnableBracketedPaste);
    if enhanced {
        let _ = crossterm::execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        );
    }
}

/// Hands the terminal to the user's editor for `text` and takes it back:
/// the input stream is dropped first (so it reads none of the editor's
/// keys), the full screen left, then entered again and redrawn whole.
/// Returns the events that answer [`Effect::EditInEditor`].
fn suspended_edit(
    terminal: &mut ratatui::DefaultTerminal,
    input: &mut EventStream,
    enhanced: bool,
    env: &crate::runtime::service::EnvLookup,
    text: &str,
) -> Vec<AppEvent> {
    *input = EventStream::new();
    teardown_extras(enhanced);
    ratatui::restore();
    let result = super::editor::edit(text, env);
    let back = crossterm::terminal::enable_raw_mode()
        .and_then(|()| crossterm::execute!(std::io::stdout(), crossterm::terminal::EnterAlternateScreen));
    enable_extras(enhanced);
    let _ = terminal.clear();
    let mut events = Vec::new();
    if let Err(e) = back {
        events.push(AppEvent::Failed(format!(
            "cannot take the terminal back from the editor ({e}); restart strata if the screen stays wrong"
        )));
    }
    match result {
        Ok(edited) => events.push(AppEvent::Edited(Some(edited))),
        Err(e) => {
            events.push(AppEvent::Failed(e.to_string()));
            events.push(AppEvent::Edited(None));
        }
    }
    events
}

fn teardown_extras(enhanced: bool) {
    let mut out = std::io::stdout();
    if enhanced {
        let _ = crossterm::execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = crossterm::execute!(out, DisableMouseCapture, DisableBracketedPaste);
}

/// A terminal event as an app event (`None` for events the app ignores).
#[must_use]
pub fn translate(event: Event) -> Option<AppEvent> {
    match event {
        Event::Key(k) => Some(AppEvent::Key(k)),
        Event::Paste(s) => Some(AppEvent::Paste(s)),
        Event::Resize(width, height) => Some(AppEvent::Resize { width, height }),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollUp => Some(AppEvent::Wheel(WHEEL_ROWS)),
            MouseEventKind::ScrollDown => Some(AppEvent::Wheel(-WHEEL_ROWS)),
            _ => None,
        },
        _ => None,
    }
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    launch: Launch,
    keymap: KeyMap,
    warnings: Vec<String>,
    enhanced: bool,
) -> anyhow::Result<Ended> {
    // Signals end the loop like a quit, so the terminal is restored.
    let mut signals = Signals::new()?;
    let size = terminal.size()?;
    let mut app = App::new(keymap, size.width, size.height);
    app.set_compress_preview(launch.config.compression.preview);
    if let Some(w) = warnings.first() {
        app.handle(AppEvent::Failed(w.clone()));
    }
    let opening = launch.opening.clone();
    let env = std::sync::Arc::clone(&launch.env);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let waker = tx.clone();
    app.set_highlighter(Highlighter::spawn_with(HighlighterOptions {
        theme: None,
        waker: Some(Box::new(move || {
            let _ = waker.send(AppEvent::Highlighted);
        })),
    }));
    let handle = open_session(launch, tx);
    let mut pending: Vec<Effect> = Vec::new();
    if opening == Opening::Picker {
        pending.extend(app.open_sessions());
    }
    let mut input = EventStream::new();
    let frame = Duration::from_millis(1_000 / MAX_FPS);
    let mut last_draw: Option<Instant> = None;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        for effect in std::mem::take(&mut pending) {
            if let Effect::EditInEditor(text) = effect {
                for answer in suspended_edit(terminal, &mut input, enhanced, &env, &text) {
                    pending.extend(app.handle(answer));
                }
                continue;
            }
            match effect {
                Effect::Op(op) => handle.send(op),
                // Dropping the handle cancels the turn in progress.
                Effect::Quit => return Ok(ended(&app, None)),
                // Handled above.
                Effect::EditInEditor(_) => {}
            }
        }
        if app.take_dirty() || last_draw.is_none() {
            // Coalesce: wait out the frame interval, then draw once.
            if let Some(at) = last_draw {
                let due = at + frame;
                if Instant::now() < due {
                    tokio::time::sleep_until(due.into()).await;
                }
            }
            while let Ok(e) = rx.try_recv() {
                pending.extend(app.handle(e));
            }
            terminal.draw(|f| view::draw(&app, f.area(), f.buffer_mut()))?;
            app.take_dirty();
            last_draw = Some(Instant::now());
            if !pending.is_empty() {
                continue;
            }
        }
        let event = tokio::select! {
            e = input.next() => match e {
                Some(Ok(e)) => {
                    // Keys carry their time: one typed as a question
                    // appeared does not answer it.
                    pending.extend(app.handle(AppEvent::Clock { now_ms: crate::runtime::now_ms() }));
                    translate(e)
                }
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(ended(&app, None)),
            },
            signal = signals.next() => return Ok(ended(&app, Some(signal))),
            e = rx.recv() => e,
            _ = tick.tick() => Some(AppEvent::Tick { now_ms: crate::runtime::now_ms() }),
        };
        if let Some(e) = event {
            pending.extend(app.handle(e));
        }
    }
}

fn ended(app: &App, signal: Option<i32>) -> Ended {
    Ended {
        session: app.session().map(|s| s.id),
        signal,
    }
}

/// The signals that end the app with the terminal restored.
struct Signals(Vec<(i32, tokio::signal::unix::Signal)>);

impl Signals {
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        [
            SignalKind::terminate(),
            SignalKind::hangup(),
            SignalKind::interrupt(),
            SignalKind::quit(),
        ]
        .into_iter()
        .map(|kind| Ok((kind.as_raw_value(), signal(kind)?)))
        .collect::<std::io::Result<_>>()
        .map(Self)
    }

    /// The next signal received.
    async fn next(&mut self) -> i32 {
        let waits = self.0.iter_mut().map(|(n, s)| {
            let n = *n;
            Box::pin(async move {
                s.recv().await;
                n
            })
        });
        futures::future::select_all(waits).await.0
    }
}

/// Opens the app's session on its own threads (see
/// [`SessionHandle::spawn`]): the service's events and the input
/// history's reach the app on `events` (sending never waits).
#[must_use]
pub fn open_session(launch: Launch, events: mpsc::UnboundedSender<AppEvent>) -> SessionHandle {
    let service_events = events.clone();
    let sink: Sink = std::sync::Arc::new(move |e: ServiceEvent| {
        let _ = service_events.send(AppEvent::Service(e));
    });
    SessionHandle::spawn(launch, sink, move |e| {
        let _ = events.send(match e {
            HistoryEvent::Loaded(rows) => AppEvent::History(rows),
            HistoryEvent::Failed(text) => AppEvent::Failed(text),
        });
    })
}
