//! Building the provider a [`ModelChoice`] names.

use crate::config::{ModelChoice, ProviderKind};
use crate::provider::{
    AnthropicConfig, AnthropicProvider, OpenAiConfig, OpenAiProvider, Provider, ProviderError,
};

/// The provider for `choice`, with the key read through `env` from the
/// variable the choice names (keys are never stored).
///
/// # Errors
/// [`ProviderError::Auth`] when a hosted provider has no key,
/// [`ProviderError::Local`] for the embedded model until it is set up,
/// or a construction error from the provider.
pub fn provider_for(
    choice: &ModelChoice,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn Provider>, ProviderError> {
    let key_env = choice
        .api_key_env
        .clone()
        .or_else(|| choice.provider.default_key_env().map(str::to_owned))
        .unwrap_or_default();
    let key = env(&key_env).filter(|k| !k.trim().is_empty());
    match choice.provider {
        ProviderKind::OpenAi => {
            let mut config = OpenAiConfig::from_env(&key_env, env);
            if let Some(url) = &choice.base_url {
                config.base_url.clone_from(url);
            }
            let local_server = choice.base_url.is_some();
            if key.is_none() && !local_server {
                return Err(ProviderError::Auth {
                    provider: "openai",
                    key_env,
                    message: "no key is set".to_owned(),
                });
            }
            config.api_key = key;
            Ok(Box::new(OpenAiProvider::new(config)?))
        }
        ProviderKind::Anthropic => {
            let mut config = AnthropicConfig::from_env(&key_env, env);
            if let Some(url) = &choice.base_url {
                config.base_url.clone_from(url);
            }
            if key.is_none() {
                return Err(ProviderError::Auth {
                    provider: "anthropic",
                    key_env,
                    message: "no key is set".to_owned(),
                });
            }
            config.api_key = key;
            Ok(Box::new(AnthropicProvider::new(config)?))
        }
        ProviderKind::Local => Err(ProviderError::Local {
            message:
                "the embedded model is not available in this build; set OPENAI_API_KEY or ANTHROPIC_API_KEY"
                    .to_owned(),
        }),
    }
}
