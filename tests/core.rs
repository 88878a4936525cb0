//! The `core` test binary: pure and fast: no processes, no network, no terminal. `cargo test --lib --test core` is the inner loop.
//!
//! One module per area, in `tests/core/`; the shared support tree is
//! `tests/support/`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod support;

#[path = "core/architecture.rs"]
mod architecture;
#[path = "core/compress_control.rs"]
mod compress_control;
#[path = "core/compress_cut.rs"]
mod compress_cut;
#[path = "core/compress_extractive.rs"]
mod compress_extractive;
#[path = "core/compress_props.rs"]
mod compress_props;
#[path = "core/compress_scenarios.rs"]
mod compress_scenarios;
#[path = "core/docs_links.rs"]
mod docs_links;
#[path = "core/frozen_prompt.rs"]
mod frozen_prompt;
#[path = "core/pipeline_control.rs"]
mod pipeline_control;
#[path = "core/pipeline_properties.rs"]
mod pipeline_properties;
#[path = "core/pipeline_scenarios.rs"]
mod pipeline_scenarios;
#[path = "core/prompt_assemble.rs"]
mod prompt_assemble;
#[path = "core/prompt_files.rs"]
mod prompt_files;
#[path = "core/prompt_golden.rs"]
mod prompt_golden;
#[path = "core/prompt_scan.rs"]
mod prompt_scan;
#[path = "core/prompt_skills.rs"]
mod prompt_skills;
#[path = "core/render_markdown.rs"]
mod render_markdown;
#[path = "core/render_props.rs"]
mod render_props;
#[path = "core/session_ops.rs"]
mod session_ops;
#[path = "core/store_edits.rs"]
mod store_edits;
#[path = "core/store_files.rs"]
mod store_files;
#[path = "core/store_leases.rs"]
mod store_leases;
#[path = "core/store_roundtrip.rs"]
mod store_roundtrip;
#[path = "core/store_search.rs"]
mod store_search;
#[path = "core/store_upgrade.rs"]
mod store_upgrade;
#[path = "core/tokens_reference.rs"]
mod tokens_reference;
#[path = "core/tools_files.rs"]
mod tools_files;
#[path = "core/tools_memory.rs"]
mod tools_memory;
#[path = "core/tools_preview.rs"]
mod tools_preview;
#[path = "core/tui_app.rs"]
mod tui_app;
#[path = "core/tui_approval.rs"]
mod tui_approval;
#[path = "core/tui_cache.rs"]
mod tui_cache;
#[path = "core/tui_composer.rs"]
mod tui_composer;
#[path = "core/tui_context.rs"]
mod tui_context;
#[path = "core/tui_lazy.rs"]
mod tui_lazy;
#[path = "core/tui_paste.rs"]
mod tui_paste;
#[path = "core/tui_snapshots.rs"]
mod tui_snapshots;
