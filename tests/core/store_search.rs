#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Full-text search over message text and session titles, at import scale,
//! with hostile input.

use crate::support::store as store_support;

use store_support::{session, user};
use strata::store::{SessionQuery, Store};

fn search(store: &Store, text: &str) -> Vec<String> {
    store
        .list_sessions(&SessionQuery {
            search: Some(text.into()),
            ..SessionQuery::default()
        })
        .unwrap()
        .into_iter()
        .map(|s| s.title)
        .collect()
}

#[test]
fn ten_thousand_bulk_messages_are_all_searchable() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(tmp.path().join("strata.db")).unwrap();
    let (big, p) = session("/w", "imported transcript");
    store.create_session(&big, &p).unwrap();
    let (other, p2) = session("/w", "unrelated");
    store.create_session(&other, &p2).unwrap();
    let mut one = user(other.id, "nothing planted here");
    store.append_message(&mut one).unwrap();

    let mut msgs: Vec<_> = (1..=10_000)
        .map(|i| {
            let word = if i == 7_777 { "zanzibarquux" } else { "filler" };
            user(big.id, &format!("message {i} says {word} about the parser"))
        })
        .collect();
    store.append_messages(big.id, &mut msgs).unwrap();
    assert_eq!(msgs[7_776].seq, 7_777);

    let row = store
        .list_sessions(&SessionQuery::default())
        .unwrap()
        .into_iter()
        .find(|s| s.id == big.id)
        .unwrap();
    assert_eq!(row.messages, 10_000);
    assert_eq!(search(&store, "zanzibarquux"), vec!["imported transcript"]);
    assert_eq!(
        search(&store, "ZANZIBAR"),
        vec!["imported transcript"],
        "case-insensitive prefix"
    );
    assert_eq!(search(&store, "nothing planted"), vec!["unrelated"]);
    assert_eq!(
        search(&store, "zanzibarquux planted"),
        Vec::<String>::new(),
        "all terms required"
    );
    let both = search(&store, "unrelated OR imported");
    assert!(both.is_empty(), "OR is a word, not an operator: {both:?}");
    assert_eq!(store.messages(big.id, false).unwrap().len(), 10_000);
}

#[test]
fn titles_are_searched_and_combined_with_the_workspace_filter() {
    let mut store = Store::open_in_memory().unwrap();
    for (ws, title) in [
        ("/a", "Refactor the tokenizer"),
        ("/b", "tokenizer bug"),
        ("/a", "lunch"),
    ] {
        let (s, p) = session(ws, title);
        store.create_session(&s, &p).unwrap();
    }
    let mut titles = search(&store, "tokeniz");
    titles.sort();
    assert_eq!(titles, vec!["Refactor the tokenizer", "tokenizer bug"]);
    let in_a = store
        .list_sessions(&SessionQuery {
            search: Some("tokenizer".into()),
            workspace: Some("/a".into()),
            limit: None,
        })
        .unwrap();
    assert_eq!(in_a.len(), 1);
    assert_eq!(in_a[0].title, "Refactor the tokenizer");
}

#[test]
fn punctuation_and_quotes_in_a_search_never_error() {
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = session("/w", "quoting");
    store.create_session(&s, &p).unwrap();
    let mut m = user(s.id, r#"the value was foo"bar and AND(x) near NEAR -y *z"#);
    store.append_message(&mut m).unwrap();

    for input in [
        "foo\"bar",
        "AND(",
        "\"",
        "\"\"",
        "(",
        ")",
        "*",
        "-",
        "^",
        ":",
        "NEAR(",
        "a:b",
        "x OR",
        "NOT",
        "'; DROP TABLE sessions; --",
        "{",
        "}",
        "[",
        "]",
        "+",
        "\\",
        "日本語",
        "🎉",
    ] {
        let r = store.list_sessions(&SessionQuery {
            search: Some(input.into()),
            ..SessionQuery::default()
        });
        assert!(r.is_ok(), "{input:?}: {r:?}");
    }
    assert_eq!(search(&store, "foo\"bar"), vec!["quoting"]);
    assert_eq!(search(&store, "AND("), vec!["quoting"]);
    assert_eq!(search(&store, "NEAR"), vec!["quoting"]);
    // Punctuation alone can match nothing (a blank search lists everything).
    assert!(search(&store, "\" ( *").is_empty());
    assert_eq!(search(&store, "  "), vec!["quoting"]);
    assert_eq!(search(&store, "absent"), Vec::<String>::new());
}

#[test]
fn terms_may_be_found_in_different_messages_or_the_title() {
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = session("/w", "Parser work");
    store.create_session(&s, &p).unwrap();
    for text in ["the lexer crashes", "fixed the panic in tokens"] {
        let mut m = user(s.id, text);
        store.append_message(&mut m).unwrap();
    }
    let (other, p2) = session("/w", "Lunch");
    store.create_session(&other, &p2).unwrap();
    let mut m = user(other.id, "the lexer is fine");
    store.append_message(&mut m).unwrap();

    assert_eq!(search(&store, "lexer panic"), vec!["Parser work"]);
    assert_eq!(
        search(&store, "parser crashes"),
        vec!["Parser work"],
        "title + message"
    );
    assert!(
        search(&store, "lexer sandwich").is_empty(),
        "every term is required"
    );
}

#[test]
fn cjk_words_inside_a_run_and_emoji_are_found_as_substrings() {
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = session("/w", "Notes");
    store.create_session(&s, &p).unwrap();
    let mut m = user(s.id, "中文测试 日本語テスト 🎉🚀 done");
    store.append_message(&mut m).unwrap();
    let (other, p2) = session("/w", "Other");
    store.create_session(&other, &p2).unwrap();
    let mut m = user(other.id, "plain words only");
    store.append_message(&mut m).unwrap();

    assert_eq!(search(&store, "测试"), vec!["Notes"]);
    assert_eq!(search(&store, "テスト"), vec!["Notes"]);
    assert_eq!(search(&store, "🎉"), vec!["Notes"]);
    assert_eq!(search(&store, "测试 done"), vec!["Notes"], "mixed with a word");
    assert!(search(&store, "한국어").is_empty());
    assert!(
        search(&store, "*").is_empty(),
        "punctuation alone matches nothing"
    );
    assert!(search(&store, "\" ( )").is_empty());
}
