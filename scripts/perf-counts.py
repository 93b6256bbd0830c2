"""The arithmetic of scripts/perf-counts.sh, on cachegrind's summary lines.

A summary line holds the events of `--cache-sim=yes --branch-sim=yes`, in this order:
Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim.

    perf-counts.py best          lines on stdin: the one with the fewest estimated cycles
    perf-counts.py table ROW...  ROW is NAME=UNITS=SUMMARY or NAME=UNITS=SUMMARY=BASELINE
                                 (a baseline's counts are taken off first): the table per
                                 unit, and each workload's share of the last row's
"""

import sys


def counts(summary):
    """Instructions, I1 misses, D1 misses, LL misses, mispredicts."""
    n = [int(x) for x in summary.split()]
    return [n[0], n[1], n[4] + n[7], n[2] + n[5] + n[8], n[10] + n[12]]


def cycles(c):
    """The cycle model: a miss or a mispredict costs what it stalls, roughly."""
    ir, i1, d1, ll, bm = c
    return ir + 12 * i1 + 10 * d1 + 50 * ll + 15 * bm


def best(lines):
    lines = [line for line in lines if line.strip()]
    return min(lines, key=lambda line: cycles(counts(line)))


def table(rows):
    per_unit = []
    print(f"{'':24} {'Ir':>8} {'I1 miss':>8} {'D1 miss':>8} {'LL miss':>8} {'mispred':>8} {'est. cycles':>12}   per")
    for row in rows:
        name, units, summary, *baseline = row.split("=")
        c = counts(summary)
        if baseline:
            c = [a - b for a, b in zip(c, counts(baseline[0]))]
        c = [x / int(units) for x in c]
        per_unit.append((name, c))
        unit = "message" if baseline else "event"
        print(f"{name:24} {c[0]:8.0f} {c[1]:8.1f} {c[2]:8.1f} {c[3]:8.2f} {c[4]:8.1f} {cycles(c):12.0f}   {unit} ({units})")
    limit_name, limit = per_unit[-1]
    for name, c in per_unit[:-1]:
        print(
            f"{name}: {100 * limit[0] / c[0]:.1f}% of the {limit_name} by instructions, "
            f"{100 * cycles(limit) / cycles(c):.1f}% by estimated cycles"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["best"]:
        print(best(sys.stdin.read().splitlines()))
    elif sys.argv[1:2] == ["table"] and len(sys.argv) > 3:
        table(sys.argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
