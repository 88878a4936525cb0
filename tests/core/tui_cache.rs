#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The prompt cache in the app: the pane's predicted and reported reads and
//! where the prefix broke, the chart of the session's requests, the warning
//! before automatic compression (pane and status bar), and the question
//! with its figure before `/model` and `/reload` rewrite the prompt.

use crate::support::tui as tui_support;
use strata::runtime::Op;
use strata::runtime::service::Command;

use crossterm::event::KeyCode;
use strata::domain::{BreakAt, BreakReason, CacheBreak, CacheCheck, LayerName, Role, Usage};
use strata::runtime::cache_report::RequestPoint;
use strata::runtime::service::ServiceEvent;
use strata::tui::Effect;
use tui_support::*;

fn history(n: usize) -> Vec<strata::domain::Message> {
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
            msg(role, &format!("message {i} about the parser"), 1_500)
        })
        .collect()
}

fn usage(prompt: u64, cached: u64, check: CacheCheck) -> Usage {
    Usage {
        session_id: session_id(1),
        message_id: None,
        model: "gpt-4o".into(),
        prompt_tokens: Some(prompt),
        completion_tokens: Some(40),
        cache_read_tokens: Some(cached),
        cache_write_tokens: None,
        reasoning_tokens: None,
        estimated_prompt_tokens: prompt,
        ttft_ms: None,
        duration_ms: None,
        created_at: 0,
        tools_sha256: None,
        cache: Some(check),
    }
}

fn point(i: i64, prompt: u64, cached: u64, brk: Option<CacheBreak>, compaction: bool) -> RequestPoint {
    RequestPoint {
        at: i,
        prompt_tokens: prompt,
        estimated: false,
        cached_tokens: Some(cached),
        predicted_cached_tokens: Some(cached),
        compaction,
        cache_break: brk,
        message_id: None,
        completion_tokens: None,
    }
}

fn reload_break() -> CacheBreak {
    CacheBreak {
        at: BreakAt::System {
            layer: Some(LayerName::Project),
        },
        reason: BreakReason::Reload,
    }
}

/// A session whose last request broke at the project layer after a
/// `/reload`, with eight requests behind it.
fn broken(w: u16, h: u16) -> strata::tui::App {
    let messages = history(10);
    let mut ctx = context_in(&messages, 128_000, 8_192);
    ctx.last_usage = Some(usage(
        15_050,
        0,
        CacheCheck {
            predicted_cached_tokens: 0,
            shared_tokens: 900,
            cache_break: Some(reload_break()),
        },
    ));
    ctx.requests = (0..8)
        .map(|i| {
            let prompt = 4_000 + 1_500 * i as u64;
            let brk = (i == 7).then(reload_break);
            let cached = if i == 0 || i == 7 { 0 } else { prompt - 1_500 };
            point(i, prompt, cached, brk, i == 4)
        })
        .collect();
    shown(app_with(w, h, messages, Some(ctx)))
}

/// `app` with the context pane shown (at 80 columns it starts hidden; F2
/// shows it).
fn shown(mut app: strata::tui::App) -> strata::tui::App {
    if !app.context_visible() {
        app.handle(key(KeyCode::F(2)));
    }
    app
}

#[test]
fn the_pane_shows_the_predicted_and_reported_reads_and_where_the_prefix_broke() {
    for (w, h) in [(120, 36), (80, 24)] {
        let app = broken(w, h);
        let screen = draw(&app, w, h);
        assert!(screen.contains("cached 0 of 15.1k ·"), "{screen}");
        assert!(screen.contains("predicted 0"), "{screen}");
        assert!(screen.contains("⚠ prefix broke at the"), "{screen}");
        assert!(screen.contains("was reloaded"), "{screen}");
        insta::assert_snapshot!(format!("cache_pane_{w}x{h}"), screen);
    }
}

#[test]
fn the_chart_draws_the_requests_when_the_pane_has_room() {
    let app = broken(120, 36);
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("prompt · cached · threshold · 8 req"), "{screen}");
    // Braille dots of the lines.
    assert!(
        screen.chars().any(|c| ('\u{2801}'..='\u{28ff}').contains(&c)),
        "{screen}"
    );
}

/// A session whose next request is 4.1k tokens under the threshold.
fn near_threshold(w: u16, h: u16) -> strata::tui::App {
    let messages = history(10);
    let mut ctx = context_in(&messages, 128_000, 8_192);
    let threshold = ctx.budget.threshold.effective;
    ctx.prelimit_tokens = Some(threshold - 4_100);
    ctx.requests = (0..4)
        .map(|i| point(i, threshold - 4_100 - 3_000 * (3 - i as u64), 0, None, false))
        .collect();
    shown(app_with(w, h, messages, Some(ctx)))
}

#[test]
fn the_warning_before_automatic_compression_names_what_is_left_and_the_keys() {
    for (w, h) in [(120, 36), (80, 24)] {
        let app = near_threshold(w, h);
        let screen = draw(&app, w, h);
        let status = screen.lines().last().unwrap();
        assert!(
            status.contains("⚠ auto-compress in ~2 turns: 4.1k tokens left"),
            "{status}"
        );
        assert!(screen.contains("/compress now · F8 list"), "{screen}");
        insta::assert_snapshot!(format!("compress_warning_{w}x{h}"), screen);
    }
    // Over the threshold: it fires with the next message.
    let messages = history(2);
    let mut ctx = context_in(&messages, 128_000, 8_192);
    ctx.prelimit_tokens = Some(ctx.budget.threshold.effective + 10);
    let app = app_with(120, 36, messages, Some(ctx));
    assert!(draw(&app, 120, 36).contains("the next request is over the compression threshold"));
    // Over it with nothing worth compressing (one huge message, the
    // protected end): no advice to compress, in the status bar or the pane.
    let messages = history(2);
    let mut ctx = context_in(&messages, 128_000, 8_192);
    ctx.prelimit_tokens = Some(ctx.budget.threshold.effective + 10);
    ctx.compression_helps = false;
    let app = app_with(120, 36, messages, Some(ctx));
    let screen = draw(&app, 120, 36);
    assert!(!screen.contains("/compress now"), "{screen}");
    assert!(screen.contains("compressing would save under 10 %"), "{screen}");
    // Far from the threshold, or blocked: no warning.
    let messages = history(2);
    let app = app_with(
        120,
        36,
        messages.clone(),
        Some(context_in(&messages, 128_000, 8_192)),
    );
    assert!(!draw(&app, 120, 36).contains("auto-compress in"));
    let mut ctx = context_in(&messages, 128_000, 8_192);
    ctx.prelimit_tokens = Some(ctx.budget.threshold.effective - 100);
    ctx.blocked_reason = Some("automatic compression is paused for this session".into());
    let app = app_with(120, 36, messages, Some(ctx));
    assert!(!draw(&app, 120, 36).contains("auto-compress in"));
}

#[test]
fn auto_compress_off_and_on_are_commands() {
    let mut app = near_threshold(120, 36);
    assert_eq!(
        entered(&mut app, "/auto-compress off"),
        vec![Effect::Op(Op::Run(Command::AutoCompress(false)))]
    );
    assert_eq!(
        entered(&mut app, "/auto-compress on"),
        vec![Effect::Op(Op::Run(Command::AutoCompress(true)))]
    );
    assert!(entered(&mut app, "/auto-compress maybe").is_empty());
}

#[test]
fn model_asks_first_with_what_the_next_request_loses_from_the_cache() {
    for (w, h) in [(120, 36), (80, 24)] {
        let mut app = broken(w, h);
        assert!(
            entered(&mut app, "/model gpt-4.1").is_empty(),
            "nothing runs before the answer"
        );
        let screen = draw(&app, w, h);
        assert!(screen.contains("Enter confirms · Esc cancels"), "{screen}");
        insta::assert_snapshot!(format!("rewrite_confirm_{w}x{h}"), screen);
        assert_eq!(
            app.handle(key(KeyCode::Enter)),
            vec![Effect::Op(Op::Run(Command::Model("gpt-4.1".into())))]
        );
    }
    let mut app = broken(120, 36);
    entered(&mut app, "/model gpt-4.1");
    // Other keys wait for the answer and reach nothing else.
    assert!(type_text(&mut app, "abc").is_empty());
    assert!(app.rewrite_question().is_some());
    assert!(!draw(&app, 120, 36).contains("› abc"));
    assert!(app.handle(key(KeyCode::Esc)).is_empty());
    // The model in use asks nothing.
    assert_eq!(
        entered(&mut app, "/model gpt-4o"),
        vec![Effect::Op(Op::Run(Command::Model("gpt-4o".into())))]
    );
    assert!(!draw(&app, 120, 36).contains("Enter confirms"));
}

#[test]
fn reload_asks_with_the_tokens_from_the_first_stale_layer_and_not_when_nothing_is_stale() {
    let mut app = broken(120, 36);
    assert_eq!(
        entered(&mut app, "/reload"),
        vec![Effect::Op(Op::Run(Command::Reload))],
        "nothing stale: no question"
    );
    app.handle(ServiceEvent::Stale(vec![LayerName::Project]));
    type_text(&mut app, "/reload");
    let asked = app.handle(key(KeyCode::Enter));
    assert!(
        !asked.contains(&Effect::Op(Op::Run(Command::Reload))),
        "{asked:?}"
    );
    let question = app.rewrite_question().expect("the question").clone();
    // The identity layer (7 tokens) before the project layer stays cached.
    assert_eq!(question.uncached + 7, question.next, "{question:?}");
    assert!(
        question.sentence().starts_with("/reload rewrites the prompt: ~"),
        "{}",
        question.sentence()
    );
    assert_eq!(
        app.handle(key(KeyCode::Enter)),
        vec![Effect::Op(Op::Run(Command::Reload))]
    );
}
