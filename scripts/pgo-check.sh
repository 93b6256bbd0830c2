#!/usr/bin/env bash
# Says how much of the committed profile (pgo/locksim.profdata.gz) the code has left
# behind, and fails when too much has: the share of the profile's counts in functions
# whose code changed since it was made, which the release build then compiles without a
# profile.
#
# Why: the profile makes the release binary ~0.8 of its time without one (docs/
# performance.md, fourteenth pass), but a function that changes loses its counts silently
# (`make build` passes -no-pgo-warn-mismatch), so the gain wears away with hot-path edits
# and nothing says so. Editing one hot function of the node's or the client's request
# path discards about 2% of the counts; a pass that changes several should make the
# profile anew (`make pgo-profile`, ~13 minutes) and commit it.
#
# How: builds the release binary as `make build` does, with LLVM's warnings on (a changed
# function: "hash mismatch ... up to N count discarded"; a new one: "no profile data
# available"), in its own target directory so that `make build`'s binary stays, and sums
# the counts discarded against the profile's total (llvm-profdata, scripts/llvm-tools.sh).
# A new function has no counts to weigh: they are counted and listed apart, not judged.
# The check compares code of the compiler that made the profile only (pgo/rustc-version);
# the binary is built with any, for `make bolt-check`.
#
# Usage: make pgo-check   (a release build: ~4 minutes on 2 cores from scratch)
#   PGO_CHECK_FLAGS   (environment, set by the Makefile) `make build`'s flags with the
#                     profile and the warnings on
#   PGO_DATA          (environment, set by the Makefile) the unpacked profile
#   PGO_STALE_LIMIT   (environment) the percentage of the profile's counts that may sit in
#                     changed functions, default 5
set -euo pipefail
: "${PGO_CHECK_FLAGS:?run it as make pgo-check}"
: "${PGO_DATA:?run it as make pgo-check}"
limit=${PGO_STALE_LIMIT:-5}
[[ $limit =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "PGO_STALE_LIMIT must be a percentage, not '$limit'" >&2; exit 2; }

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
work="$repo/target/pgo-check"
mkdir -p "$work"
# Cargo replays a unit's warnings when it is already built, so a second check costs
# nothing and says the same.
echo "building the release binary with the profile's warnings on (log: $work/build.log)"
if ! RUSTFLAGS="$PGO_CHECK_FLAGS" CARGO_TARGET_DIR="$work/target" \
    cargo build --release --locked >"$work/build.log" 2>&1; then
    tail -n 30 "$work/build.log" >&2
    echo "the release build failed" >&2
    exit 2
fi
# Another compiler makes other code of the same source (its own inlining, its standard
# library): every function would count as changed. That wants a profile of its own,
# which is not a fault of the code, so it is said and not failed (the binary
# is built all the same: `make bolt-check` lays it out).
made_by=$(cat pgo/rustc-version 2>/dev/null || echo "an unrecorded compiler")
if [[ $made_by != "$(rustc -V)" ]]; then
    echo "note: no profile check: the profile was made with $made_by, this is $(rustc -V) (make pgo-profile to profile this one's code)"
    exit 0
fi
# shellcheck source=scripts/llvm-tools.sh
source "$repo/scripts/llvm-tools.sh"
profdata=$(llvm_profdata)
total=$("$profdata" show "$PGO_DATA" | sed -n 's/^Total count: //p')
[[ $total =~ ^[0-9]+$ ]] || { echo "llvm-profdata gave no total count for $PGO_DATA" >&2; exit 2; }

python3 - "$work/build.log" "$total" "$limit" <<'EOF'
import re, subprocess, sys

log, total, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
changed, new = [], []
warning = re.compile(
    r"^warning: (?P<module>\S+): (?P<what>function control flow change detected \(hash mismatch\)"
    r"|no profile data available for function) (?P<name>\S+) Hash = \d+ up to (?P<count>\d+) count discarded"
)
for line in open(log, errors="replace"):
    m = warning.match(line)
    # Build scripts are compiled with these flags too, but are not part of the binary.
    if not m or m["module"].startswith("build_script_build"):
        continue
    found = (int(m["count"]), m["name"])
    (new if m["what"].startswith("no profile") else changed).append(found)

def demangled(names):
    """The names as Rust writes them, by binutils' c++filt where it is (else as mangled)."""
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    except OSError:
        return names
    return out.stdout.splitlines() if out.returncode == 0 else names

changed.sort(reverse=True)
share = 100 * sum(count for count, _ in changed) / total if total else 0.0
print(f"profile check: functions changed since the profile was made: {len(changed)}, "
      f"holding {share:.2f}% of its counts (limit {limit:g}%); new functions, without counts: {len(new)}")
for (count, _), name in zip(changed[:10], demangled([n for _, n in changed[:10]])):
    print(f"  {100 * count / total:7.3f}%  {name}")
for name in demangled(sorted(n for _, n in new))[:10]:
    print(f"      new  {name}")
if share > limit:
    print("the profile is stale: make pgo-profile (about 13 minutes), then commit pgo/locksim.profdata.gz", file=sys.stderr)
    sys.exit(1)
EOF
