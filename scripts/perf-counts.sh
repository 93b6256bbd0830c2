#!/usr/bin/env bash
# Counts what a simulated event costs, and the share of the ping-pong it reaches, with
# cachegrind: instructions, instruction- and data-cache misses, last-level misses and
# mispredicted branches per event, and an estimated cycle count from them.
#
# Why: issue 33 measures the simulator against the bare madsim ping-pong, and wall clock
# on a shared machine moves +-25% from run to run, more than most changes it would judge.
# Cachegrind's counts are exact; its cache model tells what instruction counts miss (a
# quarter of an event's cycles are instruction-cache misses). The figures in
# docs/performance.md since the eleventh pass are this script's (run from a scratch copy
# until stop 49).
#
# Usage: scripts/perf-counts.sh [BIN]
#   BIN    the binary to measure, default target/release/locksim (`make build`'s)
#   RUNS   (environment) cachegrind runs of each measurement, default 3: the one with the
#          fewest estimated cycles is kept, since last-level misses change between runs
#          of one binary (the load addresses change which lines collide: 2.3 and 7.3
#          an event, +1.4% estimated cycles, on one binary at stop 49)
#   OUT    (environment) where cachegrind's files go, default a new temporary directory
#
# The measurements, as in every pass since the first: `run` of Redlock-5 at 3 seeds and
# single node at 10 (`--jobs 1`), per event (messages written plus timers fired, from
# `bench --json` over the same seeds); the ping-pong is `bench --pingpong 20000` (twice
# 20,000 round trips) less the same bench without it, per message. Estimated cycles =
# Ir + 12 x I1 misses + 10 x D1 misses + 50 x LL misses + 15 x mispredicts. Needs
# valgrind and python3; builds nothing.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$repo/target/release/locksim}
runs=${RUNS:-3}
out=${OUT:-$(mktemp -d)}
[[ -x $bin ]] || { echo "$bin is not an executable: run make build first" >&2; exit 2; }
for tool in valgrind python3; do
    command -v "$tool" >/dev/null || { echo "$tool is missing (apt-get install $tool)" >&2; exit 2; }
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "RUNS must be a positive whole number, not '$runs'" >&2; exit 2; }
mkdir -p "$out"
cd "$repo"

# cachegrind NAME ARGS...: the best of $runs runs of `$bin ARGS` (cachegrind's summary
# line: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim).
cachegrind() {
    local name=$1 best="" run
    shift
    for run in $(seq "$runs"); do
        valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes \
            --cachegrind-out-file="$out/$name.$run.cg" "$bin" "$@" >/dev/null 2>&1
        best=$(printf '%s\n%s\n' "$best" "$(grep '^summary:' "$out/$name.$run.cg" | cut -d' ' -f2-)" |
            python3 "$repo/scripts/perf-counts.py" best)
    done
    echo "$best"
}

# events WORKLOAD SEEDS: messages written plus timers fired over those seeds.
events() {
    "$bin" bench "scenarios/bench/$1.json" --seeds "$2" --jobs 1 --json "$out/$1.json" >/dev/null
    python3 -c "import json, sys; w = json.load(open(sys.argv[1]))['workloads'][0]; print(w['messages'] + w['timer_firings'])" "$out/$1.json"
}

redlock=$(cachegrind redlock-5 run scenarios/bench/redlock-5.json --seeds 3 --jobs 1)
single=$(cachegrind single-node run scenarios/bench/single-node.json --seeds 10 --jobs 1)
# Both write their figures, so that the difference is the ping-pong's alone; the first's
# say how many messages it sent.
with=$(cachegrind pingpong bench --pingpong 20000 scenarios/bench/single-node.json --seeds 1 --json "$out/pingpong.json")
without=$(cachegrind pingpong-base bench scenarios/bench/single-node.json --seeds 1 --json "$out/pingpong-base.json")
messages=$(python3 -c "import json, sys; print(2 * json.load(open(sys.argv[1]))['pingpong']['messages'])" "$out/pingpong.json")

python3 "$repo/scripts/perf-counts.py" table \
    "Redlock-5 (3 seeds)=$(events redlock-5 3)=$redlock" \
    "single node (10 seeds)=$(events single-node 10)=$single" \
    "ping-pong=$messages=$with=$without"
echo "(cachegrind files in $out; best of $runs runs each)"
# A plain `cargo build --release` leaves the binary as linked, ~7% more cycles an event.
if readelf -S "$bin" 2>/dev/null | grep -q '\.note\.bolt_info'; then
    echo "($bin is laid out by BOLT, as make build leaves it)"
else
    echo "($bin is as linked, not laid out by BOLT: make build lays it out, scripts/bolt.sh)"
fi
