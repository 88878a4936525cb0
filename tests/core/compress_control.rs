//! Pin and exclude across compressions (DESIGN §17), at the engine level and
//! through the store: an excluded tool call unit is neither summarised nor
//! archived nor rewritten, and comes back whole by including it or undoing
//! the compression; a pinned message survives five compressions verbatim.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::compress as compress_support;
use crate::support::store as store_support;

use compress_support::{Builder, QuarterCounter, engine, tokens};
use strata::compress::{CompressionInput, CompressionPlan, DefaultEngine, Trigger};
use strata::domain::{
    Compaction, CompactionId, CompactionKind, CompactionTrigger, Message, MessageKind, RequestSystem, Role,
};
use strata::pipeline::{Action, PrepareInput, prepare};
use strata::store::{CompactionWrite, Store};

fn input(messages: &[Message]) -> CompressionInput<'_> {
    CompressionInput {
        messages,
        fixed_tokens: 500,
        counter: &QuarterCounter,
        topic: None,
        sent_tokens: None,
        sent_dropped: None,
    }
}

/// Ten turns of about 2,000 tokens, a tool call in each.
fn long_history() -> Builder {
    let mut b = Builder::new();
    for i in 0..10 {
        b.user(format!("Request {i}: look at src/mod{i}.rs"));
        b.tool(
            "read_file",
            &format!(r#"{{"path":"src/mod{i}.rs"}}"#),
            tokens(1_500),
        );
        b.assistant(format!("Answer {i}: {}", tokens(400)));
    }
    b
}

fn compress(e: &mut DefaultEngine, history: &[Message]) -> CompressionPlan {
    e.compress_extractive(Trigger::Manual, &input(history), 0)
        .unwrap()
}

/// What the pipeline does with each message of `history` in a 200k window.
fn actions(history: &[Message]) -> Vec<Action> {
    let counts: Vec<u32> = history
        .iter()
        .map(|m| strata::compress::tokens_of(&QuarterCounter, m))
        .collect();
    let system = RequestSystem {
        text: "You are a test.".into(),
        boundary_offset: None,
    };
    let p = prepare(&PrepareInput {
        system: &system,
        system_tokens: 4,
        messages: history,
        counts: &counts,
        counter: &QuarterCounter,
        tools: &[],
        tool_tokens: 0,
        window: 200_000,
        reserved_output: 1_000,
        exact: false,
        max_messages: None,
        single_system: false,
        model: "m",
        max_tokens: 1_000,
        temperature: None,
    })
    .unwrap();
    p.report.iter().map(|e| e.action).collect()
}

/// Stores `plan` for `history` as the runtime does (one compaction row).
fn persist(store: &mut Store, history: &[Message], plan: &CompressionPlan) {
    let archived: Vec<&Message> = history.iter().filter(|m| plan.archived.contains(&m.id)).collect();
    let compaction = Compaction {
        id: CompactionId::new(),
        session_id: history[0].session_id,
        trigger: CompactionTrigger::Manual,
        topic: None,
        first_message_id: archived.first().map(|m| m.id),
        last_message_id: archived.last().map(|m| m.id),
        summary_message_id: Some(plan.summary.id),
        summarizer: plan.summarizer.clone(),
        tokens_before: plan.tokens_before,
        tokens_after: plan.tokens_after,
        messages_before: plan.messages_before as u64,
        messages_after: plan.messages_after as u64,
        prompt_before_id: None,
        prompt_after_id: None,
        undone_at: None,
        created_at: 1,
        kind: CompactionKind::Summary,
        edited: false,
    };
    let mut inserted = vec![plan.summary.clone()];
    inserted.extend(plan.rewritten.iter().map(|(_, copy)| copy.clone()));
    store
        .apply_compaction(&CompactionWrite {
            compaction: &compaction,
            archived: &plan.archived,
            inserted: &inserted,
            prompt: None,
        })
        .unwrap();
}

#[test]
fn an_excluded_tool_call_stays_in_place_through_a_compression_and_comes_back() {
    let b = long_history();
    let mut history = b.build();
    // Turn 3's tool result (index 3 * 4 + 2), in the middle.
    let result_at = 14;
    assert_eq!(history[result_at].role, Role::Tool);
    history[result_at].excluded = true;
    history[result_at].content = format!("EXCLUDED-OUTPUT {}", tokens(1_500));
    let unit = [result_at - 1, result_at];
    let mut e = engine(32_000, 4_000, 0.75);
    let plan = compress(&mut e, &history);
    assert!(plan.archived.len() > 10, "a real middle was summarised");
    for &i in &unit {
        assert!(!plan.archived.contains(&history[i].id));
        let kept = plan.messages.iter().find(|m| m.id == history[i].id).unwrap();
        assert_eq!(kept, &history[i], "kept verbatim, not rewritten by pruning");
    }
    assert!(!plan.summary.content.contains("EXCLUDED-OUTPUT"));
    // In its place: the active history stays in `seq` order (the summary
    // takes the seq of the first message it replaces, or of the one it is
    // merged into), so the store reads it back as planned.
    assert!(plan.messages.windows(2).all(|w| w[0].seq < w[1].seq));
    let unit_at = plan
        .messages
        .iter()
        .position(|m| m.id == history[unit[0]].id)
        .unwrap();
    // Excluded, the unit is not sent; included, it is sent whole.
    let after = plan.messages.clone();
    let a = actions(&after);
    assert_eq!((a[unit_at], a[unit_at + 1]), (Action::Excluded, Action::Excluded));
    let mut included = after.clone();
    included[unit_at + 1].excluded = false;
    let a = actions(&included);
    assert_eq!((a[unit_at], a[unit_at + 1]), (Action::Kept, Action::Kept));

    // Through the store: undo gives back the history as it was, byte for byte.
    let mut store = Store::open_in_memory().unwrap();
    let (mut session, prompt) = store_support::session("/w", "t");
    session.id = b.session;
    let prompt = strata::domain::SystemPrompt {
        session_id: b.session,
        ..prompt
    };
    store.create_session(&session, &prompt).unwrap();
    store.append_messages(b.session, &mut history).unwrap();
    let before = store.messages(b.session, false).unwrap();
    persist(&mut store, &before, &plan);
    let active = store.messages(b.session, false).unwrap();
    let still = active.iter().find(|m| m.id == history[result_at].id).unwrap();
    assert!(still.excluded && still.archived_by.is_none());
    store.undo_compaction(b.session).unwrap();
    assert_eq!(store.messages(b.session, false).unwrap(), before);
}

#[test]
fn a_pinned_message_survives_five_compressions_verbatim() {
    let mut b = long_history();
    let pinned_text = format!("Keep this spec exactly: {}", tokens(300));
    b.push(Role::User, pinned_text.clone()).pinned = true;
    b.assistant("Noted, I will keep to the spec.");
    let pinned_id = b.messages[b.messages.len() - 2].id;
    let mut history = b.build();
    let mut e = engine(32_000, 4_000, 0.75);
    for round in 0..5 {
        // New work after the pin each round, so there is a middle to compress.
        for i in 0..4 {
            let mut more = Builder::new();
            more.session = b.session;
            more.user(format!("Round {round} request {i}: {}", tokens(300)));
            more.tool("grep", r#"{"pattern":"x"}"#, tokens(1_200));
            more.assistant(format!("Round {round} answer {i}: {}", tokens(300)));
            history.extend(more.build());
        }
        let plan = compress(&mut e, &history);
        assert!(
            !plan.archived.contains(&pinned_id),
            "round {round} archived the pin"
        );
        let pinned = plan.messages.iter().find(|m| m.id == pinned_id).unwrap();
        assert_eq!(pinned.content, pinned_text, "round {round}");
        assert!(pinned.pinned);
        assert_eq!(
            plan.messages
                .iter()
                .filter(|m| m.kind == MessageKind::Summary)
                .count(),
            1
        );
        history = plan.messages;
        let a = actions(&history);
        let at = history.iter().position(|m| m.id == pinned_id).unwrap();
        // Sent whole, merged after the summary of the same role before it.
        assert_eq!(a[at], Action::Merged, "round {round}");
    }
}
