#!/usr/bin/env bash
# Installs the real MCP servers the tests connect to, at pinned versions,
# into a cache directory outside the repository, so a fresh clone (as in CI)
# reuses them: ${XDG_CACHE_HOME:-$HOME/.cache}/strata/mcp-servers/, or
# $STRATA_MCP_SERVERS when set (the whole directory).
#
#   python/bin/mcp-server-time                         mcp-server-time (PyPI), in a venv
#   node/node_modules/.bin/mcp-server-everything       @modelcontextprotocol/server-everything (npm)
#   node/node_modules/.bin/mcp-server-filesystem       @modelcontextprotocol/server-filesystem (npm)
#
# Idempotent: a part whose pinned version is installed already is left
# alone (the versions are recorded in python/VERSION and node/VERSION).
# When a part is installed or replaced, ${XDG_CACHE_HOME:-$HOME/.cache}/strata/tools.stamp
# is touched (a cargo build script watches it to notice new tools); when
# everything was installed already it is not.
# Node is installed with apt-get when `node` is missing and the script runs
# as root. Exit status: 0 when all three servers are installed afterwards,
# 1 otherwise.
set -u

TIME_VERSION=2026.10.19
EVERYTHING_VERSION=2026.8.31
FILESYSTEM_VERSION=2026.8.31

say() { printf '%s\n' "install-mcp-servers: $*"; }

if [ -n "${XDG_CACHE_HOME:-}" ]; then
    root=$XDG_CACHE_HOME/strata
elif [ -n "${HOME:-}" ]; then
    root=$HOME/.cache/strata
else
    say "neither XDG_CACHE_HOME nor HOME is set, so there is no cache directory; set one of them"
    exit 1
fi
dir=${STRATA_MCP_SERVERS:-$root/mcp-servers}
mkdir -p "$dir" || { say "cannot create $dir; set STRATA_MCP_SERVERS to a writable directory"; exit 1; }

# Touch the stamp on the way out whenever the install was changed, failed
# attempts included (a removed part is a change too).
changed=0
stamp() {
    if [ "$changed" = 1 ]; then
        mkdir -p "$root" && touch "$root/tools.stamp" \
            || say "cannot touch $root/tools.stamp; a cargo build may not notice the new servers until you touch it"
    fi
}
trap stamp EXIT
status=0

# mcp-server-time from PyPI, in its own venv.
py_want="mcp-server-time==$TIME_VERSION"
if [ "$(cat "$dir/python/VERSION" 2>/dev/null)" = "$py_want" ] && [ -x "$dir/python/bin/mcp-server-time" ]; then
    say "$py_want is installed in $dir/python; nothing to do"
else
    python=$(command -v python3 || command -v python || true)
    if [ -z "$python" ]; then
        say "python3 is missing: install it to get mcp-server-time"
        status=1
    else
        say "installing $py_want into $dir/python"
        changed=1
        rm -rf "${dir:?}/python"
        if "$python" -m venv "$dir/python" \
            && "$dir/python/bin/python" -m pip install --quiet --disable-pip-version-check "$py_want"; then
            printf '%s\n' "$py_want" >"$dir/python/VERSION"
            say "$py_want installed: $dir/python/bin/mcp-server-time"
        else
            say "pip could not install $py_want; see its messages above, then run this script again"
            status=1
        fi
    fi
fi

# The two npm servers, in one node_modules.
node_want="@modelcontextprotocol/server-everything@$EVERYTHING_VERSION @modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION"
# The servers run on node, so it is needed even when they are installed.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing Node.js with apt-get"
        { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null 2>&1 \
            || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }; } \
            || say "apt-get could not install nodejs and npm; install Node.js 20 or later yourself"
    fi
fi
bin="$dir/node/node_modules/.bin"
if [ "$(cat "$dir/node/VERSION" 2>/dev/null)" = "$node_want" ] \
    && [ -x "$bin/mcp-server-everything" ] && [ -x "$bin/mcp-server-filesystem" ]; then
    say "$node_want are installed in $dir/node; nothing to do"
else
    if ! command -v npm >/dev/null 2>&1; then
        say "npm is missing, so the npm servers are not installed; install Node.js 20 or later and run this script again"
        status=1
    else
        say "installing $node_want into $dir/node"
        changed=1
        rm -rf "${dir:?}/node"
        mkdir -p "$dir/node"
        # shellcheck disable=SC2086
        if npm install --prefix "$dir/node" --no-audit --no-fund --loglevel=error --save-exact $node_want >/dev/null; then
            printf '%s\n' "$node_want" >"$dir/node/VERSION"
            say "the npm servers are installed in $bin"
        else
            say "npm could not install the servers; see its messages above, then run this script again"
            status=1
        fi
    fi
fi

exit "$status"
