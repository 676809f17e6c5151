#!/usr/bin/env python3
"""Compares two variants of the backends from gridsync-bench-exact CSVs (bench/NOTES.md,
"Comparing two variants (A/B)").

    python3 bench/ab_compare.py [--column C] A1.csv [A2.csv ...] -- B1.csv [B2.csv ...]

Each CSV is one run of gridsync-bench-exact with GRIDSYNC_BACKEND_PATH pointing at one
variant's backends (A: the base, B: the change), runs taken alternately on one machine.
Prints, per dtype, n and backend, the column C (default delta_queued_us: exact minus
default per call, queued, which takes out both the host's launch rate and the default
kernel's run-to-run drift) of every A run and every B run, their medians and B - A.
Last, per backend, the smallest and the largest B - A. Only the standard library.
"""
import csv
import statistics
import sys

DTYPES = ["f32", "f64", "f16", "bf16"]


def load(paths, column):
    """{(dtype, n, backend): [value per run]} over the CSVs, in their order."""
    out = {}
    for p in paths:
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                try:
                    v = float(r[column])
                    key = (r["dtype"], int(r["n"]), r["backend"])
                except (KeyError, ValueError):
                    continue
                out.setdefault(key, []).append(v)
    return out


def main(argv):
    column = "delta_queued_us"
    if len(argv) > 1 and argv[0] == "--column":
        column, argv = argv[1], argv[2:]
    if "--" not in argv or argv.index("--") == 0 or argv[-1] == "--":
        print(__doc__, file=sys.stderr)
        return 2
    cut = argv.index("--")
    a, b = load(argv[:cut], column), load(argv[cut + 1:], column)
    keys = sorted(set(a) & set(b), key=lambda k: (DTYPES.index(k[0]) if k[0] in DTYPES else 9, k[2], k[1]))
    if not keys:
        print(f"ab_compare.py: no (dtype, n, backend) with a {column} in both sets", file=sys.stderr)
        return 1
    print(f"{column}: A (each run) | B (each run) | median A, B, B - A")
    diffs = {}  # backend -> [(B - A, dtype, n)]
    for k in keys:
        ma, mb = statistics.median(a[k]), statistics.median(b[k])
        print(f"{k[0]:5} 2^{k[1].bit_length() - 1:<3} {k[2]:17} " + " ".join(f"{x:7.2f}" for x in a[k]) + " | " +
              " ".join(f"{x:7.2f}" for x in b[k]) + f" | {ma:8.2f} {mb:8.2f} {mb - ma:+8.2f}")
        diffs.setdefault(k[2], []).append((mb - ma, k[0], k[1]))
    for backend, ds in sorted(diffs.items()):
        lo, hi = min(ds), max(ds)
        print(f"{backend}: B - A from {lo[0]:+.2f} ({lo[1]} 2^{lo[2].bit_length() - 1}) "
              f"to {hi[0]:+.2f} ({hi[1]} 2^{hi[2].bit_length() - 1})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
