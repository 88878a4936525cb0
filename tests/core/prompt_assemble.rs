//! The pure assembly core on hand-built inputs: which layers each mode keeps,
//! the conditions of the optional layers, the caps of the `computed` and
//! `recent` layers, and the JSON shape `strata prompt --json` relies on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::prompt as support;

use strata::domain::{LayerName, PromptMode, SourceStatus};
use strata::prompt::{
    AssembledPrompt, ComputedOutput, EnvFacts, PromptInputs, PromptSettings, RecentSession, SessionFacts,
    SkillEntry, SourceText, ToolFacts, WorkspaceFacts, assemble,
};

fn inputs(mode: PromptMode) -> PromptInputs {
    PromptInputs {
        mode,
        interactive: false,
        context_window: Some(200_000),
        identity_files: vec![
            SourceText::missing("/h/SOUL.md"),
            SourceText::missing("/h/IDENTITY.md"),
        ],
        tools_file: Some(SourceText::whole("/h/TOOLS.md", "Prefer ripgrep.")),
        tools: ToolFacts {
            enabled: true,
            native: false,
            listing: Some("- read_file(path): returns the file".to_owned()),
        },
        skills: vec![SkillEntry {
            name: "deploy".to_owned(),
            description: Some("Ship it".to_owned()),
            category: None,
            path: "/h/skills/deploy/SKILL.md".to_owned(),
            size: 40,
        }],
        environment: EnvFacts {
            os: Some("macos".to_owned()),
            ..EnvFacts::default()
        },
        workspace: WorkspaceFacts {
            root: "/w".to_owned(),
            git_root: None,
            cwd: "/w".to_owned(),
        },
        instruction_files: vec![SourceText::whole("/w/AGENTS.md", "Use tabs.")],
        left_out_instructions: Vec::new(),
        memory_file: Some(SourceText::whole("/h/MEMORY.md", "Remember the milk.")),
        user_file: Some(SourceText::missing("/h/USER.md")),
        bootstrap: Some(SourceText::whole("/h/BOOTSTRAP.md", "Say hello.")),
        recent: vec![RecentSession {
            title: "Earlier".to_owned(),
            started: "Saturday, November 28, 2026".to_owned(),
            first_request: "Do X".to_owned(),
            last_reply: "Done X".to_owned(),
            omitted: 0,
        }],
        computed: Some(ComputedOutput {
            command: "git status --short".to_owned(),
            output: String::new(),
            cut_short: false,
        }),
        session: SessionFacts {
            date: "Sunday, November 29, 2026".to_owned(),
            time_zone: "UTC".to_owned(),
            model: "qwen3-coder".to_owned(),
            provider: "ollama".to_owned(),
            git_branch: None,
        },
        settings: PromptSettings {
            recent_sessions: 3,
            ..PromptSettings::default()
        },
        warnings: vec!["A warning from gathering.".to_owned()],
    }
}

fn build(inputs: &PromptInputs) -> AssembledPrompt {
    let p = assemble(inputs, &support::counter());
    support::assert_layer_invariants(&p);
    p
}

fn names(p: &AssembledPrompt) -> Vec<LayerName> {
    p.layers.iter().map(|l| l.name).collect()
}

#[test]
fn each_mode_keeps_its_layers_in_order() {
    use LayerName::*;
    assert_eq!(
        names(&build(&inputs(PromptMode::Full))),
        [
            Safety,
            Identity,
            Guidelines,
            ModelGuidance,
            Tools,
            Skills,
            Environment,
            Workspace,
            Project,
            CacheBoundary,
            Memory,
            Bootstrap,
            Recent,
            Computed,
            Session
        ]
    );
    assert_eq!(
        names(&build(&inputs(PromptMode::Minimal))),
        [
            Safety,
            Identity,
            Guidelines,
            Tools,
            Environment,
            Workspace,
            Project,
            CacheBoundary,
            Session
        ]
    );
    assert_eq!(
        names(&build(&inputs(PromptMode::None))),
        [Identity, CacheBoundary, Session]
    );
}

#[test]
fn the_minimal_mode_says_what_it_leaves_out() {
    let minimal = build(&inputs(PromptMode::Minimal));
    let said = minimal.warnings.join("\n");
    assert!(
        said.contains("The minimal prompt mode leaves out /h/MEMORY.md, /h/BOOTSTRAP.md, the index of 1 skill(s), the output of prompt.context_cmd"),
        "{said}"
    );
    assert!(said.contains("--prompt-mode full"), "{said}");
    let full = build(&inputs(PromptMode::Full));
    assert!(
        !full.warnings.iter().any(|w| w.contains("minimal")),
        "{:?}",
        full.warnings
    );
}

#[test]
fn the_builtin_identity_stands_in_and_missing_files_are_listed() {
    let p = build(&inputs(PromptMode::None));
    let identity = &p.layers[0];
    let statuses: Vec<_> = identity
        .sources
        .iter()
        .map(|s| (s.path.as_str(), s.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("/h/SOUL.md", SourceStatus::Missing),
            ("/h/IDENTITY.md", SourceStatus::Missing),
            ("builtin:identity.md", SourceStatus::Found),
        ]
    );
    assert!(p.text.starts_with("You are strata"));
}

#[test]
fn headless_guidelines_and_tools_notes() {
    let p = build(&inputs(PromptMode::Full));
    assert!(p.text.contains("# Working without a user at the keyboard"));
    assert!(
        p.text
            .contains("## Notes on tools (/h/TOOLS.md)\n\nPrefer ripgrep.")
    );
    assert!(p.text.contains("# Tools\n"));
    assert!(p.text.contains("- read_file(path): returns the file"));
    assert!(
        p.text.contains("never write a tool call as plain text"),
        "qwen notes"
    );
}

#[test]
fn tools_layers_follow_tool_availability() {
    let mut i = inputs(PromptMode::Full);
    i.tools.native = true;
    let p = build(&i);
    assert!(!names(&p).contains(&LayerName::Tools));
    assert!(names(&p).contains(&LayerName::ModelGuidance));
    i.session.model = "claude-sonnet-4-5".to_owned();
    assert!(!names(&build(&i)).contains(&LayerName::ModelGuidance));
    i.session.model = "gpt-5".to_owned();
    i.tools.enabled = false;
    let p = build(&i);
    assert!(!names(&p).contains(&LayerName::ModelGuidance));
    assert!(!p.text.contains("Prefer ripgrep."), "TOOLS.md only with tools");
}

#[test]
fn the_computed_layer_keeps_the_head_of_long_output() {
    let mut i = inputs(PromptMode::Full);
    let p = build(&i);
    assert!(p.text.contains("(The command printed nothing.)"));
    let long: String = (0..120_000).map(|n| char::from(b'a' + (n % 26) as u8)).collect();
    i.computed = Some(ComputedOutput {
        command: "cat big".to_owned(),
        output: long.clone(),
        cut_short: false,
    });
    let p = build(&i);
    assert!(p.text.contains(&format!("{}\n```", &long[..100_000])));
    assert!(!p.text.contains(&long[..100_001]));
    assert!(p.text.contains("[output cut at 100,000 characters]"));
    assert!(p.warnings.iter().any(|w| w.contains("`cat big`")));
    let computed = p.layers.iter().find(|l| l.name == LayerName::Computed).unwrap();
    assert_eq!(computed.sources[0].status, SourceStatus::Truncated);
    assert_eq!(computed.sources[0].kept_chars, 100_000);
}

#[test]
fn recent_sessions_are_opt_in_and_limited() {
    let mut i = inputs(PromptMode::Full);
    i.recent = (0..5)
        .map(|n| RecentSession {
            title: format!("Session {n}"),
            ..RecentSession::default()
        })
        .collect();
    let p = build(&i);
    assert_eq!(p.text.matches("## Session ").count(), 3);
    i.settings.recent_sessions = 0;
    assert!(!names(&build(&i)).contains(&LayerName::Recent));
}

#[test]
fn empty_layers_are_left_out() {
    let mut i = inputs(PromptMode::Full);
    i.environment = EnvFacts::default();
    assert!(!names(&build(&i)).contains(&LayerName::Environment));
    let p = build(&inputs(PromptMode::Full));
    assert!(p.text.contains("# Environment\n\n- Operating system: macos\n\n"));
}

#[test]
fn gathering_warnings_come_first() {
    let p = build(&inputs(PromptMode::Full));
    assert_eq!(p.warnings[0], "A warning from gathering.");
}

#[test]
fn the_json_has_the_contract_fields() {
    let p = build(&inputs(PromptMode::Full));
    let json = serde_json::to_value(&p).unwrap();
    for key in [
        "text",
        "sha256",
        "tokenizer",
        "total_tokens",
        "boundary_offset",
        "layers",
        "warnings",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    let layer = &json["layers"][1];
    for key in ["name", "tier", "start", "end", "chars", "tokens", "sources"] {
        assert!(layer.get(key).is_some(), "layer missing {key}");
    }
    assert_eq!(layer["name"], "identity");
    assert_eq!(layer["tier"], "stable");
    let source = &layer["sources"][0];
    for key in ["path", "status", "original_chars", "kept_chars"] {
        assert!(source.get(key).is_some(), "source missing {key}");
    }
    assert_eq!(source["status"], "missing");
    assert_eq!(json["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(json["tokenizer"], "o200k_base");
}

#[test]
fn a_prompt_with_no_volatile_text_has_no_boundary() {
    let mut i = inputs(PromptMode::None);
    i.session = SessionFacts::default();
    let p = build(&i);
    assert_eq!(p.boundary_offset, None);
    assert_eq!(names(&p), [LayerName::Identity]);
}
