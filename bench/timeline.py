#!/usr/bin/env python3
"""Puts side by side the launch timelines that backends built with -DGS_TIMELINE print
(backends/common/timeline.cuh): per kernel kind (TD: gs_reduce's float SUM, TL: the exact
sum), dtype, backend and grid, the median over the printed launches of each stamp, in ns
from the first block's start, and the last block's two phases.

    meson setup build-tl -Dcuda-archs=90       # a tree of its own: ninja does not see the flag change
    NVCC_APPEND_FLAGS=-DGS_TIMELINE ninja -C build-tl backends/gridsync-cuda_sm20.so backends/gridsync-cuda_sm11_compat.so
    GRIDSYNC_BACKEND_PATH=build-tl/backends build/bench/gridsync-bench-exact --min-log2 20 --max-log2 20 > tl.log
    python3 bench/timeline.py tl.log

Columns: spread (the blocks' starts), then over the other blocks the latest time their
elements, their fold and their ticket were done, and each phase's mean duration; then
the last block's own stamps (start, elements, fold, ticket, partials' fold, end) and the
durations of its partials' fold (from its ticket) and of its end. Only the standard
library.
"""
import re
import statistics
import sys
from collections import defaultdict

FIELDS = ["spread", "o.elem", "o.fold", "o.tick", "m.elem", "m.fold", "m.tick",
          "L.start", "L.elem", "L.fold", "L.tick", "L.pfold", "L.end"]
LINE = re.compile(r"^(TD|TL) (\w+) (cuda_sm\w+) grid (\d+): (.*)$")


def main(paths):
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs = defaultdict(list)
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = LINE.match(line.strip())
                if not m:
                    continue
                nums = [int(x) for x in re.findall(r"\b\d+\b", m.group(5))]
                if len(nums) != len(FIELDS):
                    continue
                kind, dtype, backend, grid = m.group(1), m.group(2), m.group(3), int(m.group(4))
                runs[(dtype, backend, grid, kind)].append(nums)
    if not runs:
        print("timeline.py: no TD/TL lines (were the backends built with -DGS_TIMELINE?)", file=sys.stderr)
        return 1
    print("%-5s %-17s %5s %-2s %3s " % ("dtype", "backend", "grid", "", "n") +
          " ".join("%7s" % f for f in FIELDS) + " | %7s %7s" % ("pfold", "end"))
    for key in sorted(runs, key=lambda k: (k[0], k[1], k[2], k[3])):
        rows = runs[key]
        med = [statistics.median(c) for c in zip(*rows)]
        print("%-5s %-17s %5d %-2s %3d " % (key[0], key[1], key[2], key[3], len(rows)) +
              " ".join("%7.0f" % x for x in med) + " | %7.0f %7.0f" % (med[11] - med[10], med[12] - med[11]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
