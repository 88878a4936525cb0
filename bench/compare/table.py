#!/usr/bin/env python3
"""Writes the comparison table (Markdown) from the three result files.

Usage: table.py RESULTS_DIR > RESULTS_DIR/results.md
Reads strata.json, gptme.json and hermes.json from RESULTS_DIR; a missing
or failed party is shown as such. Ratios compare CPU time with CPU time
(peers: process CPU; strata: its single thread's CPU), which a busy shared
machine disturbs less than wall-clock time; strata's wall-clock time is
shown beside it. Standard library only.
"""

import json
import os
import sys


def load(d, name):
    try:
        with open(os.path.join(d, name), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def ms(x):
    return f"{x:,.1f} ms" if x >= 10 else f"{x:,.2f} ms"


def cpu(s, key):
    """strata's CPU milliseconds for `key` (its wall time when not measured)."""
    value = s.get(key.replace("_ms", "_cpu_ms"))
    return s[key] if value is None else value


def both(s, key):
    return f"{ms(cpu(s, key))} (wall {ms(s[key])})"


def ratio(peer_s, strata_ms, target):
    """The ratio, marked against `target` (None: a row for reference)."""
    if peer_s is None or strata_ms is None or strata_ms <= 0:
        return "n/a"
    r = peer_s * 1000 / strata_ms
    shown = f"{r:,.1f}" if r < 10 else f"{r:,.0f}"
    if target is None:
        return f"{shown}x (for reference)"
    mark = "met" if r >= target else "NOT met"
    return f"{shown}x ({mark}, target {target}x)"


def main():
    d = sys.argv[1]
    s = load(d, "strata.json")
    g = load(d, "gptme.json")
    h = load(d, "hermes.json")
    print("# strata vs gptme and hermes-agent on one history\n")
    if s:
        print(
            f"History: {s['messages_in']:,} messages, {s['tokens_in']:,} o200k tokens; "
            f"window {s['window']:,}, strata output reserve {s['reserved_output']:,}.\n"
        )
    print("| what | peer | peer CPU | strata | strata CPU (wall) | ratio (CPU) |")
    print("|---|---|---|---|---|---|")
    if g and s:
        peer = g["total_cpu_s"]
        print(
            f"| fit the log to the window | gptme {g['version']} `reduce_log`+`limit_log` | "
            f"{peer:,.1f} s ({g['reduce_log_cpu_s']:,.1f} + {g['limit_log_cpu_s']:,.2f}) | "
            f"`pipeline::prepare_with`, steady state (counts cached, memo warm) | {both(s, 'pipeline_steady_ms')} | "
            f"{ratio(peer, cpu(s, 'pipeline_steady_ms'), 100)} |"
        )
        print(
            f"| | | | first turn (counts cached, new memo) | {both(s, 'pipeline_first_turn_ms')} | "
            f"{ratio(peer, cpu(s, 'pipeline_first_turn_ms'), 100)} |"
        )
        print(
            f"| | | | cold (every message tokenised first) | {both(s, 'pipeline_cold_ms')} | "
            f"{ratio(peer, cpu(s, 'pipeline_cold_ms'), 100)} |"
        )
    elif s:
        print("| fit the log to the window | gptme: no result (see gptme.log) | | | | |")
    if h and s:
        print(
            f"| whole compression | hermes {h['version']} `compress()`, summariser stubbed | "
            f"{h['compress_cpu_s'] * 1000:,.0f} ms | extractive compression, counts as stored | "
            f"{both(s, 'compress_cached_ms')} | {ratio(h['compress_cpu_s'], cpu(s, 'compress_cached_ms'), 10)} |"
        )
        print(
            f"| | | | every message tokenised first (strata stores each count once) | "
            f"{both(s, 'compress_cold_ms')} | {ratio(h['compress_cpu_s'], cpu(s, 'compress_cold_ms'), None)} |"
        )
        print(
            f"| summariser input ({s['summary_input_messages']:,} messages) | hermes `_serialize_for_summary` | "
            f"{h['summary_input_cpu_s'] * 1000:,.0f} ms | `compress::summary_input` | "
            f"{both(s, 'summary_input_ms')} | {ratio(h['summary_input_cpu_s'], cpu(s, 'summary_input_ms'), 40)} |"
        )
    elif s:
        print("| whole compression | hermes-agent: no result (see hermes.log) | | | | |")
    print()
    if s:
        print(
            f"strata results: pipeline {s['pipeline_messages_out']} messages, "
            f"{s['pipeline_tokens_out']:,} tokens, {s['pipeline_truncated']} truncated; "
            f"compression {s['compress_messages_out']} messages, {s['compress_tokens_out']:,} tokens."
        )
    if g:
        print(
            f"gptme results: {g['messages_out']} messages, {g['tokens_out']:,} tokens, "
            f"{g['reduce_log_truncated_messages']} truncated."
        )
    if h:
        print(
            f"hermes results: compression {h['compress_messages_out']} messages, "
            f"~{h['compress_rough_tokens_out']:,} tokens (its rough estimate)."
        )


if __name__ == "__main__":
    main()
