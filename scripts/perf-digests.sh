#!/usr/bin/env bash
# Compares what two binaries simulate: every seed's digest and verdict in the benches and
# the catalogue, and the catalogue's verdict table. Exit 0 when all are the same.
#
# Why: a change made for speed must not change a run (issue 33: "without changing a
# verdict"; every digest change named and explained). The same seed must give the same
# digest whatever `--jobs` says, so the new binary runs the benches with 1, 2 and 3 jobs
# against the old binary's single run. Every pass of docs/performance.md since the ninth
# ran this (from a scratch copy until stop 49).
#
# Usage: scripts/perf-digests.sh OLD NEW [OUT]
#   OLD, NEW   the two binaries (e.g. main's `make build` kept aside, and the change's)
#   OUT        where the seed logs and tables go, default a new temporary directory
#
# The benches run at 20 seeds (`run scenarios/bench`), the catalogue at 2 seeds a scenario
# with 2 jobs (`run scenarios/`, whose exit status is 1 when a scenario's verdict is not
# what it expects: the same for both binaries). Builds nothing.
set -uo pipefail

[[ $# -ge 2 ]] || { echo "usage: scripts/perf-digests.sh OLD NEW [OUT]" >&2; exit 2; }
old=$1
new=$2
out=${3:-$(mktemp -d)}
for bin in "$old" "$new"; do
    [[ -x $bin ]] || { echo "$bin is not an executable" >&2; exit 2; }
done
mkdir -p "$out"
cd "$(dirname "$0")/.."
differ=0

# same WHAT A B: says whether files A and B hold the same lines, in any order.
same() {
    if cmp -s <(sort "$2") <(sort "$3"); then
        echo "$1: identical"
    else
        echo "$1: DIFFERENT ($(comm -3 <(sort "$2") <(sort "$3") | wc -l) lines differ)"
        differ=1
    fi
}

"$old" run scenarios/bench --seeds 20 --jobs 1 --seed-log "$out/old-bench.log" >/dev/null 2>&1
for jobs in 1 2 3; do
    "$new" run scenarios/bench --seeds 20 --jobs "$jobs" --seed-log "$out/new-bench-$jobs.log" >/dev/null 2>&1
    same "bench seed logs, --jobs $jobs" "$out/old-bench.log" "$out/new-bench-$jobs.log"
done

# The table without its timings, which differ from run to run.
untimed() { grep -v 'took\|elapsed\|[0-9]\.[0-9]* s\b' "$1"; }
for bin in old new; do
    "${!bin}" run scenarios/ --seeds 2 --jobs 2 --seed-log "$out/$bin-catalogue.log" >"$out/$bin-catalogue.table" 2>&1
    echo "$bin catalogue: exit $?"
    untimed "$out/$bin-catalogue.table" >"$out/$bin-catalogue.untimed"
done
same "catalogue seed logs" "$out/old-catalogue.log" "$out/new-catalogue.log"
if cmp -s "$out/old-catalogue.untimed" "$out/new-catalogue.untimed"; then
    echo "catalogue tables: identical"
else
    echo "catalogue tables: DIFFERENT"
    differ=1
fi
echo "(seed logs and tables in $out)"
exit $differ
