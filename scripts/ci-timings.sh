#!/usr/bin/env bash
# Prints a table of the test binaries in a `cargo test` log: for each
# `Running <target> (<path>)` line (and each `Doc-tests <crate>`), the
# binary's name, its target, its passed/failed/ignored counts and its
# `finished in N s` time, then a total, the slowest binaries, and the tests
# libtest reported running for over 60 seconds.
#
#   scripts/ci-timings.sh [LOG]     LOG defaults to target/ci/test-run.log
#
# A binary with no `test result:` line (it crashed, or the log ends while it
# runs) is listed as `no result`. Works for any number of binaries.
# Exit status: 0 when the log names at least one test binary, 1 otherwise.
set -u

say() { printf '%s\n' "ci-timings: $*" >&2; }

repo=$(cd "$(dirname "$0")/.." && pwd)
log=${1:-$repo/target/ci/test-run.log}
[ -r "$log" ] || { say "cannot read $log; pass the saved output of cargo test (e.g. target/ci/test-run.log)"; exit 1; }

awk '
function trim(s) { sub(/^[ \t\r]+/, "", s); sub(/[ \t\r]+$/, "", s); return s }
function start(name, target) {
    n++
    names[n] = name; targets[n] = target; status[n] = "no result"
    passed[n] = ""; failed[n] = ""; ignored[n] = ""; secs[n] = ""
}
{
    line = $0
    gsub(/\033\[[0-9;]*[A-Za-z]/, "", line)   # colours, if any
    sub(/\r$/, "", line)
}
line ~ /^[ \t]*Running .* \(.*\)$/ {
    rest = line
    sub(/^[ \t]*Running /, "", rest)
    open = 0
    for (i = length(rest); i > 0; i--) if (substr(rest, i, 2) == " (") { open = i; break }
    target = substr(rest, 1, open - 1)
    path = substr(rest, open + 2, length(rest) - open - 2)
    name = path
    sub(/^.*\//, "", name)
    sub(/\.exe$/, "", name)
    sub(/-[0-9a-f]+$/, "", name)
    start(name, target)
    next
}
line ~ /^[ \t]*Doc-tests [^ ]+/ {
    name = trim(line)
    sub(/^Doc-tests /, "", name)
    start(name, "doc-tests")
    next
}
line ~ /^test result: [A-Za-z]+\. [0-9]+ passed; / && n > 0 {
    rest = line
    sub(/^test result: /, "", rest)
    word = rest
    sub(/\..*$/, "", word)
    status[n] = (word == "ok") ? "ok" : word
    sub(/^[^.]*\. */, "", rest)
    k = split(rest, parts, ";")
    for (i = 1; i <= k; i++) {
        p = trim(parts[i])
        if (p ~ / passed$/) { sub(/ passed$/, "", p); passed[n] = p }
        else if (p ~ / failed$/) { sub(/ failed$/, "", p); failed[n] = p }
        else if (p ~ / ignored$/) { sub(/ ignored$/, "", p); ignored[n] = p }
        else if (p ~ /^finished in /) { sub(/^finished in /, "", p); sub(/s$/, "", p); secs[n] = p }
    }
    next
}
line ~ /^test .* has been running for over [0-9]+ seconds/ && n > 0 {
    t = line
    sub(/^test /, "", t)
    sub(/ has been running for over .*$/, "", t)
    slow[++nslow] = names[n] "::" t
    next
}
END {
    if (n == 0) exit 1
    wn = length("test binary"); wt = length("target")
    for (i = 1; i <= n; i++) {
        if (length(names[i]) > wn) wn = length(names[i])
        if (length(targets[i]) > wt) wt = length(targets[i])
    }
    total = "total: " n " binar" (n == 1 ? "y" : "ies")
    if (length(total) > wn + 2 + wt) wt = length(total) - wn - 2
    fmt = "%-" wn "s  %-" wt "s  %7s %7s %7s %10s  %s\n"
    printf fmt, "test binary", "target", "passed", "failed", "ignored", "time", "result"
    tp = tf = ti = ts = 0; bad = ""
    for (i = 1; i <= n; i++) {
        time = (secs[i] == "") ? "-" : sprintf("%.2f s", secs[i])
        printf fmt, names[i], targets[i], (passed[i] == "" ? "-" : passed[i]), (failed[i] == "" ? "-" : failed[i]), \
            (ignored[i] == "" ? "-" : ignored[i]), time, status[i]
        tp += passed[i]; tf += failed[i]; ti += ignored[i]; ts += secs[i]
        if (status[i] != "ok") bad = bad (bad == "" ? "" : ", ") names[i] " (" targets[i] ")"
    }
    printf "%-" (wn + 2 + wt) "s  %7d %7d %7d %10s\n", total, tp, tf, ti, sprintf("%.2f s", ts)
    # The five slowest binaries, slowest first (a selection sort: n is small).
    for (i = 1; i <= n; i++) order[i] = i
    top = ""
    for (j = 1; j <= 5 && j <= n; j++) {
        best = j
        for (i = j + 1; i <= n; i++) if (secs[order[i]] + 0 > secs[order[best]] + 0) best = i
        tmp = order[j]; order[j] = order[best]; order[best] = tmp
        if (secs[order[j]] == "") break
        top = top (top == "" ? "" : ", ") names[order[j]] " " sprintf("%.2f s", secs[order[j]])
    }
    if (top != "") print "slowest: " top
    for (i = 1; i <= nslow; i++) print "ran over 60 s: " slow[i]
    if (bad != "") print "not ok: " bad
}
' "$log" || { say "no test binaries (\`Running ...\` lines) in $log; pass the output of cargo test, not of cargo test --no-run"; exit 1; }
