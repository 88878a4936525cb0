//! The one-line report after a compression (DESIGN §7 "Feedback"):
//! `Compressed 142 → 23 messages · ~96.1k → ~18.4k tokens (−81%) · topic
//! "parser"`, with the reason when the count fell but the estimate rose.

use super::CompressionPlan;

/// `950`, `96.1k`, `1.2M`, with a leading `~` unless `exact`.
#[must_use]
pub fn short_tokens(n: u64, exact: bool) -> String {
    let tilde = if exact { "" } else { "~" };
    if n < 1_000 {
        format!("{tilde}{n}")
    } else if n < 1_000_000 {
        format!("{tilde}{:.1}k", n as f64 / 1_000.0)
    } else {
        format!("{tilde}{:.1}M", n as f64 / 1_000_000.0)
    }
}

/// The feedback line for `plan`.
#[must_use]
pub fn feedback_line(plan: &CompressionPlan) -> String {
    let (before, after) = (plan.tokens_before, plan.tokens_after);
    let change = if before == 0 {
        String::from("0%")
    } else if after <= before {
        format!("−{}%", ((before - after) as f64 * 100.0 / before as f64).round())
    } else {
        format!("+{}%", ((after - before) as f64 * 100.0 / before as f64).round())
    };
    let mut line = format!(
        "Compressed {} → {} messages · {} → {} tokens ({change})",
        plan.messages_before,
        plan.messages_after,
        short_tokens(before, plan.exact),
        short_tokens(after, plan.exact),
    );
    if let Some(topic) = &plan.topic {
        line.push_str(&format!(" · topic \"{topic}\""));
    }
    if after > before && plan.messages_after < plan.messages_before {
        line.push_str(&format!(
            ". Fewer messages but more tokens: the summary ({} tokens with its notice) is longer than \
             the short messages it replaced",
            short_tokens(plan.summary_tokens, plan.exact)
        ));
    }
    line
}
