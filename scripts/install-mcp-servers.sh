#!/usr/bin/env bash
# Installs the real MCP servers the tests connect to, at pinned versions,
# into a cache directory: target/mcp-servers/ under the repository, or
# $STRATA_MCP_SERVERS when set.
#
#   python/bin/mcp-server-time                         mcp-server-time (PyPI), in a venv
#   node/node_modules/.bin/mcp-server-everything       @modelcontextprotocol/server-everything (npm)
#   node/node_modules/.bin/mcp-server-filesystem       @modelcontextprotocol/server-filesystem (npm)
#
# Idempotent: a part whose pinned version is installed already is left
# alone (the versions are recorded in python/VERSION and node/VERSION).
# Node is installed with apt-get when `node` is missing and the script runs
# as root. Exit status: 0 when all three servers are installed afterwards,
# 1 otherwise.
set -u

TIME_VERSION=2026.10.19
EVERYTHING_VERSION=2026.8.31
FILESYSTEM_VERSION=2026.8.31

say() { printf '%s\n' "install-mcp-servers: $*"; }

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${STRATA_MCP_SERVERS:-$repo/target/mcp-servers}
mkdir -p "$dir" || { say "cannot create $dir"; exit 1; }
status=0

# mcp-server-time from PyPI, in its own venv.
py_want="mcp-server-time==$TIME_VERSION"
if [ "$(cat "$dir/python/VERSION" 2>/dev/null)" = "$py_want" ] && [ -x "$dir/python/bin/mcp-server-time" ]; then
    say "$py_want is installed"
else
    python=$(command -v python3 || command -v python || true)
    if [ -z "$python" ]; then
        say "python3 is missing: install it to get mcp-server-time"
        status=1
    else
        say "installing $py_want"
        rm -rf "$dir/python"
        if "$python" -m venv "$dir/python" \
            && "$dir/python/bin/python" -m pip install --quiet --disable-pip-version-check "$py_want"; then
            printf '%s\n' "$py_want" >"$dir/python/VERSION"
        else
            say "pip could not install $py_want; see its messages above"
            status=1
        fi
    fi
fi

# The two npm servers, in one node_modules.
node_want="@modelcontextprotocol/server-everything@$EVERYTHING_VERSION @modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing Node.js with apt-get"
        { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null 2>&1 \
            || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }; } \
            || say "apt-get could not install nodejs and npm"
    fi
fi
bin="$dir/node/node_modules/.bin"
if [ "$(cat "$dir/node/VERSION" 2>/dev/null)" = "$node_want" ] \
    && [ -x "$bin/mcp-server-everything" ] && [ -x "$bin/mcp-server-filesystem" ]; then
    say "$node_want are installed"
elif ! command -v npm >/dev/null 2>&1; then
    say "npm is missing (install Node.js 20 or later) to get the npm servers"
    status=1
else
    say "installing $node_want"
    rm -rf "$dir/node"
    mkdir -p "$dir/node"
    # shellcheck disable=SC2086
    if npm install --prefix "$dir/node" --no-audit --no-fund --loglevel=error --save-exact $node_want >/dev/null; then
        printf '%s\n' "$node_want" >"$dir/node/VERSION"
    else
        say "npm could not install the servers; see its messages above"
        status=1
    fi
fi

exit "$status"
