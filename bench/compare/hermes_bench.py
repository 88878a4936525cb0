#!/usr/bin/env python3
"""Times hermes-agent's context compression on the shared history:

- `compress`: `ContextCompressor.compress()` with the summariser stubbed
  (its `_generate_summary` returns a fixed text at once, so no model is
  called and no input is prepared for one): free pruning of old tool
  results, head and tail boundaries, assembly and tool-pair repair;
- `summary_input`: `_serialize_for_summary()` over every non-system message,
  what hermes prepares (role labels, caps, secret redaction) before a model
  summary; strata's `summary_input` is timed on the same messages.

The OpenAI `messages` are passed as they are (hermes works on that shape).
Constructor as documented for 0.19: model gpt-4o, provider openai, the
128,000-token window passed explicitly, quiet mode.

Usage: hermes_bench.py HISTORY.json OUT.json [--repeat 5]
Needs: hermes-agent in this interpreter's environment, HOME pointing at a
writable scratch directory. Writes one JSON object to OUT.json; each time
is the median of the repeats (compress runs on a fresh deep copy each time).
"""

import argparse
import copy
import json
import os
import statistics
import sys
import time

STUB_SUMMARY = "Summary of the earlier conversation (stubbed for the benchmark)."


def timed(fn, repeat):
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("history")
    ap.add_argument("out")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    if not os.environ.get("HOME"):
        sys.exit("HOME must be set (see README.md)")
    from agent.context_compressor import ContextCompressor

    try:
        from importlib.metadata import version

        hermes_version = version("hermes-agent")
    except Exception:  # noqa: BLE001 - the version is only a label
        hermes_version = "unknown"

    with open(a.history, encoding="utf-8") as f:
        data = json.load(f)
    messages = data["messages"] if isinstance(data, dict) else data

    def compressor():
        c = ContextCompressor(
            model="gpt-4o",
            config_context_length=128_000,
            quiet_mode=True,
            provider="openai",
        )
        c._generate_summary = lambda *args, **kwargs: STUB_SUMMARY
        return c

    def run_compress():
        return compressor().compress(copy.deepcopy(messages))

    # The deep copy is not hermes' work: time it alone and subtract it.
    copy_wall, copy_cpu, _ = timed(lambda: copy.deepcopy(messages), a.repeat)
    wall, cpu, compressed = timed(run_compress, a.repeat)

    c = compressor()
    middle = [m for m in messages if m.get("role") != "system"]
    s_wall, s_cpu, text = timed(lambda: c._serialize_for_summary(middle), a.repeat)

    from agent.model_metadata import estimate_messages_tokens_rough

    result = {
        "party": "hermes-agent",
        "version": hermes_version,
        "messages_in": len(messages),
        "compress_s": round(max(wall - copy_wall, 0.0), 4),
        "compress_cpu_s": round(max(cpu - copy_cpu, 0.0), 4),
        "compress_messages_out": len(compressed),
        "compress_rough_tokens_out": estimate_messages_tokens_rough(compressed),
        "summary_input_messages": len(middle),
        "summary_input_s": round(s_wall, 4),
        "summary_input_cpu_s": round(s_cpu, 4),
        "summary_input_chars": len(text),
        "repeat": a.repeat,
    }
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
