//! The `service` test binary: in-process with the loopback HTTP server: providers, the session service, the app harness.
//!
//! One module per area, in `tests/service/`; the shared support tree is
//! `tests/support/`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod support;

#[path = "service/context_agreement.rs"]
mod context_agreement;
#[path = "service/provider_anthropic.rs"]
mod provider_anthropic;
#[path = "service/provider_openai.rs"]
mod provider_openai;
#[path = "service/service_control.rs"]
mod service_control;
#[path = "service/service_lockout.rs"]
mod service_lockout;
#[path = "service/service_mcp.rs"]
mod service_mcp;
#[path = "service/service_notices.rs"]
mod service_notices;
#[path = "service/service_tools.rs"]
mod service_tools;
#[path = "service/service_turn.rs"]
mod service_turn;
#[path = "service/session_lease.rs"]
mod session_lease;
#[path = "service/trust_app.rs"]
mod trust_app;
#[path = "service/tui_behaviour.rs"]
mod tui_behaviour;
#[path = "service/tui_failures.rs"]
mod tui_failures;
#[path = "service/tui_history.rs"]
mod tui_history;
#[path = "service/tui_huge_paste.rs"]
mod tui_huge_paste;
#[path = "service/tui_prompt_watch.rs"]
mod tui_prompt_watch;
#[path = "service/tui_tools.rs"]
mod tui_tools;
#[path = "service/workspace_watch.rs"]
mod workspace_watch;
