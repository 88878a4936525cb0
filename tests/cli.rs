//! The `cli` test binary: the real `strata` binary and real processes: the CLI, the shell tool, store concurrency, cache forensics.
//!
//! One module per area, in `tests/cli/`; the shared support tree is
//! `tests/support/`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod support;

#[path = "cli/cache_forensics.rs"]
mod cache_forensics;
#[path = "cli/cli_chat.rs"]
mod cli_chat;
#[path = "cli/cli_compress.rs"]
mod cli_compress;
#[path = "cli/cli_compress_guard.rs"]
mod cli_compress_guard;
#[path = "cli/cli_compress_preview.rs"]
mod cli_compress_preview;
#[path = "cli/cli_control.rs"]
mod cli_control;
#[path = "cli/cli_data_dir.rs"]
mod cli_data_dir;
#[path = "cli/cli_doctor.rs"]
mod cli_doctor;
#[path = "cli/cli_edit_resend.rs"]
mod cli_edit_resend;
#[path = "cli/cli_log.rs"]
mod cli_log;
#[path = "cli/cli_prompt.rs"]
mod cli_prompt;
#[path = "cli/cli_sandbox.rs"]
mod cli_sandbox;
#[path = "cli/cli_sessions.rs"]
mod cli_sessions;
#[path = "cli/cli_tools.rs"]
mod cli_tools;
#[path = "cli/cli_tools_bytes.rs"]
mod cli_tools_bytes;
#[path = "cli/cli_tools_output.rs"]
mod cli_tools_output;
#[path = "cli/cli_turn_parts.rs"]
mod cli_turn_parts;
#[path = "cli/context_cmd.rs"]
mod context_cmd;
#[path = "cli/exact_counts.rs"]
mod exact_counts;
#[path = "cli/huge_message.rs"]
mod huge_message;
#[path = "cli/mcp_sandbox.rs"]
mod mcp_sandbox;
#[path = "cli/served_window.rs"]
mod served_window;
#[path = "cli/store_concurrency.rs"]
mod store_concurrency;
#[path = "cli/tools_shell.rs"]
mod tools_shell;
#[path = "cli/tools_shell_sandbox.rs"]
mod tools_shell_sandbox;
#[path = "cli/tools_shell_sweep.rs"]
mod tools_shell_sweep;
#[path = "cli/trust_attach.rs"]
mod trust_attach;
#[path = "cli/trust_mcp.rs"]
mod trust_mcp;
#[path = "cli/trust_memory.rs"]
mod trust_memory;
