"""Shared by bench/plot.py and bench/plot_segmented.py (imported from beside them)."""
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
