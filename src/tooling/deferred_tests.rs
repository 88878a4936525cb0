use super::*;
use crate::tokens::{Encoding, TiktokenCounter, tool_schema_tokens};
use proptest::prelude::*;

fn o200k() -> TiktokenCounter {
    TiktokenCounter::new(Encoding::O200kBase, true)
}

/// An MCP tool `server__tool` with string parameters `params`.
fn mcp(server: &str, tool: &str, description: &str, params: &[&str]) -> ToolSpec {
    let properties: serde_json::Map<String, Value> = params
        .iter()
        .map(|p| {
            (
                (*p).to_owned(),
                json!({"type": "string", "description": format!("The {p}.")}),
            )
        })
        .collect();
    ToolSpec {
        name: format!("{server}__{tool}"),
        description: description.to_owned(),
        parameters: json!({"type": "object", "properties": properties, "required": params}),
        access: Access::Run,
    }
}

fn time_tools() -> Vec<ToolSpec> {
    vec![
        mcp(
            "time",
            "get_current_time",
            "Get current time in a specific timezone",
            &["timezone"],
        ),
        mcp(
            "time",
            "convert_time",
            "Convert time between timezones",
            &["source_timezone", "time", "target_timezone"],
        ),
    ]
}

/// `n` tools of server `server`, each about 60 tokens.
fn many(server: &str, n: usize) -> Vec<ToolSpec> {
    (0..n)
        .map(|i| {
            mcp(
                server,
                &format!("op_{i:03}"),
                &format!("Operation number {i} of the {server} server, which does one thing well."),
                &["path", "mode"],
            )
        })
        .collect()
}

fn settings(pairs: &[(&str, Deferred)]) -> BTreeMap<String, Deferred> {
    pairs.iter().map(|(s, d)| ((*s).to_owned(), *d)).collect()
}

fn names(set: &ToolSet) -> Vec<String> {
    set.specs().iter().map(|e| e.spec.name.clone()).collect()
}

fn builtin_names() -> Vec<String> {
    names(&ToolSet::builtin())
}

const BRIDGES: [&str; 3] = ["tool_search", "tool_describe", "tool_call"];

#[test]
fn settings_parse_print_and_deserialise() {
    for d in Deferred::ALL {
        assert_eq!(d.as_str().parse::<Deferred>(), Ok(d));
        assert_eq!(d.to_string(), d.as_str());
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(serde_json::from_str::<Deferred>(&json).unwrap(), d);
    }
    assert_eq!(" always ".parse::<Deferred>(), Ok(Deferred::Always));
    let err = "sometimes".parse::<Deferred>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown deferred setting 'sometimes'; use auto, always or never"
    );
    assert_eq!(Deferred::default(), Deferred::Auto);
}

#[test]
fn the_auto_share_is_strictly_over_ten_percent() {
    assert!(!over_auto_share(12_800, 128_000));
    assert!(over_auto_share(12_801, 128_000));
    assert!(!over_auto_share(0, 16_000));
    assert!(Deferred::Always.defers(false) && !Deferred::Never.defers(true));
    assert!(Deferred::Auto.defers(true) && !Deferred::Auto.defers(false));
}

#[test]
fn always_leaves_the_builtin_tools_and_the_three_bridges() {
    let all = ToolSet::builtin().with_extra("time", time_tools());
    let plan = Disclosure::plan(
        &all,
        &settings(&[("time", Deferred::Always)]),
        128_000,
        Wire::OpenAi,
        &o200k(),
    );
    let mut expected = builtin_names();
    expected.extend(BRIDGES.map(str::to_owned));
    assert_eq!(names(plan.request()), expected);
    assert!(plan.is_deferred("time__convert_time"));
    assert!(!plan.is_deferred("read_file"));
    let deferred: Vec<&str> = plan.deferred().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(deferred, ["time__convert_time", "time__get_current_time"]);
    let search = plan.request().get("tool_search").unwrap();
    assert!(
        search
            .description
            .ends_with("Deferred tools:\n- time__convert_time: Convert time between timezones\n- time__get_current_time: Get current time in a specific timezone"),
        "{}",
        search.description
    );
    assert_eq!(plan.listing().described, 2);
}

#[test]
fn auto_defers_at_a_small_window_and_not_at_a_large_one() {
    let all = ToolSet::builtin()
        .with_extra("time", time_tools())
        .with_extra("big", many("big", 20));
    let auto = settings(&[]);
    let large = Disclosure::plan(&all, &auto, 128_000, Wire::OpenAi, &o200k());
    assert!(!large.over_auto_share());
    assert!(large.deferred().is_empty());
    assert_eq!(
        large.request().json(),
        all.json(),
        "nothing deferred: the full set's bytes"
    );
    assert_eq!(large.saving().saved_tokens(), 0);
    assert_eq!(large.saving().bridge_tokens, 0);

    let small = Disclosure::plan(&all, &auto, 8_000, Wire::OpenAi, &o200k());
    assert!(small.over_auto_share());
    assert_eq!(small.deferred().len(), 22);
    assert_eq!(small.request().specs().len(), 10 + 3);
    assert!(small.saving().saved_tokens() > 500, "{:?}", small.saving());
}

#[test]
fn never_keeps_a_server_direct_and_builtin_tools_are_never_deferred() {
    let all = ToolSet::builtin()
        .with_extra("time", time_tools())
        .with_extra("big", many("big", 20));
    let plan = Disclosure::plan(
        &all,
        &settings(&[("time", Deferred::Never)]),
        8_000,
        Wire::OpenAi,
        &o200k(),
    );
    let request = names(plan.request());
    assert_eq!(&request[..10], builtin_names().as_slice());
    assert_eq!(&request[10..12], ["time__convert_time", "time__get_current_time"]);
    assert_eq!(&request[12..], BRIDGES);
    assert_eq!(plan.deferred().len(), 20);
    assert!(
        plan.costs()
            .iter()
            .filter(|c| c.server.is_none())
            .all(|c| !c.deferred)
    );
}

#[test]
fn switched_off_tools_are_neither_direct_nor_deferred() {
    let mut all = ToolSet::builtin().with_extra("time", time_tools());
    all.set_enabled("time__convert_time", false);
    all.set_enabled("shell", false);
    let plan = Disclosure::plan(
        &all,
        &settings(&[("time", Deferred::Always)]),
        128_000,
        Wire::OpenAi,
        &o200k(),
    );
    let deferred: Vec<&str> = plan.deferred().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(deferred, ["time__get_current_time"]);
    assert!(plan.request().get("shell").is_none());
    assert_eq!(plan.costs().len(), 10);
}

#[test]
fn the_same_inputs_give_the_same_bytes_and_servers_only_append() {
    let counter = o200k();
    let plan = |all: &ToolSet, s: &BTreeMap<String, Deferred>| {
        Disclosure::plan(all, s, 16_000, Wire::OpenAi, &counter)
            .request()
            .json()
    };
    let s = settings(&[("big", Deferred::Always), ("time", Deferred::Never)]);
    let one = ToolSet::builtin().with_extra("time", time_tools());
    let two = one.clone().with_extra("big", many("big", 5));
    assert_eq!(plan(&two, &s), plan(&two.clone(), &s));
    let builtin = ToolSet::builtin().json();
    let builtin_prefix = &builtin[..builtin.len() - 1];
    let before = plan(&one, &s);
    let after = plan(&two, &s);
    assert!(before.starts_with(builtin_prefix) && after.starts_with(builtin_prefix));
    // A deferred server only adds the bridges at the end: the direct tools'
    // bytes stay a prefix.
    assert!(after.starts_with(&before[..before.len() - 1]), "{after}");
    // A third, direct server is appended after the direct ones; the
    // bridges follow it.
    let three = two.clone().with_extra("zed", many("zed", 1));
    let s3 = settings(&[
        ("big", Deferred::Always),
        ("time", Deferred::Never),
        ("zed", Deferred::Never),
    ]);
    let names3 = names(Disclosure::plan(&three, &s3, 16_000, Wire::OpenAi, &counter).request());
    assert_eq!(names3[12], "zed__op_000");
    assert_eq!(&names3[13..], BRIDGES);
}

#[test]
fn costs_and_saving_are_counted_on_the_wire_form() {
    let counter = o200k();
    let all = ToolSet::builtin().with_extra("big", many("big", 10));
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let plan = Disclosure::plan(
            &all,
            &settings(&[("big", Deferred::Always)]),
            128_000,
            wire,
            &counter,
        );
        let schemas: Vec<Value> = all.specs().iter().map(|e| wire.schema(&e.spec)).collect();
        let request: Vec<Value> = plan
            .request()
            .specs()
            .iter()
            .map(|e| wire.schema(&e.spec))
            .collect();
        let saving = plan.saving();
        assert_eq!(
            saving.direct_tokens,
            u64::from(tool_schema_tokens(&counter, &schemas))
        );
        assert_eq!(
            saving.request_tokens,
            u64::from(tool_schema_tokens(&counter, &request))
        );
        let sum: u64 = plan.costs().iter().map(|c| u64::from(c.tokens)).sum();
        assert_eq!(sum, saving.direct_tokens);
        assert_eq!(plan.costs()[10].server.as_deref(), Some("big"));
        assert!(plan.costs()[10].deferred);
    }
    let anthropic = Wire::Anthropic.schema(&time_tools()[0]);
    assert_eq!(anthropic["input_schema"]["required"], json!(["timezone"]));
    assert_eq!(anthropic["name"], "time__get_current_time");
    assert!(anthropic.get("function").is_none());
    // `always` on a two-tool server costs more than it saves.
    let small = ToolSet::builtin().with_extra("time", time_tools());
    let plan = Disclosure::plan(
        &small,
        &settings(&[("time", Deferred::Always)]),
        128_000,
        Wire::OpenAi,
        &counter,
    );
    assert!(plan.saving().saved_tokens() < 0, "{:?}", plan.saving());
}

#[test]
fn the_bridges_are_short_closed_schemas() {
    let counter = o200k();
    let bridges = bridge_specs("");
    let names: Vec<&str> = bridges.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, BRIDGES);
    let tokens: u32 = bridges.iter().map(|s| Wire::OpenAi.tokens(&counter, s)).sum();
    assert!(tokens < 260, "{tokens} tokens for the three bridges");
    for spec in &bridges {
        let props = spec.parameters["properties"].as_object().unwrap();
        for key in spec.parameters["required"].as_array().unwrap() {
            assert!(props.contains_key(key.as_str().unwrap()), "{}", spec.name);
        }
        assert_eq!(spec.parameters["additionalProperties"], false);
        assert_eq!(
            Bridge::from_name(&spec.name).map(Bridge::name),
            Some(spec.name.as_str())
        );
    }
    assert_eq!(Bridge::Search.access(), Some(Access::ReadOnly));
    assert_eq!(Bridge::Describe.access(), Some(Access::ReadOnly));
    assert_eq!(Bridge::Call.access(), None);
    assert_eq!(Bridge::from_name("read_file"), None);
}

#[test]
fn search_and_describe_arguments_are_read_or_explained() {
    assert_eq!(
        search_args(&json!({"query": " time zone "})),
        Ok(SearchArgs {
            query: "time zone".to_owned(),
            limit: SEARCH_DEFAULT_LIMIT
        })
    );
    assert_eq!(
        search_args(&json!({"query": "x", "limit": 500})).unwrap().limit,
        SEARCH_MAX_LIMIT
    );
    assert_eq!(search_args(&json!({"query": "x", "limit": 2})).unwrap().limit, 2);
    let err = search_args(&json!({"limit": 3})).unwrap_err();
    assert!(err.starts_with("tool_search needs `query`"), "{err}");
    let err = search_args(&json!({"query": "x", "limit": -1})).unwrap_err();
    assert!(err.contains("positive integer"), "{err}");
    assert_eq!(
        describe_args(&json!({"name": "time__convert_time"})).as_deref(),
        Ok("time__convert_time")
    );
    assert!(
        describe_args(&json!({"name": ""}))
            .unwrap_err()
            .starts_with("tool_describe needs `name`")
    );
}

#[test]
fn tool_call_gives_the_called_tool_with_its_access_and_arguments() {
    let mut tools = time_tools();
    tools[0].access = Access::ReadOnly;
    let all = ToolSet::builtin().with_extra("time", tools);
    let args = json!({"name": "time__get_current_time", "arguments": {"timezone": "UTC"}});
    let (spec, inner) = resolve_call(&all, &args).unwrap();
    assert_eq!(
        (spec.name.as_str(), spec.access),
        ("time__get_current_time", Access::ReadOnly)
    );
    assert_eq!(inner, json!({"timezone": "UTC"}));
    let as_text = json!({"name": "time__convert_time", "arguments": "{\"time\": \"12:00\"}"});
    let (spec, inner) = resolve_call(&all, &as_text).unwrap();
    assert_eq!((spec.access, inner), (Access::Run, json!({"time": "12:00"})));
    let (_, none) = resolve_call(&all, &json!({"name": "time__convert_time"})).unwrap();
    assert_eq!(none, json!({}));
    // A built-in tool may be called through the bridge too.
    assert_eq!(
        resolve_call(&all, &json!({"name": "shell", "arguments": {}}))
            .unwrap()
            .0
            .access,
        Access::Run
    );

    let err = |args: Value| resolve_call(&all, &args).unwrap_err();
    assert!(err(json!({})).starts_with("tool_call needs `name`"));
    assert_eq!(
        err(json!({"name": "time__nope"})),
        "There is no tool named `time__nope`; find the exact name with tool_search and call tool_call again."
    );
    assert!(err(json!({"name": "tool_call", "arguments": {}})).contains("call `tool_call` directly"));
    assert!(err(json!({"name": "time__convert_time", "arguments": [1]})).contains("must be a JSON object"));
    assert!(err(json!({"name": "time__convert_time", "arguments": "[1]"})).contains("must be a JSON object"));
}

#[test]
fn one_line_takes_the_first_line_collapsed_and_cut() {
    assert_eq!(one_line("\n  Reads   a file.\nMore text."), "Reads a file.");
    let long = "word ".repeat(40);
    let line = one_line(&long);
    assert_eq!(line.chars().count(), DESCRIPTION_CHARS);
    assert!(line.ends_with('…'));
    assert_eq!(one_line(""), "");
    assert_eq!(listing_budget(16_000), 800);
    assert_eq!(listing_budget(1_000_000), LISTING_MAX_TOKENS);
}

#[test]
fn the_listing_degrades_from_descriptions_to_names_to_a_count() {
    let counter = o200k();
    let tools = many("big", 30);
    let full = listing(&tools, 10_000, &counter);
    assert_eq!((full.described, full.named, full.left_out), (30, 0, 0));
    assert!(full.text.contains("- big__op_029: Operation number 29"));
    // Names cost far less than described lines: a budget between the two
    // lists every name and describes only the first ones.
    let names_only: u64 = 5 + tools
        .iter()
        .map(|s| counter.count(&format!("- {}\n", s.name)) as u64)
        .sum::<u64>();
    let mid = listing(&tools, names_only + 60, &counter);
    assert_eq!(mid.left_out, 0);
    assert!(mid.described > 0 && mid.named > 0, "{mid:?}");
    assert!(mid.text.contains("- big__op_029\n") || mid.text.ends_with("- big__op_029"));
    let few = listing(&tools, 40, &counter);
    assert_eq!(few.described, 0);
    assert!(few.named > 0 && few.left_out > 0, "{few:?}");
    assert!(
        few.text
            .ends_with(&format!("…and {} more; tool_search finds them.", few.left_out))
    );
    let none = listing(&tools, 5, &counter);
    assert_eq!((none.described, none.named, none.left_out), (0, 0, 30));
    assert_eq!(
        none.text,
        "30 deferred tools are not listed here; tool_search finds them."
    );
    assert_eq!(listing(&[], 100, &counter), Listing::default());
}

proptest! {
    #[test]
    fn the_listing_fits_its_budget_and_grows_with_it(budget in 0u64..1_500, n in 1usize..40) {
        let counter = o200k();
        let tools = many("srv", n);
        let got = listing(&tools, budget, &counter);
        prop_assert_eq!(got.described + got.named + got.left_out, n);
        prop_assert_eq!(got.tokens, counter.count(&got.text) as u64);
        prop_assert!(got.tokens <= budget || got.described + got.named == 0, "{:?}", got);
        let more = listing(&tools, budget + 50, &counter);
        prop_assert!(more.described + more.named >= got.described + got.named);
        prop_assert!(more.left_out > 0 || more.described >= got.described);
    }
}
