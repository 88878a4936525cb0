//! The text and sources of each layer, one function per layer, in DESIGN §4
//! order. Mode rules live here: each function returns `None` when its layer
//! is absent in the given mode.

use super::assets;
use super::fit::{CapKind, fit};
use super::guidance::ModelFamily;
use super::inputs::{PromptInputs, RecentSession, SkillEntry, SourceText};
use super::project::project_layer;
use super::settings::{COMPUTED_MAX_CHARS, per_file_cap};
use super::template::{ellipsize, fence_for, fill, first_chars, group_digits};
use crate::domain::{LayerName, PromptMode, SourceInfo, SourceStatus};
use std::collections::BTreeMap;

/// One layer before placement: text (may be empty) and the sources it lists.
#[derive(Debug)]
pub(crate) struct Layer {
    pub name: LayerName,
    pub text: String,
    pub sources: Vec<SourceInfo>,
}

/// Longest description shown in the skills index (57 characters + `...`).
const SKILL_DESCRIPTION_CHARS: usize = 60;
/// Longest first request and last reply quoted in a recent-session digest.
const RECENT_REQUEST_CHARS: usize = 600;
const RECENT_REPLY_CHARS: usize = 1_000;

/// Every layer of `inputs` except the cache boundary, in order; layers absent
/// in the mode, or with neither text nor sources, are left out.
pub(crate) fn build(inputs: &PromptInputs, warnings: &mut Vec<String>) -> Vec<Layer> {
    let cap = per_file_cap(&inputs.settings, inputs.context_window);
    let mode = inputs.mode;
    let full = mode == PromptMode::Full;
    let some = mode != PromptMode::None;
    if mode == PromptMode::Minimal {
        left_out_in_minimal(inputs, warnings);
    }
    let layers = [
        some.then(|| builtin_layer(LayerName::Safety, "safety.md", assets::SAFETY)),
        Some(identity(inputs, cap, warnings)),
        some.then(|| guidelines(inputs, cap, warnings)),
        full.then(|| model_guidance(inputs)).flatten(),
        some.then(|| tools(inputs)).flatten(),
        full.then(|| skills(&inputs.skills)).flatten(),
        some.then(|| environment(inputs)),
        some.then(|| workspace(inputs)),
        some.then(|| {
            let (text, sources) = project_layer(&inputs.instruction_files, &inputs.settings, cap, warnings);
            Layer {
                name: LayerName::Project,
                text,
                sources,
            }
        }),
        full.then(|| memory(inputs, cap, warnings)),
        full.then(|| bootstrap(inputs, cap, warnings)).flatten(),
        full.then(|| recent(inputs)).flatten(),
        full.then(|| computed(inputs, warnings)).flatten(),
        Some(session(inputs)),
    ];
    layers
        .into_iter()
        .flatten()
        .filter(|l| !l.text.is_empty() || !l.sources.is_empty())
        .collect()
}

/// Says what the minimal mode leaves out that the workspace has:
/// instruction files other than `AGENTS.md`, memory, skills, the
/// first-session bootstrap, the context command.
fn left_out_in_minimal(inputs: &PromptInputs, warnings: &mut Vec<String>) {
    let found = |f: &Option<SourceText>| {
        f.as_ref()
            .filter(|f| f.status == SourceStatus::Found)
            .map(|f| f.path.clone())
    };
    let mut left: Vec<String> = inputs.left_out_instructions.clone();
    left.extend(
        [&inputs.memory_file, &inputs.user_file, &inputs.bootstrap]
            .into_iter()
            .filter_map(found),
    );
    if !inputs.skills.is_empty() {
        left.push(format!("the index of {} skill(s)", inputs.skills.len()));
    }
    if inputs.computed.is_some() {
        left.push("the output of prompt.context_cmd".to_owned());
    }
    if !left.is_empty() {
        warnings.push(format!(
            "The minimal prompt mode leaves out {}; the model does not see them (use --prompt-mode full, or [prompt] mode = \"full\", to keep them).",
            left.join(", ")
        ));
    }
}

fn builtin_source(file: &str, text: &str) -> SourceInfo {
    let chars = text.trim().chars().count() as u64;
    SourceInfo {
        path: assets::builtin(file),
        status: SourceStatus::Found,
        original_chars: chars,
        kept_chars: chars,
    }
}

fn builtin_layer(name: LayerName, file: &str, text: &str) -> Layer {
    Layer {
        name,
        text: text.trim().to_owned(),
        sources: vec![builtin_source(file, text)],
    }
}

/// The first identity file with text, else strata's own identity.
fn identity(inputs: &PromptInputs, cap: usize, warnings: &mut Vec<String>) -> Layer {
    let mut sources = Vec::new();
    for file in &inputs.identity_files {
        let fitted = fit(file, cap, CapKind::PerFile, false, warnings);
        sources.push(fitted.info);
        if let Some(body) = fitted.body {
            return Layer {
                name: LayerName::Identity,
                text: body,
                sources,
            };
        }
    }
    sources.push(builtin_source("identity.md", assets::IDENTITY));
    Layer {
        name: LayerName::Identity,
        text: assets::IDENTITY.trim().to_owned(),
        sources,
    }
}

fn guidelines(inputs: &PromptInputs, cap: usize, warnings: &mut Vec<String>) -> Layer {
    let (file, asset) = if inputs.interactive {
        ("guidelines_interactive.md", assets::GUIDELINES_INTERACTIVE)
    } else {
        ("guidelines_headless.md", assets::GUIDELINES_HEADLESS)
    };
    let mut layer = builtin_layer(LayerName::Guidelines, file, asset);
    if let (true, Some(tools_file)) = (inputs.tools.enabled, &inputs.tools_file) {
        let fitted = fit(tools_file, cap, CapKind::PerFile, false, warnings);
        if let Some(body) = fitted.body {
            layer.text.push_str("\n\n");
            layer.text.push_str(&fill(
                assets::TOOLS_FILE,
                &[("path", Some(&tools_file.path)), ("body", Some(&body))],
            ));
        }
        layer.sources.push(fitted.info);
    }
    layer
}

fn model_guidance(inputs: &PromptInputs) -> Option<Layer> {
    if !inputs.tools.enabled {
        return None;
    }
    let (file, notes) = ModelFamily::from_model(&inputs.session.model)?.notes();
    Some(Layer {
        name: LayerName::ModelGuidance,
        text: format!("{}\n{}", assets::TOOL_USE.trim(), notes.trim()),
        sources: vec![
            builtin_source("model_guidance/tool_use.md", assets::TOOL_USE),
            builtin_source(file, notes),
        ],
    })
}

fn tools(inputs: &PromptInputs) -> Option<Layer> {
    let listing = inputs.tools.listing.as_deref().map(str::trim).unwrap_or("");
    if !inputs.tools.enabled || inputs.tools.native || listing.is_empty() {
        return None;
    }
    Some(Layer {
        name: LayerName::Tools,
        text: fill(assets::TOOLS, &[("listing", Some(listing))]),
        sources: vec![builtin_source("tools.md", assets::TOOLS)],
    })
}

/// One line of the skills index.
fn skill_line(skill: &SkillEntry) -> String {
    let description = skill
        .description
        .as_deref()
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty());
    match description {
        Some(d) => format!("- {}: {}", skill.name, ellipsize(&d, SKILL_DESCRIPTION_CHARS)),
        None => format!("- {}", skill.name),
    }
}

/// The skills index: uncategorised skills first, then one section per
/// category, each sorted by name.
fn skills(skills: &[SkillEntry]) -> Option<Layer> {
    if skills.is_empty() {
        return None;
    }
    let mut groups: BTreeMap<Option<&str>, Vec<&SkillEntry>> = BTreeMap::new();
    for skill in skills {
        let category = skill.category.as_deref().map(str::trim).filter(|c| !c.is_empty());
        groups.entry(category).or_default().push(skill);
    }
    let mut text = fill(assets::SKILLS, &[]);
    let mut sources = Vec::with_capacity(skills.len());
    for (category, mut members) in groups {
        members.sort_by(|a, b| (&a.name, &a.path).cmp(&(&b.name, &b.path)));
        text.push_str("\n\n");
        if let Some(category) = category {
            text.push_str("## ");
            text.push_str(category);
            text.push('\n');
        }
        for (i, skill) in members.iter().enumerate() {
            let line = skill_line(skill);
            if i > 0 {
                text.push('\n');
            }
            text.push_str(&line);
            sources.push(SourceInfo {
                path: skill.path.clone(),
                status: SourceStatus::Found,
                original_chars: skill.size,
                kept_chars: line.chars().count() as u64,
            });
        }
    }
    Some(Layer {
        name: LayerName::Skills,
        text,
        sources,
    })
}

fn nonempty(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

fn environment(inputs: &PromptInputs) -> Layer {
    let env = &inputs.environment;
    let (os, shell, terminal) = (nonempty(&env.os), nonempty(&env.shell), nonempty(&env.terminal));
    let text = if os.is_none() && shell.is_none() && terminal.is_none() {
        String::new()
    } else {
        fill(
            assets::ENVIRONMENT,
            &[("os", os), ("shell", shell), ("terminal", terminal)],
        )
    };
    Layer {
        name: LayerName::Environment,
        text,
        sources: Vec::new(),
    }
}

fn workspace(inputs: &PromptInputs) -> Layer {
    let ws = &inputs.workspace;
    let cwd = (ws.cwd != ws.root && !ws.cwd.is_empty()).then_some(ws.cwd.as_str());
    let text = if ws.root.is_empty() {
        String::new()
    } else {
        let git = ws.git_root.as_deref();
        let root_is_git = git == Some(ws.root.as_str());
        fill(
            assets::WORKSPACE,
            &[
                ("root", (!root_is_git).then_some(ws.root.as_str())),
                ("git_workspace", root_is_git.then_some(ws.root.as_str())),
                ("git_root", git.filter(|_| !root_is_git)),
                ("cwd", cwd),
            ],
        )
    };
    Layer {
        name: LayerName::Workspace,
        text,
        sources: Vec::new(),
    }
}

fn memory(inputs: &PromptInputs, cap: usize, warnings: &mut Vec<String>) -> Layer {
    let mut sections = Vec::new();
    let mut sources = Vec::new();
    let files = [
        (&inputs.memory_file, assets::MEMORY_FILE),
        (&inputs.user_file, assets::USER_FILE),
    ];
    for (file, template) in files {
        let Some(file) = file else { continue };
        let mut fitted = fit(file, cap, CapKind::PerFile, false, warnings);
        if let Some(body) = fitted.body.take() {
            // Memory is written by the user and by the model's `memory`
            // tool: it is screened like the instruction files, and for
            // standing orders, which have no place among facts.
            let body = super::scan::screened_memory(
                body,
                &file.path,
                inputs.settings.block_suspicious,
                &mut fitted.info,
                warnings,
            );
            sections.push(fill(
                template,
                &[("path", Some(&file.path)), ("body", Some(&body))],
            ));
        }
        sources.push(fitted.info);
    }
    let text = if sections.is_empty() {
        String::new()
    } else {
        let mut text = fill(assets::MEMORY, &[]);
        for section in sections {
            text.push_str("\n\n");
            text.push_str(&section);
        }
        text
    };
    Layer {
        name: LayerName::Memory,
        text,
        sources,
    }
}

fn bootstrap(inputs: &PromptInputs, cap: usize, warnings: &mut Vec<String>) -> Option<Layer> {
    let file: &SourceText = inputs.bootstrap.as_ref()?;
    let fitted = fit(file, cap, CapKind::PerFile, false, warnings);
    let text = fitted.body.map_or_else(String::new, |body| {
        fill(
            assets::BOOTSTRAP,
            &[("path", Some(&file.path)), ("body", Some(&body))],
        )
    });
    Some(Layer {
        name: LayerName::Bootstrap,
        text,
        sources: vec![fitted.info],
    })
}

fn one_line(s: &str, max: usize) -> String {
    ellipsize(&s.split_whitespace().collect::<Vec<_>>().join(" "), max)
}

fn recent_entry(entry: &RecentSession) -> String {
    let omitted = (entry.omitted > 0).then(|| group_digits(entry.omitted as u64));
    fill(
        assets::RECENT_ENTRY,
        &[
            ("title", Some(&one_line(&entry.title, 120))),
            ("started", Some(&entry.started)),
            (
                "first_request",
                Some(&one_line(&entry.first_request, RECENT_REQUEST_CHARS)),
            ),
            ("omitted", omitted.as_deref()),
            (
                "last_reply",
                Some(&one_line(&entry.last_reply, RECENT_REPLY_CHARS)),
            ),
        ],
    )
}

fn recent(inputs: &PromptInputs) -> Option<Layer> {
    let n = inputs.settings.recent_sessions;
    if n == 0 || inputs.recent.is_empty() {
        return None;
    }
    let mut text = fill(assets::RECENT, &[]);
    for entry in inputs.recent.iter().take(n) {
        text.push_str("\n\n");
        text.push_str(&recent_entry(entry));
    }
    Some(Layer {
        name: LayerName::Recent,
        text,
        sources: Vec::new(),
    })
}

fn computed(inputs: &PromptInputs, warnings: &mut Vec<String>) -> Option<Layer> {
    let out = inputs.computed.as_ref()?;
    let output = out.output.trim_end();
    let total = output.chars().count();
    let kept = first_chars(output, COMPUTED_MAX_CHARS);
    let cut = total > COMPUTED_MAX_CHARS || out.cut_short;
    if cut {
        warnings.push(format!(
            "The output of prompt.context_cmd `{}` is longer than {} characters; the prompt keeps its beginning.",
            out.command,
            group_digits(COMPUTED_MAX_CHARS as u64)
        ));
    }
    let kept = if kept.trim().is_empty() {
        assets::COMPUTED_EMPTY.trim()
    } else {
        kept
    };
    let fence = fence_for(kept);
    let cut_line = cut.then(|| {
        fill(
            assets::COMPUTED_CUT,
            &[("max", Some(&group_digits(COMPUTED_MAX_CHARS as u64)))],
        )
    });
    let text = fill(
        assets::COMPUTED,
        &[
            ("command", Some(&out.command)),
            ("fence", Some(&fence)),
            ("output", Some(kept)),
            ("cut", cut_line.as_deref()),
        ],
    );
    Some(Layer {
        name: LayerName::Computed,
        text,
        sources: vec![SourceInfo {
            path: format!("command:{}", out.command),
            status: if cut {
                SourceStatus::Truncated
            } else {
                SourceStatus::Found
            },
            original_chars: total as u64,
            kept_chars: kept.chars().count().min(total) as u64,
        }],
    })
}

fn session(inputs: &PromptInputs) -> Layer {
    let s = &inputs.session;
    let nonempty = |v: &str| {
        let v = v.trim();
        (!v.is_empty()).then(|| v.to_owned())
    };
    let date = match (nonempty(&s.date), nonempty(&s.time_zone)) {
        (Some(date), Some(tz)) => Some(format!("{date} ({tz})")),
        (date, _) => date,
    };
    let model = nonempty(&s.model);
    let provider = nonempty(&s.provider);
    let branch = s.git_branch.as_deref().and_then(nonempty);
    Layer {
        name: LayerName::Session,
        text: fill(
            assets::SESSION,
            &[
                ("date", date.as_deref()),
                ("model", model.as_deref()),
                ("provider", provider.as_deref()),
                ("git_branch", branch.as_deref()),
            ],
        ),
        sources: Vec::new(),
    }
}
