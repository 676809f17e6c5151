#!/usr/bin/env python3
"""Plots gridsync-bench-scan's CSV (gs_scan against CUB's InclusiveSum and a device-to-device
copy; bench/bench_scan.cu).

    python3 bench/plot_scan.py scan.csv [OUT.png]

Writes OUT.png (default: the CSV's name with .png, beside it): one column per dtype; top,
time per call against n (log-log) for every impl; bottom, time ratios against n: each
gridsync backend over CUB (below 1: faster than CUB) and over the copy (1 is the ceiling),
and CUB over the copy, dashed; with --exact's rows (gridsync-exact:<backend>), each exact
scan over its backend's default one, dash-dotted. Only the standard library and matplotlib; a missing
matplotlib is reported, not fatal (exit 0).
"""
import os
import sys

from plot_common import fnum, pyplot, read_rows

DTYPES = ["f32", "i32", "f64", "f16", "bf16", "i8"]
COLORS = {"cuda_sm20": "tab:blue", "cuda_sm11_compat": "tab:orange"}
EXACT_COLORS = {"cuda_sm20": "tab:red", "cuda_sm11_compat": "tab:brown"}


def times(rows, dtype, impl):
    """{n: us} of one dtype and impl."""
    out = {}
    for r in rows:
        if r.get("dtype") == dtype and r.get("impl") == impl:
            n, us = fnum(r.get("n")), fnum(r.get("us"))
            if n is not None and us is not None and us > 0:
                out[n] = us
    return out


def ratio(a, b):
    """(n, a/b) where both have n, sorted."""
    return sorted((n, a[n] / b[n]) for n in a if n in b)


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) >= 2 else 2
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.splitext(os.path.abspath(path))[0] + ".png"
    plt = pyplot("plot_scan.py")
    if plt is None:
        return 0
    rows = read_rows(path, "plot_scan.py")
    if rows is None:
        return 1
    dtypes = [d for d in DTYPES if any(r.get("dtype") == d for r in rows)]
    impls = sorted({r.get("impl") for r in rows if r.get("impl", "").startswith("gridsync:")})
    exacts = sorted({r.get("impl") for r in rows if r.get("impl", "").startswith("gridsync-exact:")})
    fig, axes = plt.subplots(2, len(dtypes), figsize=(4.2 * len(dtypes), 7.5), squeeze=False)
    fig.suptitle(f"gs_scan (inclusive SUM) vs CUB InclusiveSum and a D2D copy ({os.path.basename(path)})",
                 fontsize=11)
    for j, d in enumerate(dtypes):
        ax_t, ax_r = axes[0][j], axes[1][j]
        cub, copy = times(rows, d, "cub"), times(rows, d, "memcpy")
        for impl in impls + exacts + ["cub", "memcpy"]:
            t = sorted(times(rows, d, impl).items())
            if t:
                backend = impl.split(":", 1)[-1]
                colors = EXACT_COLORS if impl.startswith("gridsync-exact:") else COLORS
                ax_t.plot([p[0] for p in t], [p[1] for p in t], marker=".", label=impl,
                          color=colors.get(backend, "tab:green" if impl == "cub" else "tab:gray"))
        for impl in exacts:
            backend = impl.split(":", 1)[1]
            pts = ratio(times(rows, d, impl), times(rows, d, "gridsync:" + backend))
            if pts:
                ax_r.plot([p[0] for p in pts], [p[1] for p in pts], "-.", marker=".",
                          color=EXACT_COLORS.get(backend, "tab:red"), label=f"exact / {backend}")
        for impl in impls:
            backend = impl.split(":", 1)[1]
            g = times(rows, d, impl)
            for base, style, name in ((cub, "-", "CUB"), (copy, ":", "copy")):
                pts = ratio(g, base)
                if pts:
                    ax_r.plot([p[0] for p in pts], [p[1] for p in pts], style, marker=".",
                              color=COLORS.get(backend, "tab:purple"), label=f"{backend} / {name}")
        pts = ratio(cub, copy)
        if pts:
            ax_r.plot([p[0] for p in pts], [p[1] for p in pts], "--", color="tab:green", label="CUB / copy")
        ax_r.axhline(1.0, color="black", linewidth=0.8)
        for ax in (ax_t, ax_r):
            ax.set_xscale("log", base=2)
            ax.grid(True, which="both", alpha=0.3)
        ax_t.set_yscale("log")
        ax_t.set_title(d)
        ax_t.set_ylabel("us per call")
        ax_r.set_ylabel("time ratio")
        ax_r.set_xlabel("n (elements)")
        if j == 0:
            ax_t.legend(fontsize=7)
            ax_r.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"plot_scan.py: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
