#!/usr/bin/env python3
"""Writes the synthetic history every party of the comparison reads.

The output is an OpenAI chat-completions `messages` array: one system
message, then turns of a user request, an assistant message calling one
tool, the tool's result (a 200-line output: a build log, a file, grep hits
or a test run) and an assistant reply with a code block; the last message
is a user request. Some messages hold secrets for the redaction passes to
find. Deterministic: the same arguments write the same bytes.

Usage: make_history.py OUT.json [--turns 500] [--seed 7]
Standard library only.
"""

import argparse
import json
import random

WORDS = (
    "parser token buffer window budget history request reply summary cache "
    "index session message module crate trait function result error value "
    "config path branch commit test build release bench thread socket stream "
    "queue retry limit offset length header payload schema record column "
    "migration transaction archive compaction estimate tokenizer encoding "
    "boundary marker report layout render widget terminal cursor scroll "
    "the a of to in for with on when after before because so then and but"
).split()

CRATES = ["serde", "tokio", "regex", "rusqlite", "clap", "reqwest", "jiff", "uuid", "toml", "sha2"]


def sentence(rng, n):
    words = [rng.choice(WORDS) for _ in range(n)]
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def prose(rng, sentences):
    return " ".join(sentence(rng, rng.randint(8, 18)) for _ in range(sentences))


def code_block(rng, turn, lines):
    name = f"handle_{rng.choice(WORDS)}_{turn}"
    body = [f"fn {name}(input: &str, limit: usize) -> Result<Vec<String>, Error> {{"]
    for i in range(lines):
        var = f"{rng.choice(WORDS)}_{i}"
        body.append(f"    let {var} = input.get({i}).cloned();")
    body.append("    Ok(Vec::new())\n}")
    return "```rust\n" + "\n".join(body) + "\n```"


def secret(rng, turn):
    kind = turn % 4
    digits = "".join(rng.choice("abcdef0123456789") for _ in range(40))
    if kind == 0:
        return f"OPENAI_API_KEY=sk-proj-{digits}"
    if kind == 1:
        return f"export GITHUB_TOKEN=ghp_{digits[:36]}"
    if kind == 2:
        return f"aws_access_key_id = AKIA{digits[:16].upper()}"
    return f"DATABASE_URL=postgres://app:{digits[:12]}@db.internal:5432/app"


def tool_output(rng, turn, kind):
    lines = []
    for i in range(200):
        if kind == "shell":
            lines.append(f"   Compiling {rng.choice(CRATES)}_{i} v0.{turn % 17}.{i}")
        elif kind == "read_file":
            lines.append(f"{i + 1:>4}  let {rng.choice(WORDS)}_{i} = self.{rng.choice(WORDS)}({rng.randint(0, 9999)})?;")
        elif kind == "grep":
            lines.append(f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{turn}.rs:{rng.randint(1, 900)}: {rng.choice(WORDS)}_{i}();")
        else:
            status = "FAILED" if i == 150 else "ok"
            lines.append(f"test {rng.choice(WORDS)}::{rng.choice(WORDS)}_{i} ... {status}")
    if kind == "test":
        lines.append(f"error: test failed, to rerun pass `-p module_{turn} --lib`")
    if turn % 9 == 0:
        lines.insert(100, secret(rng, turn))
    return "\n".join(lines)


def tool_call(rng, turn):
    kind = ("shell", "read_file", "grep", "test")[turn % 4]
    if kind == "shell":
        name, args = "shell", {"command": f"cargo build -p module_{turn} --release"}
    elif kind == "read_file":
        name, args = "read_file", {"path": f"src/module_{turn}.rs", "offset": 1, "limit": 200}
    elif kind == "grep":
        name, args = "grep", {"pattern": f"{rng.choice(WORDS)}_{turn}", "path": "src/"}
    else:
        name, args = "shell", {"command": f"cargo test -p module_{turn}"}
    return kind, name, args


def history(turns, seed):
    rng = random.Random(seed)
    messages = [
        {
            "role": "system",
            "content": "You are a careful coding assistant working in a Rust repository. "
            + prose(rng, 6),
        }
    ]
    for turn in range(turns):
        request = f"Please look at src/module_{turn}.rs: {prose(rng, rng.randint(2, 5))}"
        if turn % 3 == 0:
            request += "\n\nHere is what I have so far:\n\n" + code_block(rng, turn, rng.randint(20, 40))
        if turn % 11 == 0:
            request += "\n\nThe CI uses " + secret(rng, turn + 1)
        messages.append({"role": "user", "content": request})
        kind, name, args = tool_call(rng, turn)
        call_id = f"call_{turn:04}"
        messages.append(
            {
                "role": "assistant",
                "content": prose(rng, 2),
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": tool_output(rng, turn, kind)})
        reply = prose(rng, rng.randint(3, 7)) + "\n\n" + code_block(rng, turn, rng.randint(24, 48))
        reply += "\n\n" + prose(rng, 2)
        messages.append({"role": "assistant", "content": reply})
    messages.append({"role": "user", "content": "Now summarise what changed today and what is left to do."})
    return messages


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--turns", type=int, default=500)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    messages = history(a.turns, a.seed)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump({"messages": messages}, f, ensure_ascii=False, indent=0)
    chars = sum(len(m["content"] or "") for m in messages)
    print(json.dumps({"messages": len(messages), "content_chars": chars, "out": a.out}))


if __name__ == "__main__":
    main()
