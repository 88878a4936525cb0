//! Model-family detection for the `model_guidance` layer: which short notes a
//! family of models needs about tool use (DESIGN §4).

use super::assets;
use serde::{Deserialize, Serialize};

/// A family of models that gets its own guidance notes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelFamily {
    /// OpenAI GPT and o-series models.
    OpenAi,
    /// Google Gemini.
    Gemini,
    /// xAI Grok.
    Grok,
    /// Alibaba Qwen.
    Qwen,
    /// DeepSeek.
    DeepSeek,
}

impl ModelFamily {
    /// The family of a model name such as `gpt-4.1`, `openai/o3-mini` or
    /// `qwen2.5-coder:7b`, ignoring any `provider/` prefix and case; `None`
    /// for families without notes (Claude, Llama, the embedded model, ...).
    #[must_use]
    pub fn from_model(model: &str) -> Option<Self> {
        let lower = model.to_ascii_lowercase();
        let name = lower.rsplit('/').next().unwrap_or(&lower);
        let o_series = ["o1", "o3", "o4"]
            .iter()
            .any(|p| name == *p || name.starts_with(&format!("{p}-")));
        if name.starts_with("gpt-") || name.starts_with("chatgpt") || o_series {
            Some(Self::OpenAi)
        } else if name.contains("gemini") {
            Some(Self::Gemini)
        } else if name.contains("grok") {
            Some(Self::Grok)
        } else if name.contains("qwen") || name.contains("qwq") {
            Some(Self::Qwen)
        } else if name.contains("deepseek") {
            Some(Self::DeepSeek)
        } else {
            None
        }
    }

    /// Asset file name and text of this family's notes.
    pub(crate) fn notes(self) -> (&'static str, &'static str) {
        match self {
            Self::OpenAi => ("model_guidance/openai.md", assets::GUIDANCE_OPENAI),
            Self::Gemini => ("model_guidance/gemini.md", assets::GUIDANCE_GEMINI),
            Self::Grok => ("model_guidance/grok.md", assets::GUIDANCE_GROK),
            Self::Qwen => ("model_guidance/qwen.md", assets::GUIDANCE_QWEN),
            Self::DeepSeek => ("model_guidance/deepseek.md", assets::GUIDANCE_DEEPSEEK),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_recognised_by_name() {
        let cases = [
            ("gpt-4o", Some(ModelFamily::OpenAi)),
            ("openai/o3-mini", Some(ModelFamily::OpenAi)),
            ("o1", Some(ModelFamily::OpenAi)),
            ("google/gemini-2.5-pro", Some(ModelFamily::Gemini)),
            ("grok-4", Some(ModelFamily::Grok)),
            ("qwen2.5-coder:7b", Some(ModelFamily::Qwen)),
            ("deepseek-chat", Some(ModelFamily::DeepSeek)),
            ("claude-sonnet-4-5", None),
            ("SmolLM2-135M-Instruct", None),
            ("o1ne-model", None),
        ];
        for (model, family) in cases {
            assert_eq!(ModelFamily::from_model(model), family, "{model}");
        }
    }
}
