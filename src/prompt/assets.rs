//! strata's own prompt text, compiled in from `assets/prompts/`. Every word
//! the model reads that is not the user's comes from one of these files.

macro_rules! asset {
    ($name:ident, $file:literal) => {
        pub(crate) const $name: &str = include_str!(concat!("../../assets/prompts/", $file));
    };
}

asset!(SAFETY, "safety.md");
asset!(IDENTITY, "identity.md");
asset!(GUIDELINES_INTERACTIVE, "guidelines_interactive.md");
asset!(GUIDELINES_HEADLESS, "guidelines_headless.md");
asset!(TOOLS_FILE, "tools_file.md");
asset!(TOOL_USE, "model_guidance/tool_use.md");
asset!(GUIDANCE_OPENAI, "model_guidance/openai.md");
asset!(GUIDANCE_GEMINI, "model_guidance/gemini.md");
asset!(GUIDANCE_GROK, "model_guidance/grok.md");
asset!(GUIDANCE_QWEN, "model_guidance/qwen.md");
asset!(GUIDANCE_DEEPSEEK, "model_guidance/deepseek.md");
asset!(TOOLS, "tools.md");
asset!(SKILLS, "skills.md");
asset!(ENVIRONMENT, "environment.md");
asset!(WORKSPACE, "workspace.md");
asset!(PROJECT, "project.md");
asset!(PROJECT_FILE, "project_file.md");
asset!(TRUNCATION_MARKER, "truncation_marker.md");
asset!(TRUNCATION_NOTICE, "truncation_notice.md");
asset!(TRUNCATION_NOTICE_ONCE, "truncation_notice_once.md");
asset!(BLOCKED_NOTICE, "blocked_notice.md");
asset!(CACHE_BOUNDARY, "cache_boundary.md");
asset!(MEMORY, "memory.md");
asset!(MEMORY_FILE, "memory_file.md");
asset!(USER_FILE, "user_file.md");
asset!(BOOTSTRAP, "bootstrap.md");
asset!(RECENT, "recent.md");
asset!(RECENT_ENTRY, "recent_entry.md");
asset!(COMPUTED, "computed.md");
asset!(COMPUTED_CUT, "computed_cut.md");
asset!(COMPUTED_EMPTY, "computed_empty.md");
asset!(SESSION, "session.md");

/// The `builtin:` source path shown in the layer table for an asset.
pub(crate) fn builtin(file: &str) -> String {
    format!("builtin:{file}")
}
