"""Shared by bench/plot.py, plot_segmented.py and plot_exact.py (imported from beside them)."""
import csv
import math
import sys


def fnum(s):
    """A CSV field as a finite float, or None (empty, not a number, inf or nan)."""
    try:
        v = float(s)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def pyplot(prog):
    """matplotlib.pyplot on the Agg backend, or None when matplotlib is missing (said on
    stderr as "PROG: matplotlib is not available (...): no PNG written")."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print(f"{prog}: matplotlib is not available ({e}): no PNG written", file=sys.stderr)
        return None
    return plt


def read_rows(path, prog):
    """The CSV's rows as dicts, or None (said on stderr as "PROG: the CSV has no rows")."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        print(f"{prog}: the CSV has no rows", file=sys.stderr)
        return None
    return rows
