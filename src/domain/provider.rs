//! Which provider a session talks to: [`ProviderKind`], written everywhere
//! (config, store, JSON) as its lower-case name.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The providers strata can talk to. Serialised and stored as `openai`,
/// `anthropic` or `local`; parsed case-insensitively.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// Any OpenAI-compatible chat-completions server.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// The embedded llama.cpp model.
    Local,
}

impl ProviderKind {
    /// Every provider, in the order the error message names them.
    pub const ALL: [Self; 3] = [Self::OpenAi, Self::Anthropic, Self::Local];

    /// `openai`, `anthropic` or `local`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::Local => "local",
        }
    }

    /// Parses a provider name (case-insensitive); `None` for anything else.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str().eq_ignore_ascii_case(s))
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider name strata does not have; its message is one sentence for
/// the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownProvider(pub String);

impl fmt::Display for UnknownProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown provider '{}'; use openai, anthropic or local", self.0)
    }
}

impl std::error::Error for UnknownProvider {}

impl std::str::FromStr for ProviderKind {
    type Err = UnknownProvider;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| UnknownProvider(s.to_owned()))
    }
}

impl Serialize for ProviderKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProviderKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_serde_and_parse() {
        for kind in ProviderKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(serde_json::from_str::<ProviderKind>(&json).unwrap(), kind);
            assert_eq!(
                ProviderKind::parse(&kind.as_str().to_ascii_uppercase()),
                Some(kind)
            );
        }
    }

    #[test]
    fn an_unknown_name_is_one_sentence_naming_it() {
        let err = serde_json::from_str::<ProviderKind>("\"gemini\"").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("unknown provider 'gemini'; use openai, anthropic or local"),
            "{err}"
        );
        assert_eq!(ProviderKind::parse("open ai"), None);
    }
}
