//! `tool_search` over a 1,000-tool catalog (issue 12, target ≤ 5 ms per
//! query), with what surrounds it: building the index once for the list,
//! and deciding the request's tools (every schema counted, the listing
//! fitted) for 1,000 deferred tools.
//!
//! The catalog is generated: 50 servers of 20 tools, names such as
//! `github__create_issue_comment`, descriptions of one or two sentences and
//! 2–6 parameters, from fixed word lists (deterministic). The queries are
//! two- or three-word keyword searches as a model writes them.
//!
//! Run: `cargo bench --bench tool_search` (a plain program: it prints its
//! figures).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "support/stats.rs"]
mod stats;

use serde_json::{Value, json};
use stats::percentiles;
use std::collections::BTreeMap;
use std::time::Instant;
use strata::tokens::{Encoding, TiktokenCounter};
use strata::tooling::Access;
use strata::tooling::deferred::{Deferred, Disclosure, Wire};
use strata::tooling::schema::{ToolSet, ToolSpec};
use strata::tools::catalog::Catalog;

const SERVERS: [&str; 50] = [
    "github",
    "gitlab",
    "jira",
    "linear",
    "slack",
    "discord",
    "notion",
    "confluence",
    "drive",
    "dropbox",
    "postgres",
    "mysql",
    "sqlite",
    "redis",
    "mongo",
    "elastic",
    "kafka",
    "s3",
    "gcs",
    "azure",
    "k8s",
    "docker",
    "terraform",
    "aws",
    "stripe",
    "shopify",
    "calendar",
    "gmail",
    "outlook",
    "zoom",
    "figma",
    "sentry",
    "datadog",
    "grafana",
    "pagerduty",
    "airtable",
    "hubspot",
    "salesforce",
    "zendesk",
    "twilio",
    "weather",
    "maps",
    "browser",
    "puppeteer",
    "search",
    "memory",
    "filesystem",
    "time",
    "fetch",
    "everything",
];
const VERBS: [&str; 10] = [
    "get", "list", "create", "update", "delete", "search", "send", "export", "sync", "archive",
];
const OBJECTS: [&str; 20] = [
    "issue",
    "comment",
    "file",
    "message",
    "channel",
    "page",
    "record",
    "table",
    "event",
    "user",
    "project",
    "branch",
    "invoice",
    "alert",
    "dashboard",
    "report",
    "ticket",
    "bucket",
    "cluster",
    "timezone",
];
const PARAMS: [&str; 12] = [
    "id", "name", "query", "path", "owner", "repo", "limit", "cursor", "body", "title", "labels", "timezone",
];
const QUERIES: [&str; 16] = [
    "time zone",
    "create issue",
    "list files in a directory",
    "send message channel",
    "delete record table",
    "search tickets",
    "export report",
    "update dashboard alert",
    "archive project",
    "weather forecast",
    "invoice payment",
    "sync bucket",
    "get user",
    "branch comment",
    "cluster event",
    "calendar event timezone",
];
const ROUNDS: usize = 25;

fn tools() -> Vec<ToolSpec> {
    let mut tools = Vec::with_capacity(1_000);
    for (s, server) in SERVERS.iter().enumerate() {
        for t in 0..20 {
            let verb = VERBS[(s + t) % VERBS.len()];
            let object = OBJECTS[(s * 7 + t) % OBJECTS.len()];
            let n_params = 2 + (s + t) % 5;
            let properties: serde_json::Map<String, Value> = (0..n_params)
                .map(|p| {
                    let key = PARAMS[(s + t + p * 5) % PARAMS.len()];
                    (
                        key.to_owned(),
                        json!({"type": "string", "description": format!("The {key} of the {object}.")}),
                    )
                })
                .collect();
            tools.push(ToolSpec {
                name: format!("{server}__{verb}_{object}_{t}"),
                description: format!(
                    "{verb} a {object} in {server}. Returns the {object} as JSON with its id, owner and \
                     timestamps; fails when the {object} does not exist or access is denied."
                ),
                parameters: json!({"type": "object", "properties": properties, "required": [PARAMS[s % 12]]}),
                access: Access::Run,
            });
        }
    }
    tools
}

fn main() {
    let tools = tools();
    assert_eq!(tools.len(), 1_000);

    let mut catalog = Catalog::new().unwrap();
    let started = Instant::now();
    assert!(catalog.update(&tools).unwrap());
    let build = started.elapsed();
    let started = Instant::now();
    assert!(!catalog.update(&tools).unwrap());
    let unchanged = started.elapsed();
    println!(
        "index of 1,000 tools: built in {:.2} ms; an unchanged list checked in {:.3} ms",
        build.as_secs_f64() * 1e3,
        unchanged.as_secs_f64() * 1e3
    );

    let mut search = Vec::new();
    let mut output = Vec::new();
    for _ in 0..ROUNDS {
        for query in QUERIES {
            let t = Instant::now();
            let found = catalog.search(query, 5).unwrap();
            search.push(t.elapsed());
            assert!(!found.is_empty(), "{query}");
            let t = Instant::now();
            let out = catalog.search_output(&json!({"query": query}));
            output.push(t.elapsed());
            assert!(out.output.head.contains("best first"));
        }
    }
    println!(
        "tool_search over 1,000 tools, search():        {}",
        percentiles(search)
    );
    println!(
        "tool_search over 1,000 tools, result text:     {}",
        percentiles(output)
    );

    let counter = TiktokenCounter::new(Encoding::O200kBase, true);
    let mut all = ToolSet::builtin();
    for server in SERVERS {
        let specs = tools
            .iter()
            .filter(|s| s.name.starts_with(&format!("{server}__")))
            .cloned()
            .collect();
        all = all.with_extra(server, specs);
    }
    let settings: BTreeMap<String, Deferred> = BTreeMap::new();
    let mut plans = Vec::new();
    let mut last = None;
    for _ in 0..5 {
        let t = Instant::now();
        let plan = Disclosure::plan(&all, &settings, 128_000, Wire::OpenAi, &counter);
        plans.push(t.elapsed());
        last = Some(plan);
    }
    let plan = last.unwrap();
    println!(
        "plan for 1,000 MCP tools (count, decide, list): {}",
        percentiles(plans)
    );
    let saving = plan.saving();
    println!(
        "  at 128k: {} deferred; listing {} described, {} named, {} left out ({} tokens); \
         tools array {} tokens direct, {} deferred (saves {})",
        plan.deferred().len(),
        plan.listing().described,
        plan.listing().named,
        plan.listing().left_out,
        plan.listing().tokens,
        saving.direct_tokens,
        saving.request_tokens,
        saving.saved_tokens()
    );
}
