use super::*;
use serde_json::json;

fn rule(s: &str) -> Rule {
    s.parse().unwrap()
}

fn shell(command: &str) -> Value {
    json!({ "command": command })
}

fn allow(rules: &[&str]) -> Rules {
    Rules {
        allow: rules.iter().map(|r| rule(r)).collect(),
        deny: Vec::new(),
    }
}

fn run_shell(command: &str, policy: Policy, rules: &Rules) -> Verdict {
    decide(Access::Run, "shell", &shell(command), policy, rules, &[])
}

#[test]
fn policies_parse_and_print() {
    for p in Policy::ALL {
        assert_eq!(p.as_str().parse::<Policy>(), Ok(p));
        assert_eq!(p.to_string(), p.as_str());
    }
    assert_eq!(" read-only ".parse::<Policy>(), Ok(Policy::ReadOnly));
    let err = "readonly".parse::<Policy>().unwrap_err().to_string();
    assert_eq!(
        err,
        "unknown approval policy 'readonly'; use ask, read-only, all or sandboxed"
    );
}

#[test]
fn rules_parse_and_print_back() {
    assert_eq!(rule("edit_file"), Rule::Tool("edit_file".into()));
    assert_eq!(rule("shell:cargo test"), Rule::Command("cargo test".into()));
    assert_eq!(rule(" shell:  cargo   test "), Rule::Command("cargo test".into()));
    assert_eq!(rule("srv__lookup"), Rule::Tool("srv__lookup".into()));
    for text in ["edit_file", "shell:cargo test", "shell:git status -s"] {
        assert_eq!(rule(text).to_string(), text);
    }
}

#[test]
fn malformed_rules_are_refused_with_a_sentence() {
    let err = |s: &str| s.parse::<Rule>().unwrap_err();
    assert_eq!(err("").problem, "is empty");
    assert_eq!(err("   ").problem, "is empty");
    assert_eq!(err("shell:").problem, "has an empty command prefix");
    assert_eq!(
        err("edit_file:x").problem,
        "gives a command prefix for a tool other than shell"
    );
    assert!(err("edit file").problem.starts_with("is not a tool name"));
    assert!(
        err("shell:git status; rm")
            .problem
            .contains("a command prefix with")
    );
    assert!(err("shell:ls > out").problem.contains("a command prefix with"));
    let text = err("").to_string();
    assert!(
        text.starts_with("tool rule '' is empty; write a tool name such as"),
        "{text}"
    );
}

#[test]
fn a_prefix_is_offered_only_where_it_could_match_and_twice_where_it_deletes() {
    let offer = |c: &str| grant_offer("shell", &shell(c));
    assert_eq!(offer("for i in 1 2; do echo $i; done"), GrantOffer::None);
    // `;` in quotes still keeps every prefix rule off it: none is offered.
    assert_eq!(offer("printf 'a;b' x"), GrantOffer::None);
    assert_eq!(offer("printf 'a b' x"), GrantOffer::Plain(rule("shell:printf")));
    assert_eq!(offer("echo 'unbalanced"), GrantOffer::None);
    assert_eq!(offer("$(x) y"), GrantOffer::None);
    assert_eq!(
        offer("git status --short"),
        GrantOffer::Plain(rule("shell:git status"))
    );
    assert_eq!(offer("rm -rf build"), GrantOffer::Risky(rule("shell:rm -rf")));
    assert_eq!(
        offer("git reset --hard HEAD"),
        GrantOffer::Risky(rule("shell:git reset"))
    );
    assert_eq!(offer("git reset src"), GrantOffer::Risky(rule("shell:git reset")));
    assert_eq!(
        offer("git clean -fdx"),
        GrantOffer::Risky(rule("shell:git clean"))
    );
    assert_eq!(
        offer("mkfs.ext4 /dev/x"),
        GrantOffer::Risky(rule("shell:mkfs.ext4 /dev/x"))
    );
    assert_eq!(offer("chmod -R 777 ."), GrantOffer::Risky(rule("shell:chmod -R")));
    // `chmod 644` as a rule allows `chmod 644 -R /`.
    assert_eq!(offer("chmod 644 a"), GrantOffer::Risky(rule("shell:chmod 644")));
    assert_eq!(
        offer("chmod 777 -R /"),
        GrantOffer::Risky(rule("shell:chmod 777"))
    );
    // A program that runs another command, or one named by its path.
    assert_eq!(
        offer("sudo rm -rf build"),
        GrantOffer::Risky(rule("shell:sudo rm"))
    );
    assert_eq!(offer("env X=1 ls"), GrantOffer::Risky(rule("shell:env X=1")));
    assert_eq!(offer("xargs rm"), GrantOffer::Risky(rule("shell:xargs rm")));
    assert_eq!(
        offer("/bin/rm -rf build"),
        GrantOffer::Risky(rule("shell:/bin/rm -rf"))
    );
    // An option before git's subcommand can hide any subcommand.
    assert_eq!(
        offer("git -C . reset --hard"),
        GrantOffer::Risky(rule("shell:git -C"))
    );
    assert_eq!(offer("cargo test"), GrantOffer::Plain(rule("shell:cargo test")));
    assert_eq!(offer("ls -la"), GrantOffer::Plain(rule("shell:ls -la")));
    // A variable assignment first names no program: no rule.
    assert_eq!(offer("FOO=1 rm -rf build"), GrantOffer::None);
    assert_eq!(offer("find . -name x"), GrantOffer::Risky(rule("shell:find .")));
    assert_eq!(offer("dd if=a of=b"), GrantOffer::Risky(rule("shell:dd if=a")));
    assert_eq!(
        grant_offer("edit_file", &json!({})),
        GrantOffer::Plain(rule("edit_file"))
    );
}

#[test]
fn a_prefix_matches_at_a_word_boundary() {
    let rules = allow(&["shell:git status"]);
    assert_eq!(run_shell("git status", Policy::ReadOnly, &rules), Verdict::Run);
    assert_eq!(run_shell("git status -s", Policy::ReadOnly, &rules), Verdict::Run);
    assert_eq!(
        run_shell("  git   status\t-s", Policy::ReadOnly, &rules),
        Verdict::Run
    );
    assert_eq!(run_shell("git statusx", Policy::Ask, &rules), Verdict::Ask);
    assert_eq!(run_shell("git stat", Policy::Ask, &rules), Verdict::Ask);
    assert_eq!(run_shell("git log", Policy::Ask, &rules), Verdict::Ask);
}

#[test]
fn a_prefix_never_allows_a_chained_command() {
    let rules = allow(&["shell:git status"]);
    for command in [
        "git status; touch X",
        "git status && rm -rf x",
        "git status || rm -rf x",
        "git status | sh",
        "git status & rm -rf x",
        "git status $(touch x)",
        "git status `touch x`",
        "git status\ntouch x",
        "git status\rtouch x",
        "git status > ~/.bashrc",
        "git status <(touch x)",
    ] {
        assert_eq!(
            run_shell(command, Policy::Ask, &rules),
            Verdict::Ask,
            "{command:?}"
        );
        let grants = [rule("shell:git status")];
        let v = decide(
            Access::Run,
            "shell",
            &shell(command),
            Policy::Ask,
            &Rules::default(),
            &grants,
        );
        assert_eq!(v, Verdict::Ask, "grant, {command:?}");
    }
}

#[test]
fn a_tool_rule_or_grant_allows_the_tool_only() {
    let rules = allow(&["edit_file"]);
    let args = json!({"path": "a"});
    assert_eq!(
        decide(Access::Write, "edit_file", &args, Policy::Ask, &rules, &[]),
        Verdict::Run
    );
    assert_eq!(
        decide(Access::Write, "write_file", &args, Policy::Ask, &rules, &[]),
        Verdict::Ask
    );
    let grants = [Rule::Tool("write_file".into())];
    let v = decide(
        Access::Write,
        "write_file",
        &args,
        Policy::Ask,
        &Rules::default(),
        &grants,
    );
    assert_eq!(v, Verdict::Run);
    // A command rule never allows another tool, nor a tool rule `shell` a prefix check.
    let rules = allow(&["shell:cat"]);
    assert_eq!(
        decide(Access::Write, "write_file", &args, Policy::Ask, &rules, &[]),
        Verdict::Ask
    );
}

#[test]
fn deny_wins_over_everything_and_names_its_rule() {
    let rules = Rules {
        allow: vec![rule("shell")],
        deny: vec![rule("shell:rm"), rule("memory")],
    };
    let Verdict::Deny { reason } = run_shell("rm -rf target", Policy::All, &rules) else {
        panic!("rm must be denied");
    };
    assert_eq!(reason, "the rule \"shell:rm\" in [tools] deny forbids this call");
    assert!(matches!(
        run_shell("ls; rm -rf x", Policy::All, &rules),
        Verdict::Deny { .. }
    ));
    assert!(matches!(
        run_shell("echo $(rm x)", Policy::All, &rules),
        Verdict::Deny { .. }
    ));
    assert_eq!(run_shell("rmdir x", Policy::All, &rules), Verdict::Run);
    assert_eq!(
        deny_rule(&rules, "shell", &shell("ls | rm x")),
        Some(&rule("shell:rm"))
    );
    assert_eq!(deny_rule(&rules, "shell", &shell("ls")), None);
    // Read-only access does not skip a deny rule.
    let v = decide(
        Access::ReadOnly,
        "memory",
        &json!({"text": "x"}),
        Policy::All,
        &rules,
        &[],
    );
    assert!(matches!(v, Verdict::Deny { reason } if reason.contains("\"memory\"")));
}

#[test]
fn policies_decide_what_no_rule_covers() {
    let none = Rules::default();
    let args = json!({"path": "src/lib.rs"});
    assert_eq!(
        decide(Access::ReadOnly, "read_file", &args, Policy::ReadOnly, &none, &[]),
        Verdict::Run
    );
    assert_eq!(
        decide(Access::ReadOnly, "grep", &args, Policy::Ask, &none, &[]),
        Verdict::Run
    );
    assert_eq!(
        decide(Access::Write, "edit_file", &args, Policy::All, &none, &[]),
        Verdict::Run
    );
    assert_eq!(
        decide(Access::Write, "edit_file", &args, Policy::Ask, &none, &[]),
        Verdict::Ask
    );
    let Verdict::Deny { reason } = decide(Access::Write, "edit_file", &args, Policy::ReadOnly, &none, &[])
    else {
        panic!("read-only denies edits");
    };
    assert!(reason.starts_with("approval is read-only"), "{reason}");
    assert!(reason.contains("--approve all") && reason.contains("\"edit_file\" to [tools] allow"));
    let Verdict::Deny { reason } = run_shell("cargo test --lib", Policy::ReadOnly, &none) else {
        panic!("read-only denies shell");
    };
    assert!(
        reason.contains("\"shell:cargo test\" to [tools] allow"),
        "{reason}"
    );
    // A chained command: no prefix rule could allow it, so none is offered.
    let Verdict::Deny { reason } = run_shell("$(x)", Policy::ReadOnly, &none) else {
        panic!("read-only denies shell");
    };
    assert!(
        reason.contains("command-prefix rules never allow") && !reason.contains("[tools] allow"),
        "{reason}"
    );
    let with_rule = allow(&["shell:cat"]);
    let Verdict::Deny { reason } = run_shell("cat <(touch x) notes.txt", Policy::ReadOnly, &with_rule) else {
        panic!("a chained command is not allowed by a prefix");
    };
    assert!(!reason.contains("shell:cat"), "{reason}");
    let text = denied_text("shell", Some(&reason), DeniedBy::ReadOnly);
    assert_eq!(
        text.matches("read-only").count(),
        1 + usize::from(text.contains("read-only tools")),
        "{text}"
    );
    // Reading a credential: the advice allows that, not every read.
    let env = json!({"path": ".env"});
    let Verdict::Deny { reason } = decide(Access::ReadOnly, "read_file", &env, Policy::ReadOnly, &none, &[])
    else {
        panic!("read-only denies reading a credential");
    };
    assert!(
        reason.contains("looks like an environment file") && reason.ends_with("--approve all"),
        "{reason}"
    );
    assert!(!reason.contains("[tools] allow"), "{reason}");
}

#[test]
fn grants_cover_the_first_two_words_or_the_tool() {
    assert_eq!(
        grant_for("shell", &shell("cargo test --lib")),
        rule("shell:cargo test")
    );
    assert_eq!(grant_for("shell", &shell("ls")), rule("shell:ls"));
    assert_eq!(grant_for("shell", &shell("  git  log -3")), rule("shell:git log"));
    // A chained command is offered nothing; its grant allows nothing.
    for chained in ["  git  log -3\nrm x", "git status; rm x", "make&&rm x"] {
        assert_eq!(grant_offer("shell", &shell(chained)), GrantOffer::None);
        assert!(!grant_for("shell", &shell(chained)).allows("shell", Some(chained)));
    }
    assert_eq!(grant_for("edit_file", &json!({"path": "a"})), rule("edit_file"));
    // Never the whole shell: a command without a plain first word grants that line only.
    let odd = grant_for("shell", &shell("$(curl x)"));
    assert_eq!(odd, Rule::Command("$(curl x)".into()));
    assert!(!odd.allows("shell", Some("ls")));
    let empty = grant_for("shell", &json!({}));
    assert!(!empty.allows("shell", Some("rm -rf x")));
}

#[test]
fn denied_texts_say_who_why_and_what_next() {
    assert_eq!(
        denied_text("shell", Some("not on main."), DeniedBy::User),
        "The user denied this shell call: not on main. Do not retry it; ask the user or choose another approach."
    );
    assert_eq!(
        denied_text("edit_file", Some("  "), DeniedBy::User),
        "The user denied this edit_file call. Do not retry it; ask the user or choose another approach."
    );
    let by_rule = denied_text("shell", None, DeniedBy::Rule("shell:rm".into()));
    assert!(by_rule.contains("the rule \"shell:rm\" in [tools] deny") && by_rule.contains("Do not retry it"));
    let read_only = denied_text("write_file", None, DeniedBy::ReadOnly);
    assert!(read_only.contains("approval is read-only") && read_only.contains("--approve all"));
}

fn confined(interactive: bool) -> Confinement {
    Confinement {
        mode: super::super::sandbox::Mode::WorkspaceWrite,
        network: false,
        available: true,
        interactive,
        allow_network: Vec::new(),
    }
}

fn shell_in(args: &Value, policy: Policy, rules: &Rules, grants: &[Rule], sandbox: &Confinement) -> Verdict {
    decide_in(Access::Run, "shell", args, policy, rules, grants, sandbox)
}

#[test]
fn leaving_the_sandbox_is_never_allowed_by_a_rule_a_grant_or_all_alone() {
    let off = json!({"command": "docker ps", "sandbox": "off", "reason": "needs docker"});
    let net = json!({"command": "curl example.com", "network": true});
    let rules = allow(&["shell"]);
    let grants = [rule("shell:docker ps"), rule("shell:curl example.com")];
    for args in [&off, &net] {
        for policy in Policy::ALL {
            assert_eq!(
                shell_in(args, policy, &rules, &grants, &confined(true)),
                Verdict::Ask,
                "{policy} {args}"
            );
            let Verdict::Deny { reason } = shell_in(args, policy, &rules, &grants, &confined(false)) else {
                panic!("headless leaves only with its flag: {policy} {args}");
            };
            assert!(
                reason.contains("only the user can let a command leave the sandbox"),
                "{reason}"
            );
        }
    }
    let Verdict::Deny { reason } = shell_in(&off, Policy::All, &rules, &[], &confined(false)) else {
        panic!("denied");
    };
    assert!(
        reason.contains("runs outside the sandbox: needs docker")
            && reason.ends_with("--approve all --sandbox off"),
        "{reason}"
    );
    // --sandbox off / --network make the sandbox itself wider: then
    // --approve all runs the call.
    let wide = Confinement {
        mode: super::super::sandbox::Mode::Off,
        ..confined(false)
    };
    assert_eq!(
        shell_in(&off, Policy::All, &Rules::default(), &[], &wide),
        Verdict::Run
    );
    let networked = Confinement {
        network: true,
        ..confined(false)
    };
    assert_eq!(
        shell_in(&net, Policy::All, &Rules::default(), &[], &networked),
        Verdict::Run
    );
    assert!(matches!(
        shell_in(&off, Policy::All, &Rules::default(), &[], &networked),
        Verdict::Deny { .. }
    ));
    // A deny rule still wins.
    let deny = Rules {
        allow: Vec::new(),
        deny: vec![rule("shell:docker")],
    };
    assert!(matches!(
        shell_in(&off, Policy::Ask, &deny, &[], &confined(true)),
        Verdict::Deny { .. }
    ));
}

#[test]
fn sandboxed_runs_confined_commands_and_asks_for_the_rest() {
    let plain = json!({"command": "cargo test"});
    let net = json!({"command": "npm install", "network": true});
    let none = Rules::default();
    assert_eq!(
        shell_in(&plain, Policy::Sandboxed, &none, &[], &confined(true)),
        Verdict::Run
    );
    assert_eq!(
        shell_in(&plain, Policy::Sandboxed, &none, &[], &confined(false)),
        Verdict::Run
    );
    assert_eq!(
        shell_in(&net, Policy::Sandboxed, &none, &[], &confined(true)),
        Verdict::Ask
    );
    // An allow_network prefix gives the network: no longer offline, so it asks.
    let prefixed = Confinement {
        allow_network: vec!["npm install".into()],
        ..confined(true)
    };
    assert_eq!(
        shell_in(
            &json!({"command": "npm install"}),
            Policy::Sandboxed,
            &none,
            &[],
            &prefixed
        ),
        Verdict::Ask
    );
    // Without Landlock there is no sandbox: sandboxed asks like ask.
    let missing = Confinement {
        available: false,
        ..confined(true)
    };
    assert_eq!(
        shell_in(&plain, Policy::Sandboxed, &none, &[], &missing),
        Verdict::Ask
    );
    let headless_missing = Confinement {
        available: false,
        ..confined(false)
    };
    assert!(matches!(
        shell_in(&plain, Policy::Sandboxed, &none, &[], &headless_missing),
        Verdict::Deny { .. }
    ));
    // Other tools that change things ask (app) or are denied (headless).
    let edit = json!({"path": "a"});
    let sandbox = confined(true);
    assert_eq!(
        decide_in(
            Access::Write,
            "edit_file",
            &edit,
            Policy::Sandboxed,
            &none,
            &[],
            &sandbox
        ),
        Verdict::Ask
    );
    let headless = confined(false);
    let Verdict::Deny { reason } = decide_in(
        Access::Write,
        "edit_file",
        &edit,
        Policy::Sandboxed,
        &none,
        &[],
        &headless,
    ) else {
        panic!("headless sandboxed denies an edit");
    };
    assert!(
        reason.starts_with("approval is sandboxed (headless, only sandboxed shell commands"),
        "{reason}"
    );
    assert_eq!(
        decide_in(
            Access::ReadOnly,
            "read_file",
            &edit,
            Policy::Sandboxed,
            &none,
            &[],
            &headless
        ),
        Verdict::Run
    );
}
