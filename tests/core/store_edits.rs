#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Edit and resend in the store: the `edit` and `edit_undo` records, their
//! checks against a session that changed, and their order with compressions.

use crate::support::store as store_support;

use store_support::{session, user};
use strata::domain::{
    Compaction, CompactionId, CompactionKind, CompactionTrigger, Message, MessageId, SessionId, Summarizer,
};
use strata::store::{EditWrite, Store, StoreError};

fn record(session: SessionId, kind: CompactionKind, archived: &[MessageId], at: i64) -> Compaction {
    Compaction {
        id: CompactionId::new(),
        session_id: session,
        trigger: CompactionTrigger::Manual,
        topic: None,
        first_message_id: archived.first().copied(),
        last_message_id: archived.last().copied(),
        summary_message_id: None,
        summarizer: Summarizer::Model(String::new()),
        tokens_before: 0,
        tokens_after: 0,
        messages_before: 0,
        messages_after: 0,
        prompt_before_id: None,
        prompt_after_id: None,
        undone_at: None,
        created_at: at,
        kind,
        edited: false,
    }
}

fn ids(store: &Store, s: SessionId) -> Vec<MessageId> {
    store.messages(s, false).unwrap().iter().map(|m| m.id).collect()
}

#[test]
fn an_edit_and_its_undo_check_the_session_and_follow_the_order_of_compressions() {
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = session("/w", "t");
    store.create_session(&s, &p).unwrap();
    let mut messages: Vec<Message> = ["one", "reply one", "two", "reply two"]
        .iter()
        .map(|t| user(s.id, t))
        .collect();
    for m in &mut messages {
        store.append_message(m).unwrap();
    }
    let before = store.messages(s.id, false).unwrap();

    // An edit that leaves an active message after the edited one is refused.
    let partial = [messages[2].id];
    let edit = record(s.id, CompactionKind::Edit, &partial, 1);
    let err = store
        .apply_edit(&EditWrite {
            record: &edit,
            archived: &partial,
        })
        .unwrap_err();
    assert!(matches!(err, StoreError::SessionChanged), "{err}");
    assert_eq!(store.messages(s.id, false).unwrap(), before);
    assert!(store.compactions(s.id).unwrap().is_empty(), "rolled back");

    let archived = [messages[2].id, messages[3].id];
    let edit = record(s.id, CompactionKind::Edit, &archived, 2);
    store
        .apply_edit(&EditWrite {
            record: &edit,
            archived: &archived,
        })
        .unwrap();
    assert_eq!(ids(&store, s.id), [messages[0].id, messages[1].id]);
    let err = store.undo_compaction(s.id).unwrap_err();
    assert!(matches!(err, StoreError::LatestIsEdit { .. }), "{err}");
    assert!(err.to_string().contains("undo-edit-message"), "{err}");

    let mut resent = user(s.id, "two, edited");
    store.append_message(&mut resent).unwrap();
    let compression = record(s.id, CompactionKind::Summary, &[], 3);
    store.insert_compaction(&compression).unwrap();
    let after = [resent.id];
    let undo = record(s.id, CompactionKind::EditUndo, &after, 4);
    let write = EditWrite {
        record: &undo,
        archived: &after,
    };
    let err = store.undo_edit(edit.id, &write).unwrap_err();
    assert!(matches!(err, StoreError::CompressedAfterEdit { .. }), "{err}");
    assert_eq!(store.undo_compaction(s.id).unwrap().id, compression.id);

    store.undo_edit(edit.id, &write).unwrap();
    assert_eq!(store.messages(s.id, false).unwrap(), before, "as before the edit");
    let records = store.compactions(s.id).unwrap();
    let undone = records.iter().find(|c| c.id == edit.id).unwrap();
    assert!(undone.undone_at.is_some());
    let err = store.undo_edit(edit.id, &write).unwrap_err();
    assert!(matches!(err, StoreError::NothingToUndoEdit { .. }), "{err}");
    // The record of the undo is not itself undone by undo-compress.
    let err = store.undo_compaction(s.id).unwrap_err();
    assert!(matches!(err, StoreError::NothingToUndo { .. }), "{err}");
    assert_eq!(store.messages(s.id, true).unwrap().len(), 5, "nothing deleted");
}
