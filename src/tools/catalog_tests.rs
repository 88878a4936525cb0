use super::*;
use crate::tooling::Access;
use crate::tooling::mcp_names::McpNames;
use crate::tooling::schema::builtin;
use serde_json::json;

const TIME_TOOLS: &str = include_str!("../../tests/fixtures/mcp/time_tools.json");

/// `mcp-server-time`'s tools as the session names them (`time__…`), read
/// only when the server marks them `readOnlyHint`.
fn time_tools() -> Vec<ToolSpec> {
    let list: Value = serde_json::from_str(TIME_TOOLS).unwrap();
    let tools = list["tools"].as_array().unwrap();
    let names = McpNames::new([("time", tools.iter().map(|t| t["name"].as_str().unwrap()))]);
    tools
        .iter()
        .map(|t| ToolSpec {
            name: names
                .name("time", t["name"].as_str().unwrap())
                .unwrap()
                .to_owned(),
            description: t["description"].as_str().unwrap().to_owned(),
            parameters: t["inputSchema"].clone(),
            access: if t["annotations"]["readOnlyHint"] == true {
                Access::ReadOnly
            } else {
                Access::Run
            },
        })
        .collect()
}

/// The built-in tools as if a server `workspace` offered them, including
/// `current_time` ("… date, time and time zone").
fn noise() -> Vec<ToolSpec> {
    builtin()
        .into_iter()
        .map(|mut s| {
            s.name = format!("workspace__{}", s.name);
            s
        })
        .collect()
}

fn catalog(tools: &[ToolSpec]) -> Catalog {
    let mut catalog = Catalog::new().unwrap();
    assert!(catalog.update(tools).unwrap());
    catalog
}

fn names(found: &[(String, f64)]) -> Vec<&str> {
    found.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn name_words_split_separators_and_camel_case() {
    assert_eq!(name_words("time__get_current_time"), "time get current time");
    assert_eq!(
        name_words("everything__getTinyImage"),
        "everything get tiny image"
    );
    assert_eq!(name_words("get-sum"), "get sum");
    assert_eq!(name_words("HTTPServer v2"), "httpserver v2");
    assert_eq!(name_words("__"), "");
}

#[test]
fn time_zone_ranks_the_two_time_tools_first() {
    let mut tools = noise();
    tools.extend(time_tools());
    let catalog = catalog(&tools);
    let found = catalog.search("time zone", 5).unwrap();
    let mut top: Vec<&str> = names(&found)[..2].to_vec();
    top.sort_unstable();
    assert_eq!(top, ["time__convert_time", "time__get_current_time"], "{found:?}");
    assert!(
        found.windows(2).all(|w| w[0].1 >= w[1].1),
        "best first: {found:?}"
    );
    assert!(found[1].1 > found[2].1, "{found:?}");
}

#[test]
fn keywords_match_inside_words_and_parameter_names_count() {
    let mut tools = noise();
    tools.extend(time_tools());
    let catalog = catalog(&tools);
    // Only a parameter name says `target`.
    assert_eq!(
        names(&catalog.search("target", 5).unwrap()),
        ["time__convert_time"]
    );
    // `zone` is inside `timezone`.
    assert!(names(&catalog.search("zone", 5).unwrap()).contains(&"time__get_current_time"));
    // The schema body (`IANA`, `America/New_York`) is not indexed.
    assert!(catalog.search("IANA", 5).unwrap().is_empty());
    assert!(catalog.search("America London", 5).unwrap().is_empty());
    // Operators and quotes are plain words; short words match nothing.
    assert!(catalog.search("\"AND( NEAR", 5).is_ok());
    assert!(catalog.search("a b", 5).unwrap().is_empty());
    assert_eq!(catalog.search("file", 2).unwrap().len(), 2, "the limit holds");
}

#[test]
fn the_index_is_rebuilt_only_when_the_list_changes() {
    let mut catalog = Catalog::new().unwrap();
    assert!(catalog.search("time", 5).unwrap().is_empty());
    let tools = time_tools();
    assert!(catalog.update(&tools).unwrap());
    assert!(!catalog.update(&tools).unwrap(), "same list, no rebuild");
    assert_eq!(catalog.search("convert", 5).unwrap().len(), 1);
    let mut changed = tools.clone();
    changed[1].description = "Convert a wall-clock time from one zone to another".to_owned();
    assert!(catalog.update(&changed).unwrap());
    assert_eq!(
        names(&catalog.search("clock", 5).unwrap()),
        ["time__convert_time"]
    );
    // The catalog follows the live list: a tool that left is not found.
    assert!(catalog.update(&changed[..1]).unwrap());
    assert!(catalog.search("convert", 5).unwrap().is_empty());
    assert_eq!(catalog.tools().len(), 1);
    assert!(catalog.update(&[]).unwrap());
    assert!(catalog.tools().is_empty());
}

#[test]
fn tool_search_answers_with_signatures_and_one_line_descriptions() {
    let mut tools = noise();
    tools.extend(time_tools());
    let catalog = catalog(&tools);
    let out = catalog.search_output(&json!({"query": "convert time", "limit": 1}));
    assert_eq!(out.status, crate::tooling::ToolStatus::Ok);
    assert_eq!(
        out.output.head,
        "1 deferred tool for \"convert time\", best first:\n\
         - time__convert_time(source_timezone, target_timezone, time): Convert time between timezones\n\
         tool_describe gives a tool's parameter schema; tool_call runs it."
    );
    let none = catalog.search_output(&json!({"query": "weather forecast"}));
    assert_eq!(none.status, crate::tooling::ToolStatus::Ok);
    assert!(
        none.output
            .head
            .starts_with("No deferred tool matches \"weather forecast\" (12 are deferred)")
    );
    let bad = catalog.search_output(&json!({"q": "time"}));
    assert_eq!(bad.status, crate::tooling::ToolStatus::Error);
    let empty = Catalog::new().unwrap().search_output(&json!({"query": "time"}));
    assert!(empty.output.head.starts_with("No tool is deferred"));
}

#[test]
fn tool_describe_gives_the_whole_schema_or_close_names() {
    let catalog = catalog(&time_tools());
    let out = catalog.describe_output(&json!({"name": "time__get_current_time"}));
    assert_eq!(out.status, crate::tooling::ToolStatus::Ok);
    let lines: Vec<&str> = out.output.head.lines().collect();
    assert_eq!(lines[0], "time__get_current_time");
    assert_eq!(lines[1], "Get current time in a specific timezone");
    let schema = lines[2].strip_prefix("Parameters (JSON schema): ").unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(schema).unwrap(),
        time_tools()[0].parameters
    );
    assert!(lines[3].starts_with("Run it with tool_call {\"name\": \"time__get_current_time\""));
    let unknown = catalog.describe_output(&json!({"name": "get_current_time"}));
    assert_eq!(unknown.status, crate::tooling::ToolStatus::Error);
    assert!(
        unknown.output.head.starts_with(
            "There is no deferred tool named `get_current_time` (close: `time__get_current_time`"
        ),
        "{}",
        unknown.output.head
    );
    let blank = catalog.describe_output(&json!({}));
    assert!(blank.output.head.starts_with("tool_describe needs `name`"));
}
