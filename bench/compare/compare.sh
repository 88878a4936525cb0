#!/usr/bin/env bash
# Runs the peer comparison end to end; see README.md next to this file.
#
#   bench/compare/compare.sh            # everything, results in bench/compare/results/
#   REUSE=1 bench/compare/compare.sh    # keep results already written
#
# Environment: OUT (results directory), VENVS (virtualenv directory),
# TURNS (history size, default 500 turns = 2,002 messages), REPEAT (runs per
# figure, default 9), NICE (niceness, default 10).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="${OUT:-$HERE/results}"
VENVS="${VENVS:-$HERE/.venv}"
TURNS="${TURNS:-500}"
REPEAT="${REPEAT:-9}"
NICE="${NICE:-10}"
GPTME_VERSION="0.35.1"
HERMES_VERSION="0.19.0"
mkdir -p "$OUT" "$OUT/home" "$OUT/tiktoken-cache" "$VENVS"
HISTORY="$OUT/history.json"

have() { [[ "${REUSE:-0}" == 1 && -s "$1" ]]; }
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# 1. The history, written once; every party reads this file.
if ! have "$HISTORY"; then
  python3 "$HERE/make_history.py" "$HISTORY" --turns "$TURNS" >&2
fi

# 2. Virtualenvs, one per peer (their dependencies do not mix).
venv() { # name package==version
  local dir="$VENVS/$1"
  if [[ ! -x "$dir/bin/python" ]]; then
    log "creating $dir"
    python3 -m venv "$dir"
    "$dir/bin/pip" install -q "$2"
  fi
  echo "$dir/bin/python"
}
GPTME_PY="$(venv gptme "gptme==$GPTME_VERSION")"
HERMES_PY="$(venv hermes "hermes-agent==$HERMES_VERSION")"

# 3. tiktoken's o200k_base table for gptme, taken (gzipped) from the bpe-openai
#    crate strata builds with (same bytes, checked by tiktoken's own hash), so
#    no download is needed. tiktoken names cache files by the SHA-1 of the URL.
BPE_NAME="$(printf '%s' 'https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken' | sha1sum | cut -d' ' -f1)"
if [[ ! -s "$OUT/tiktoken-cache/$BPE_NAME" ]]; then
  CRATE_DIR="$(cd "$ROOT" && cargo metadata --format-version 1 |
    python3 -c 'import json,sys,os; p=[p for p in json.load(sys.stdin)["packages"] if p["name"]=="bpe-openai"][0]; print(os.path.dirname(p["manifest_path"]))')"
  gzip -dc "$CRATE_DIR/data/o200k_base.tiktoken.gz" >"$OUT/tiktoken-cache/$BPE_NAME"
fi

# 4. gptme in the background (reduce_log takes minutes of CPU).
GPTME_PID=""
if ! have "$OUT/gptme.json"; then
  rm -f "$OUT/gptme.json"
  log "gptme: reduce_log + limit_log (runs for minutes; log in $OUT/gptme.log)"
  HOME="$OUT/home" TIKTOKEN_CACHE_DIR="$OUT/tiktoken-cache" \
    nice -n "$NICE" "$GPTME_PY" "$HERE/gptme_bench.py" "$HISTORY" "$OUT/gptme.json" >"$OUT/gptme.log" 2>&1 &
  GPTME_PID=$!
fi

# 5. hermes-agent.
if ! have "$OUT/hermes.json"; then
  log "hermes-agent: compress() and summariser input"
  HOME="$OUT/home" nice -n "$NICE" "$HERMES_PY" "$HERE/hermes_bench.py" "$HISTORY" "$OUT/hermes.json" \
    --repeat 5 >"$OUT/hermes.log" 2>&1 || log "hermes-agent failed; see $OUT/hermes.log"
fi

# 6. strata (release build).
if ! have "$OUT/strata.json"; then
  log "strata: building and running examples/compare.rs (release)"
  (cd "$ROOT" && nice -n "$NICE" cargo run -q --release --example compare -- "$HISTORY" --repeat "$REPEAT") \
    >"$OUT/strata.json"
fi

# 7. Wait for gptme, then the table.
if [[ -n "$GPTME_PID" ]]; then
  while kill -0 "$GPTME_PID" 2>/dev/null; do
    log "waiting for gptme ($(tail -c 200 "$OUT/gptme.log" | tr '\n\r' '  ' | tail -c 100))"
    sleep 30
  done
  wait "$GPTME_PID" || log "gptme failed; see $OUT/gptme.log"
fi
python3 "$HERE/table.py" "$OUT" >"$OUT/results.md"
cat "$OUT/results.md"
