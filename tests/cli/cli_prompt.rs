//! `strata prompt` as a user runs it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;

use common::Sandbox;

#[test]
fn prompt_json_is_deterministic_dated_and_tiled() {
    let sb = Sandbox::new();
    std::fs::write(sb.ws().join("AGENTS.md"), "Run `cargo test` before committing.\n").unwrap();
    std::fs::write(
        sb.home.path().join("MEMORY.md"),
        "The user prefers short answers.\n",
    )
    .unwrap();
    let a = sb.ok(&["prompt", "--json", "--mode", "full"]);
    let b = sb.ok(&["prompt", "--json", "--mode", "full"]);
    assert_eq!(a, b, "two runs on unchanged inputs must give identical output");
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    let text = v["text"].as_str().unwrap();
    assert!(text.contains("Run `cargo test` before committing."));
    assert!(text.contains("The user prefers short answers."));

    // The date, never a time of day.
    let today = jiff::Zoned::now()
        .with_time_zone(jiff::tz::TimeZone::UTC)
        .strftime("%B %-d, %Y")
        .to_string();
    assert!(text.contains(&today), "no date {today} in the prompt");
    let has_clock = text.as_bytes().windows(5).any(|w| {
        w[0].is_ascii_digit()
            && w[1].is_ascii_digit()
            && w[2] == b':'
            && w[3].is_ascii_digit()
            && w[4].is_ascii_digit()
    });
    assert!(!has_clock, "the prompt must not hold a time of day");

    // Layers tile the text in tier order; the boundary points at the marker layer.
    let layers = v["layers"].as_array().unwrap();
    let mut at = 0;
    let rank = |t: &str| {
        ["stable", "context", "volatile"]
            .iter()
            .position(|x| *x == t)
            .unwrap()
    };
    let mut last_tier = 0;
    for l in layers {
        assert_eq!(l["start"].as_u64().unwrap(), at, "gap before {}", l["name"]);
        at = l["end"].as_u64().unwrap();
        let tier = rank(l["tier"].as_str().unwrap());
        assert!(tier >= last_tier, "tier order broken at {}", l["name"]);
        last_tier = tier;
    }
    assert_eq!(at as usize, text.len());
    let boundary = v["boundary_offset"].as_u64().unwrap();
    let marker = layers.iter().find(|l| l["name"] == "cache_boundary").unwrap();
    assert_eq!(marker["start"].as_u64().unwrap(), boundary);
    let total: u64 = layers.iter().map(|l| l["tokens"].as_u64().unwrap()).sum();
    assert_eq!(v["total_tokens"].as_u64().unwrap(), total);
    assert_eq!(v["tokenizer"], "o200k_base");
}

#[test]
fn minimal_mode_names_the_claude_md_and_memory_it_leaves_out() {
    let sb = Sandbox::new();
    std::fs::write(sb.ws().join("CLAUDE.md"), "# Rules\n\nAlways run make test.\n").unwrap();
    std::fs::write(sb.home.path().join("MEMORY.md"), "- the build uses make\n").unwrap();
    let json = sb.json(&["prompt", "--mode", "minimal", "--json"]);
    let said = json["warnings"].to_string();
    assert!(
        said.contains("leaves out") && said.contains("CLAUDE.md") && said.contains("MEMORY.md"),
        "{said}"
    );
    let full = sb.json(&["prompt", "--mode", "full", "--json"]);
    assert!(
        !full["warnings"].to_string().contains("leaves out"),
        "{}",
        full["warnings"]
    );
    assert!(
        full.to_string().contains("Always run make test."),
        "full mode reads CLAUDE.md"
    );
}

#[test]
fn prompt_text_shows_layer_table_and_warnings() {
    let sb = Sandbox::new();
    std::fs::write(sb.ws().join("AGENTS.md"), b"\x00\x01binary").unwrap();
    let out = sb.ok(&["prompt"]);
    assert!(out.contains("cache boundary at byte"));
    assert!(out.contains("warnings:"), "{out}");
    assert!(out.contains("AGENTS.md"));
}

#[test]
fn unknown_config_keys_are_warned_about_by_name() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        "[prompt]\ninstruction_file = \"all\"\n",
    )
    .unwrap();
    let out = sb.run(&["prompt", "--json"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("'prompt.instruction_file'"), "{err}");
}

#[test]
fn invalid_config_is_one_clear_error() {
    let sb = Sandbox::new();
    std::fs::write(sb.home.path().join("config.toml"), "[model\nname=").unwrap();
    let out = sb.run(&["prompt"]);
    assert_eq!(out.status.code(), Some(1));
    let err = common::one_line_error(&out);
    assert!(
        err.contains("config.toml") && err.contains("line 1") && err.contains("fix it"),
        "{err}"
    );
}

#[test]
fn prompt_shows_the_app_s_prompt_by_default_and_headless_on_request() {
    let sb = Sandbox::new();
    let app = sb.ok(&["prompt"]);
    assert!(app.contains("# Working with the user"), "{app}");
    assert!(app.contains("the app's prompt (--for app|headless)"), "{app}");
    let headless = sb.ok(&["prompt", "--for", "headless"]);
    assert!(
        headless.contains("# Working without a user at the keyboard"),
        "{headless}"
    );
    assert!(headless.contains("strata chat's prompt"), "{headless}");
    // A session the app creates gets exactly the app's bytes.
    let app_json = sb.json(&["prompt", "--json"]);
    let headless_json = sb.json(&["prompt", "--for", "headless", "--json"]);
    assert_ne!(app_json["sha256"], headless_json["sha256"]);
}
