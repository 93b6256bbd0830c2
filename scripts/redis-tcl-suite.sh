#!/usr/bin/env bash
# Runs units of Redis's own Tcl test suite against `locksim serve`, as an external server,
# and prints how many test cases passed, failed and were skipped.
#
# Why: the suite is the reference for what Redis does; counting it on locksim's node says how
# close the fake is, and this script makes that count reproducible (docs/redis-coverage.md).
#
# Usage: scripts/redis-tcl-suite.sh REDIS_SRC [UNIT...]
#   REDIS_SRC  a Redis 7.0 source tree (git clone --branch 7.0.15 https://github.com/redis/redis)
#   UNIT       test units relative to REDIS_SRC/tests, default unit/scripting
#   LOCKSIM    (environment) the binary to serve, default target/release/locksim
#
# It builds nothing: run `cargo build --release` first (`make redis-tcl` does). It needs
# tclsh 8.6 and python3. How it runs the suite, and why:
#   - as Redis's own CI job "external server, no debug" does: `--host --port --tags
#     "-slow -needs:debug"`; external mode also leaves out everything tagged external:skip;
#   - on a copy of the suite (target/redis-tcl/redis/) in which unit/scripting runs its
#     EVAL half only: the other half loads every script with FUNCTION LOAD, which the node
#     refuses by design (its function library stays empty);
#   - with scripts/redis-tcl-skip.txt as the skip file: test cases whose call to a missing
#     command would end the whole unit with a Tcl exception;
#   - one fresh server per unit, so that a unit's leftovers (CONFIG SET) cannot fail the next.
# Each unit's transcript is kept in target/redis-tcl/<unit>.log.
set -euo pipefail

if [[ $# -lt 1 ]]; then
    echo "usage: $0 REDIS_SRC [UNIT...]   (e.g. $0 ../redis-7.0.15 unit/scripting)" >&2
    exit 2
fi
redis_src=$(cd "$1" && pwd)
shift
units=("$@")
[[ ${#units[@]} -gt 0 ]] || units=(unit/scripting)

repo=$(cd "$(dirname "$0")/.." && pwd)
locksim=${LOCKSIM:-$repo/target/release/locksim}
skipfile="$repo/scripts/redis-tcl-skip.txt"
[[ -x $locksim ]] || { echo "$locksim is missing: run cargo build --release first" >&2; exit 2; }
[[ -x $redis_src/runtest && -d $redis_src/tests ]] ||
    { echo "$redis_src is not a Redis source tree (no runtest, no tests/)" >&2; exit 2; }
command -v tclsh >/dev/null || { echo "tclsh is missing (apt-get install tcl)" >&2; exit 2; }

work="$repo/target/redis-tcl"
suite="$work/redis"
rm -rf "$suite"
mkdir -p "$suite"
cp -r "$redis_src/runtest" "$redis_src/tests" "$suite/"
sed -i 's/^foreach is_eval {0 1} {$/foreach is_eval {1} {/' "$suite/tests/unit/scripting.tcl"

# shellcheck source=scripts/servers.sh
source "$repo/scripts/servers.sh"
trap stop_server EXIT

# Starts locksim serve on a free port and waits until it accepts connections.
start_server() {
    port=$(free_port)
    "$locksim" serve --port "$port" >"$work/serve.log" 2>&1 &
    server_pid=$!
    wait_until_listening "$port" "$work/serve.log" "locksim serve"
}

total_ok=0 total_err=0 total_skip=0 total_ignore=0
for unit in "${units[@]}"; do
    log="$work/$(echo "$unit" | tr / _).log"
    start_server
    # runtest exits non-zero on a failure; the counts below say so, so keep going.
    (cd "$suite" && ./runtest --host 127.0.0.1 --port "$port" --single "$unit" --clients 1 \
        --tags "-slow -needs:debug" --skipfile "$skipfile") >"$log" 2>&1 || true
    stop_server
    # Strip colours so the status tags read the same on a terminal and in a pipe.
    clean=$(sed 's/\x1b\[[0-9;]*m//g' "$log")
    count() { grep -cE "^\[($1)\]: " <<<"$clean" || true; }
    ok=$(count ok) err=$(count 'err|exception') skip=$(count skip) ignore=$(count ignore)
    echo "$unit: $ok passed, $err failed, $skip skipped by name," \
        "$ignore ignored by tag (a test or a whole block each) (log: $log)"
    grep -E '^\[(err|exception)\]: ' <<<"$clean" | sed 's/^/  /' || true
    total_ok=$((total_ok + ok)) total_err=$((total_err + err))
    total_skip=$((total_skip + skip)) total_ignore=$((total_ignore + ignore))
done
echo "total: $total_ok passed, $total_err failed, $total_skip skipped by name, $total_ignore ignored by tag"
[[ $total_err -eq 0 ]]
