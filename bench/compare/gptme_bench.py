#!/usr/bin/env python3
"""Times gptme's per-turn log fitting on the shared history: `reduce_log`
(truncate the longest code blocks until the log is under 0.9 of the window)
then `limit_log` (keep the newest messages that fit), as gptme does before
each request, for openai/gpt-4o (128,000-token window, o200k_base).

The OpenAI `messages` are mapped to gptme's own log shape, which has no
`tool` role: an assistant tool call becomes a tool-format line
`@name(call_id): {json}` in the assistant's content (gptme keeps such
messages intact), and a tool result becomes a `system` message with that
`call_id` holding the output in a ```stdout block (as gptme's shell tool
writes it), so reduce_log can truncate it like gptme's own outputs.

Usage: gptme_bench.py HISTORY.json OUT.json
Needs: gptme in this interpreter's environment; HOME pointing at a writable
scratch directory; TIKTOKEN_CACHE_DIR holding o200k_base (see README.md).
Writes one JSON object to OUT.json (gptme logs to stdout). Runs for minutes (reduce_log re-tokenises the log
on every pass).
"""

import json
import os
import sys
import time


def to_gptme(messages, Message):
    names = {}
    log = []
    for m in messages:
        role = m["role"]
        content = m.get("content") or ""
        if role == "assistant" and m.get("tool_calls"):
            lines = [content] if content else []
            for tc in m["tool_calls"]:
                fn = tc["function"]
                names[tc["id"]] = fn["name"]
                lines.append(f"@{fn['name']}({tc['id']}): {fn['arguments']}")
            log.append(Message("assistant", "\n\n".join(lines)))
        elif role == "tool":
            call_id = m["tool_call_id"]
            name = names.get(call_id, "tool")
            log.append(
                Message("system", f"Ran `{name}`:\n```stdout\n{content}\n```", call_id=call_id)
            )
        else:
            log.append(Message(role, content))
    return log


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    for var in ("HOME", "TIKTOKEN_CACHE_DIR"):
        if not os.environ.get(var):
            sys.exit(f"{var} must be set (see README.md)")
    import gptme
    from gptme.llm.models import set_default_model
    from gptme.message import Message
    from gptme.util.reduce import limit_log, reduce_log
    from gptme.util.tokens import len_tokens

    # reduce_log recurses once per truncation (a nested generator per pass);
    # this history needs more passes than Python's default limit of 1,000.
    sys.setrecursionlimit(100_000)
    set_default_model("openai/gpt-4o")
    with open(sys.argv[1], encoding="utf-8") as f:
        data = json.load(f)
    messages = data["messages"] if isinstance(data, dict) else data
    log = to_gptme(messages, Message)
    model = "gpt-4o"
    tokens_before = len_tokens(log, model)

    wall0, cpu0 = time.perf_counter(), time.process_time()
    reduced = list(reduce_log(log))
    wall1, cpu1 = time.perf_counter(), time.process_time()
    limited = limit_log(reduced)
    wall2, cpu2 = time.perf_counter(), time.process_time()

    truncated = sum(1 for a, b in zip(log, reduced) if a.content != b.content)
    result = {
        "party": "gptme",
        "version": getattr(gptme, "__version__", "unknown"),
        "messages_in": len(log),
        "tokens_in": tokens_before,
        "reduce_log_s": round(wall1 - wall0, 3),
        "reduce_log_cpu_s": round(cpu1 - cpu0, 3),
        "reduce_log_truncated_messages": truncated,
        "reduce_log_tokens_out": len_tokens(reduced, model),
        "limit_log_s": round(wall2 - wall1, 3),
        "limit_log_cpu_s": round(cpu2 - cpu1, 3),
        "total_s": round(wall2 - wall0, 3),
        "total_cpu_s": round(cpu2 - cpu0, 3),
        "messages_out": len(limited),
        "tokens_out": len_tokens(limited, model),
    }
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
