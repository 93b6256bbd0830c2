#!/usr/bin/env bash
# Lays out the release binary's machine code by what it runs, with BOLT (LLVM's post-link
# optimizer), in place.
#
# Why: a seed's hot code is larger than the instruction cache. The profile (pgo/) orders
# the blocks inside each function; BOLT, after linking, orders the functions themselves
# by how they call each other and moves every function's cold blocks away, so the hot
# code takes fewer cache lines. Cachegrind: 17-30% fewer instruction-cache misses an
# event, estimated cycles -6 to -8%; wall time 0.96 of the binary as linked on `make run`'s
# report; every digest the same (docs/performance.md, sixteenth pass).
#
# How: a copy of BIN counts its branches (llvm-bolt -instrument) while it runs what users
# run, at --jobs 1: the committed benches, the ping-pong, and the report of every scenario
# at 2 seeds; about 20 s. llvm-bolt lays BIN out from those counts, and the result
# replaces BIN only if it gives the same seed logs and verdict table as BIN
# (scripts/perf-digests.sh) and reports runs that panic as BIN does. It is kept in
# target/bolt/ under the hash of BIN and this script: cargo puts its own copy back at
# every `cargo build --release`, even one with nothing to compile, and the next `make
# build` copies the kept one instead of laying out again.
#
# Usage: scripts/bolt.sh BIN
#   BIN            a release binary linked with --emit-relocs (the Makefile's release
#                  flags: BOLT moves functions only where it knows every reference)
#   BOLT_REQUIRED  (environment) 1: exit 1 when BIN cannot be laid out or the laid-out
#                  binary gives other digests (CI's `make bolt-check`); otherwise BIN
#                  keeps the linker's layout and a note says why
# Needs llvm-bolt and merge-fdata (Debian's bolt-22, added with apt-get when missing
# and this is root), readelf, sha256sum and python3.
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: scripts/bolt.sh BIN" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
[[ -x $1 ]] || { echo "$1 is not an executable: build it first" >&2; exit 2; }
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
required=${BOLT_REQUIRED:-0}
cd "$repo"

# keep_linked REASON: leaves BIN as the linker made it.
keep_linked() {
    echo "note: $bin keeps the linker's layout ($1): 2-4% slower" >&2
    [[ $required != 1 ]] || exit 1
    exit 0
}

# replace_bin FILE: puts FILE in BIN's place by a rename, so that cargo's own copy
# (BIN is a hard link to it) stays as cargo made it.
replace_bin() {
    cp "$1" "$bin.bolt-tmp"
    mv "$bin.bolt-tmp" "$bin"
}

if readelf -S "$bin" | grep -q '\.note\.bolt_info'; then
    echo "$bin is already laid out by BOLT"
    exit 0
fi
work=$repo/target/bolt
# This script is in the key: a change to its training or options lays out anew.
key=$(cat "$bin" "$repo/scripts/bolt.sh" | sha256sum | cut -c1-16)
kept=$work/$key/locksim
if [[ -x $kept ]]; then
    replace_bin "$kept"
    echo "$bin: laid out by BOLT (kept from an earlier build: $work/$key)"
    exit 0
fi
readelf -S "$bin" | grep -q '\.rela\.text' || keep_linked "it was linked without --emit-relocs"
source "$repo/scripts/llvm-tools.sh"
tools=$(llvm_bolt_dir) || keep_linked "no llvm-bolt: apt-get install bolt-22"

# Its directory holds the logs; the laid-out binary gets its name there (locksim) last,
# once it has passed the check.
dir=$work/$key
rm -rf "$dir"
mkdir -p "$dir"
echo "laying out $bin with BOLT ($tools/llvm-bolt; log: $dir/bolt.log)"
"$tools/llvm-bolt" "$bin" -o "$dir/instrumented" -instrument \
    -instrumentation-file="$dir/counts" -instrumentation-file-append-pid >"$dir/bolt.log" 2>&1 ||
    keep_linked "llvm-bolt -instrument failed: $dir/bolt.log"

# train ARGS...: one run of the instrumented copy; exit 1 is a run that found violations.
train() {
    "$dir/instrumented" "$@" >>"$dir/train.log" 2>&1 || [[ $? -eq 1 ]] ||
        keep_linked "the instrumented binary failed on '$*': $dir/train.log"
}
source "$repo/scripts/training.sh"
what_users_run train "$dir/report" --seeds 2 --matrix-seeds 2 --envelope-seeds 2 --holds-seeds 2 --jobs 1

"$tools/merge-fdata" "$dir"/counts.*.fdata >"$dir/counts.fdata" 2>>"$dir/bolt.log" ||
    keep_linked "merge-fdata failed: $dir/bolt.log"
"$tools/llvm-bolt" "$bin" -o "$dir/laid-out" -data="$dir/counts.fdata" \
    -reorder-blocks=ext-tsp -reorder-functions=cdsort -split-functions -split-strategy=cdsplit \
    -split-all-cold -split-eh -dyno-stats -no-threads >>"$dir/bolt.log" 2>&1 ||
    keep_linked "llvm-bolt failed: $dir/bolt.log"
rm -rf "$dir/instrumented" "$dir"/counts*.fdata "$dir/report"

"$repo/scripts/perf-digests.sh" "$bin" "$dir/laid-out" "$dir/digests" >"$dir/digests.txt" 2>&1 ||
    keep_linked "WARNING: the laid-out binary gave other digests, so BOLT miscompiled it: $dir/digests.txt"
# And a run that panics (an event budget far too small): the laid-out binary unwinds
# through code that BOLT moved and split, and must report the same harness errors.
python3 - scenarios/bench/single-node.json "$dir/panics.json" <<'EOF'
import json, sys
scenario = json.load(open(sys.argv[1]))
scenario["budget"] = {"events_per_s": 5}
json.dump(scenario, open(sys.argv[2], "w"))
EOF
for binary in "$bin" "$dir/laid-out"; do
    status=0
    "$binary" run "$dir/panics.json" --seeds 3 --jobs 1 >"$dir/panics.$(basename "$binary").txt" \
        2>/dev/null || status=$?
    [[ $status -eq 3 ]] ||
        keep_linked "WARNING: $binary exited $status, not 3 (a harness error), on $dir/panics.json"
done
cmp -s "$dir/panics.$(basename "$bin").txt" "$dir/panics.laid-out.txt" ||
    keep_linked "WARNING: the laid-out binary reported the panics otherwise: $dir/panics.*.txt"
mv "$dir/laid-out" "$kept"
# Only the newest layout is kept: each is ~20 MB.
find "$work" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
replace_bin "$kept"
echo "$bin: laid out by BOLT ($dir: its logs and the digests check)"
