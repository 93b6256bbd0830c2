#!/usr/bin/env bash
# Writes pgo/locksim.profdata.gz, the profile `make build` optimises the release binary
# with (profile-guided optimisation, docs/performance.md, fourteenth pass), and
# pgo/llvm-version, the major version of the LLVM that wrote it, and pgo/rustc-version,
# the compiler whose code it counted (`make pgo-check` compares only code of the same one).
#
# Why: a seed's hot path runs through madsim, tokio, mlua, Lua and locksim at once, more
# code than the instruction cache holds; with a profile the compiler knows which branches
# and calls are hot, inlines and lays out code for them, and keeps cold code out of the
# way (cachegrind: a third fewer instruction-cache misses an event, estimated cycles -18%).
#
# What it profiles is what users run: the two committed benches and the ping-pong
# (`locksim bench`), the report `make run` writes (`locksim report` over every scenario at
# their own seed counts: the sweep, the matrix, the envelopes, replays, shrinks and the
# page), and `locksim serve` under redis-benchmark, pipelined and not (its real-TCP code is
# compiled apart from the simulator's). The report weighs most, as in use: trained on the
# report at 2 seeds a scenario, the benches gained as much but the report only half as
# much (its own paths counted as cold, and cold code is optimised for size). Code no run
# reaches (live mode) is still built, only not tuned.
#
# When: after a change to a hot path. A stale profile is safe, only slower: the functions
# that changed lose their profile (the build does not warn, see the Makefile; `make
# pgo-check` says how much of it they held), the rest keep theirs. The profile needs
# rustc's own llvm-profdata (scripts/llvm-tools.sh); an older LLVM cannot read a newer
# profile, and `make build` then builds without it.
#
# Usage: make pgo-profile   (about 13 minutes on 2 cores: the instrumented build, then the
#                           report, which instrumented runs ~2.5 times slower; then `make
#                           build` uses the profile)
#   RELEASE_BASE_RUSTFLAGS  (environment, set by the Makefile) the release build's flags
#                           without the profile
#   RUSTC_LLVM              (environment, set by the Makefile) the major version of
#                           rustc's LLVM, written to pgo/llvm-version
# Needs redis-benchmark and python3 (for a free port).
set -euo pipefail
: "${RELEASE_BASE_RUSTFLAGS:?run it as make pgo-profile}"
: "${RUSTC_LLVM:?run it as make pgo-profile}"

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
for tool in redis-benchmark python3 gzip; do
    command -v "$tool" >/dev/null || { echo "$tool is missing" >&2; exit 2; }
done

# shellcheck source=scripts/llvm-tools.sh
source "$repo/scripts/llvm-tools.sh"
profdata=$(llvm_profdata)

work="$repo/target/pgo-gen"
raw="$work/raw"

# The instrumented build: the Makefile's release flags, counting instead of using a
# profile. Each process writes its counts as it exits (`serve` exits on SIGTERM).
RUSTFLAGS="$RELEASE_BASE_RUSTFLAGS -C profile-generate=$raw" \
    CARGO_TARGET_DIR="$work/target" cargo build --release --locked
locksim="$work/target/release/locksim"
# Only the runs below count: the build's own scripts and proc-macros, instrumented too,
# left theirs here.
rm -rf "$raw"
mkdir -p "$raw"
export LLVM_PROFILE_FILE="$raw/locksim-%p-%m.profraw"

# Runs locksim with its output thrown away; exit 1 (a verdict: the benches violate by
# design) is a run like any other.
profile() {
    "$locksim" "$@" >/dev/null || [[ $? -eq 1 ]]
}
# shellcheck source=scripts/training.sh
source "$repo/scripts/training.sh"
what_users_run profile "$work/report"

# shellcheck source=scripts/servers.sh
source "$repo/scripts/servers.sh"
trap stop_server EXIT
port=$(free_port)
"$locksim" serve --port "$port" >"$work/serve.log" 2>&1 &
server_pid=$!
wait_until_listening "$port" "$work/serve.log" "locksim serve"
redis-benchmark -p "$port" -P 16 -t set,get -n 200000 -q >/dev/null
redis-benchmark -p "$port" -t set,get -n 20000 -q >/dev/null
served=$server_pid
stop_server
compgen -G "$raw/locksim-$served-*.profraw" >/dev/null || {
    echo "locksim serve left no profile in $raw:" >&2
    cat "$work/serve.log" >&2
    exit 1
}

mkdir -p pgo
"$profdata" merge -o "$work/locksim.profdata" "$raw"/*.profraw
gzip -9 -n -c "$work/locksim.profdata" >pgo/locksim.profdata.gz
echo "$RUSTC_LLVM" >pgo/llvm-version
rustc -V >pgo/rustc-version
echo "wrote pgo/locksim.profdata.gz ($(stat -c %s pgo/locksim.profdata.gz) bytes) for LLVM $RUSTC_LLVM"
