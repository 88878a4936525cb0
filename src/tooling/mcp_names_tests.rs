use super::*;
use proptest::prelude::*;

fn rule() -> regex::Regex {
    regex::Regex::new(r"^[a-zA-Z0-9_-]{1,64}$").unwrap()
}

fn one(server: &str, tools: &[&str]) -> McpNames {
    McpNames::new([(server, tools.iter().copied())])
}

#[test]
fn a_plain_pair_is_server_underscore_underscore_tool() {
    let names = one("time", &["get_current_time", "convert_time"]);
    assert_eq!(
        names.name("time", "get_current_time"),
        Some("time__get_current_time")
    );
    assert_eq!(
        names.resolve("time__convert_time"),
        Some(("time", "convert_time"))
    );
    assert_eq!(names.resolve("convert_time"), None);
    assert_eq!(names.name("time", "nope"), None);
    assert_eq!(names.len(), 2);
}

#[test]
fn characters_outside_the_rule_become_underscores() {
    assert_eq!(sanitise("my server/π.x-y"), "my_server___x-y");
    let names = one("my.server", &["get-sum", "Ω"]);
    assert_eq!(names.name("my.server", "get-sum"), Some("my_server__get-sum"));
    assert_eq!(names.name("my.server", "Ω"), Some("my_server___"));
    assert!(is_valid("a-B_9"));
    assert!(!is_valid("") && !is_valid("a.b") && !is_valid(&"a".repeat(65)));
}

#[test]
fn an_over_long_name_keeps_its_start_and_ends_in_a_hash() {
    let long = "x".repeat(70);
    let names = one("server", &[&long, &format!("{long}y")]);
    let a = names.name("server", &long).unwrap();
    let b = names.name("server", &format!("{long}y")).unwrap();
    assert_eq!(a.len(), MAX_LEN);
    assert_eq!(&a[..55], &format!("server__{long}")[..55]);
    assert_eq!(a.as_bytes()[55], b'_');
    assert!(a[56..].bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
    assert_ne!(a, b, "the hash tells long names with the same start apart");
    assert_eq!(
        one("server", &[&long]).name("server", &long),
        Some(a),
        "deterministic"
    );
}

#[test]
fn collisions_get_numeric_suffixes_in_sorted_order() {
    // `a.b`, `a_b` and `a b` all sanitise to `a_b`; `a_b_2` is a real
    // tool's own name and must not be taken from it.
    let names = McpNames::new([("s", ["a_b", "a.b", "a_b_2", "a b"])]);
    assert_eq!(names.name("s", "a b"), Some("s__a_b"), "' ' sorts first");
    assert_eq!(names.name("s", "a.b"), Some("s__a_b_3"));
    assert_eq!(names.name("s", "a_b"), Some("s__a_b_4"));
    assert_eq!(names.name("s", "a_b_2"), Some("s__a_b_2"));
    // A server named `a__b` and a tool `b__c` of server `a` meet too.
    let names = McpNames::new([("a__b", vec!["c"]), ("a", vec!["b__c"])]);
    assert_eq!(names.name("a", "b__c"), Some("a__b__c"));
    assert_eq!(names.name("a__b", "c"), Some("a__b__c_2"));
    assert_eq!(names.resolve("a__b__c_2"), Some(("a__b", "c")));
}

#[test]
fn a_suffix_on_a_full_length_name_shortens_it() {
    // `s__` and 61 characters: exactly 64, so `_2` must cut it.
    let dotted = format!("{}.", "y".repeat(60));
    let plain = format!("{}_", "y".repeat(60));
    let names = McpNames::new([("s", [dotted.as_str(), plain.as_str()])]);
    let first = names.name("s", &dotted).unwrap();
    let second = names.name("s", &plain).unwrap();
    assert_eq!(first, format!("s__{plain}"));
    assert_eq!(second, format!("s__{}_2", "y".repeat(59)));
    assert_eq!(second.len(), MAX_LEN);
}

#[test]
fn the_same_pair_twice_counts_once() {
    let names = McpNames::new([("s", vec!["t"]), ("s", vec!["t", "u"])]);
    assert_eq!(names.len(), 2);
    assert_eq!(names.name("s", "t"), Some("s__t"));
}

fn server_lists() -> impl Strategy<Value = Vec<(String, Vec<String>)>> {
    // Short alphabets make collisions likely; long and non-ASCII names
    // exercise shortening and sanitising.
    let part = prop_oneof![
        3 => "[a._2]{0,4}",
        1 => "[a._ 3-]{0,5}",
        1 => "[a-zA-Z0-9_]{50,80}",
        1 => "\\PC{0,12}",
        1 => "[a.]{60,70}",
    ];
    prop::collection::vec((part.clone(), prop::collection::vec(part, 0..8)), 0..4)
}

proptest! {
    #[test]
    fn every_name_follows_the_rule_and_resolves_back(servers in server_lists()) {
        let names = McpNames::new(servers.iter().map(|(s, t)| (s, t)));
        let rule = rule();
        for (server, tool, name) in names.iter() {
            prop_assert!(rule.is_match(name), "{name:?}");
            prop_assert!(name.contains(SEPARATOR) || name.len() == MAX_LEN, "{name:?}");
            prop_assert_eq!(names.resolve(name), Some((server, tool)));
            prop_assert_eq!(names.name(server, tool), Some(name));
        }
        let pairs: BTreeSet<(&str, &str)> = servers
            .iter()
            .flat_map(|(s, tools)| tools.iter().map(move |t| (s.as_str(), t.as_str())))
            .collect();
        prop_assert_eq!(names.len(), pairs.len());
    }

    #[test]
    fn distinct_pairs_get_distinct_names(servers in server_lists()) {
        let names = McpNames::new(servers.iter().map(|(s, t)| (s, t)));
        let distinct: BTreeSet<&str> = names.iter().map(|(_, _, n)| n).collect();
        prop_assert_eq!(distinct.len(), names.len());
    }

    #[test]
    fn the_mapping_does_not_depend_on_the_input_order(
        servers in server_lists(),
        seed in any::<u64>(),
    ) {
        let names = McpNames::new(servers.iter().map(|(s, t)| (s, t)));
        // Reverse the servers, and rotate each tool list by the seed.
        let shuffled: Vec<(String, Vec<String>)> = servers
            .iter()
            .rev()
            .map(|(s, tools)| {
                let mut tools = tools.clone();
                if !tools.is_empty() {
                    let k = usize::try_from(seed % tools.len() as u64).unwrap();
                    tools.rotate_left(k);
                    tools.reverse();
                }
                (s.clone(), tools)
            })
            .collect();
        let again = McpNames::new(shuffled.iter().map(|(s, t)| (s, t)));
        prop_assert_eq!(names, again);
    }
}

fn kept(server: &str, tool: &str, name: &str) -> (String, String, String) {
    (server.to_owned(), tool.to_owned(), name.to_owned())
}

#[test]
fn a_kept_name_stays_on_its_tool_when_a_colliding_tool_appears() {
    let both = [("col", vec!["a_b", "a.b"])];
    // Named afresh, `a.b` sorts first and takes the plain name.
    let fresh = McpNames::new(both.clone());
    assert_eq!(fresh.name("col", "a.b"), Some("col__a_b"));
    assert_eq!(fresh.name("col", "a_b"), Some("col__a_b_2"));
    // The session named `a_b` first: it keeps its name, the newcomer gets
    // the suffix.
    let names = McpNames::with_kept([kept("col", "a_b", "col__a_b")], both);
    assert_eq!(names.name("col", "a_b"), Some("col__a_b"));
    assert_eq!(names.name("col", "a.b"), Some("col__a_b_2"));
    assert_eq!(names.resolve("col__a_b"), Some(("col", "a_b")));
}

#[test]
fn kept_names_of_absent_tools_stay_reserved_and_invalid_or_twice_taken_ones_are_not_used() {
    let names = McpNames::with_kept(
        [
            kept("gone", "tool", "srv__x"),
            kept("srv", "bad", "not valid!"),
            kept("srv", "one", "srv__shared"),
            kept("srv", "two", "srv__shared"),
        ],
        [("srv", vec!["x", "bad", "one", "two"])],
    );
    assert_eq!(
        names.name("srv", "x"),
        Some("srv__x_2"),
        "an absent tool's name stays its own"
    );
    assert_eq!(names.name("srv", "bad"), Some("srv__bad"));
    assert_eq!(
        names.name("srv", "one"),
        Some("srv__shared"),
        "the first kept holder"
    );
    assert_eq!(names.name("srv", "two"), Some("srv__two"));
    assert!(names.resolve("gone__tool").is_none());
}

#[test]
fn a_new_tool_never_takes_a_kept_name() {
    // `srv__b_x_2` was kept for another tool: the newcomer colliding on
    // `srv__b_x` skips it.
    let names = McpNames::with_kept(
        [kept("srv", "b_x", "srv__b_x"), kept("srv", "c", "srv__b_x_2")],
        [("srv", vec!["b_x", "b.x", "c"])],
    );
    assert_eq!(names.name("srv", "c"), Some("srv__b_x_2"));
    assert_eq!(names.name("srv", "b.x"), Some("srv__b_x_3"));
}

#[test]
fn a_tool_away_for_a_while_gets_its_name_back_and_no_other_takes_it() {
    let kept_ab = [kept("col", "a_b", "col__a_b")];
    // `a_b` is gone and `a.b` came: the newcomer does not take its name.
    let away = McpNames::with_kept(kept_ab, [("col", vec!["a.b"])]);
    assert_eq!(away.name("col", "a.b"), Some("col__a_b_2"));
    assert!(
        away.resolve("col__a_b").is_none(),
        "a call by the old name runs nothing"
    );
    // Back again, with the newcomer's name kept too.
    let back = McpNames::with_kept(
        [kept("col", "a_b", "col__a_b"), kept("col", "a.b", "col__a_b_2")],
        [("col", vec!["a_b", "a.b"])],
    );
    assert_eq!(back.name("col", "a_b"), Some("col__a_b"));
    assert_eq!(back.name("col", "a.b"), Some("col__a_b_2"));
}
