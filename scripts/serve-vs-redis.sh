#!/usr/bin/env bash
# Measures `locksim serve` against redis-server with redis-benchmark, in alternating runs,
# and prints each run and a summary: throughput (requests/s) and the server's CPU time per
# request, medians and ranges, and locksim's ratio to redis-server.
#
# Why: issue 33 asks `serve` to stay within 1.5x of redis-server with `redis-benchmark -P
# 16`; on a shared 2-core machine one run says little, so the two servers take turns
# (the order flips every round) and the medians are compared (docs/performance.md).
#
# Usage: scripts/serve-vs-redis.sh [ROUNDS] [REQUESTS]
#   ROUNDS     rounds of the alternation, default 5
#   REQUESTS   requests per benchmark run (redis-benchmark -n), default 200000
#   LOCKSIM    (environment) the binary to serve, default target/release/locksim
#   PIPELINES  (environment) the -P values to run, default "16 1"
#   TESTS      (environment) the redis-benchmark tests, each run apart, default "set get"
#   BASELINE   (environment) an older locksim binary to run in the same rotation (named
#              "baseline" in the output), for before/after figures under the same load
#
# Each round starts each server once (locksim serve, redis-server --save '' --appendonly
# no, and the baseline's serve if given, on a free port), runs every -P and test against it, and stops it. The CPU time is the
# server process's utime + stime from /proc/PID/stat, read before and after each run.
# It builds nothing: run `cargo build --release` first. Needs redis-server,
# redis-benchmark and python3.
set -euo pipefail

rounds=${1:-5}
requests=${2:-200000}
repo=$(cd "$(dirname "$0")/.." && pwd)
locksim=${LOCKSIM:-$repo/target/release/locksim}
pipelines=${PIPELINES:-16 1}
tests=${TESTS:-set get}
baseline=${BASELINE:-}
servers="locksim redis"
if [[ -n $baseline ]]; then
    [[ -x $baseline ]] || { echo "$baseline is not an executable" >&2; exit 2; }
    servers="baseline locksim redis"
fi
[[ -x $locksim ]] || { echo "$locksim is missing: run cargo build --release first" >&2; exit 2; }
for tool in redis-server redis-benchmark python3; do
    command -v "$tool" >/dev/null || { echo "$tool is missing" >&2; exit 2; }
done

work=$(mktemp -d)
results="$work/results.tsv"
# shellcheck source=scripts/servers.sh
source "$repo/scripts/servers.sh"
cleanup() {
    stop_server
    rm -rf "$work"
}
trap cleanup EXIT

# Starts server $1 (locksim, baseline or redis) on a free port and waits until it accepts
# connections.
start_server() {
    port=$(free_port)
    case $1 in
        locksim) "$locksim" serve --port "$port" >"$work/server.log" 2>&1 & ;;
        baseline) "$baseline" serve --port "$port" >"$work/server.log" 2>&1 & ;;
        redis) redis-server --port "$port" --save '' --appendonly no >"$work/server.log" 2>&1 & ;;
    esac
    server_pid=$!
    wait_until_listening "$port" "$work/server.log" "$1"
}

# The server's CPU time so far, in clock ticks (utime + stime; the name in field 2 has no
# spaces for these two servers).
cpu_ticks() {
    awk '{ print $14 + $15 }' "/proc/$server_pid/stat"
}

printf 'round\tserver\tpipeline\ttest\trps\tcpu_us_per_request\n' | tee "$results"
ticks_per_s=$(getconf CLK_TCK)
for round in $(seq "$rounds"); do
    # The order turns every round, so that no server always runs first.
    read -ra order <<<"$servers"
    shift_by=$((round % ${#order[@]}))
    order=("${order[@]:shift_by}" "${order[@]:0:shift_by}")
    for server in "${order[@]}"; do
        start_server "$server"
        for pipeline in $pipelines; do
            for test in $tests; do
                before=$(cpu_ticks)
                csv=$(redis-benchmark -p "$port" -P "$pipeline" -t "$test" -n "$requests" --csv)
                after=$(cpu_ticks)
                rps=$(tail -n 1 <<<"$csv" | cut -d, -f2 | tr -d '"')
                cpu_us=$(python3 -c "print(f'{($after - $before) * 1e6 / $ticks_per_s / $requests:.2f}')")
                printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$server" "$pipeline" "$test" "$rps" "$cpu_us" |
                    tee -a "$results"
            done
        done
        stop_server
    done
done

python3 - "$results" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def figures(server, pipeline, test, field):
    return sorted(float(r[field]) for r in rows
                  if (r["server"], r["pipeline"], r["test"]) == (server, pipeline, test))
median = statistics.median
print()
print("pipeline test  server     rps median [range]         x redis  cpu us/req median [range]")
for pipeline in dict.fromkeys(r["pipeline"] for r in rows):
    for test in dict.fromkeys(r["test"] for r in rows):
        redis_rps = median(figures("redis", pipeline, test, "rps"))
        for server in dict.fromkeys(r["server"] for r in rows):
            rps = figures(server, pipeline, test, "rps")
            cpu = figures(server, pipeline, test, "cpu_us_per_request")
            print(f"-P {pipeline:<5} {test:<5} {server:<9} {median(rps):>8.0f} [{rps[0]:.0f}-{rps[-1]:.0f}]"
                  f"  {median(rps) / redis_rps:>5.2f}  {median(cpu):.2f} [{cpu[0]:.2f}-{cpu[-1]:.2f}]")
EOF
