#!/usr/bin/env python3
"""Plots gridsync-bench-exact's CSV (the exact sums against the default SUM and CUB's
gpu_to_gpu sum; bench/bench_exact.cu).

    python3 bench/plot_exact.py exact.csv [OUT.png]

Writes OUT.png (default: the CSV's name with .png, beside it): one column per dtype; top,
time per call against n (log-log) for the default sum, the exact sum per backend and CUB's
gpu_to_gpu sum where measured; middle, exact / default throughput per backend, with issue
18's line for n >= 2^26 (float32 0.9, float64 0.8, float16 and bfloat16 0.95); bottom,
exact minus default per call, queued (the GPU's time alone), up to 2^22 elements, with
the +1 us line for n <= 2^20, and dashed, where the CSV has them (--lone), the same for
lone calls between other kernels. Only the standard library and matplotlib; a missing matplotlib is reported, not
fatal (exit 0).
"""
import os
import sys

from plot_common import fnum, pyplot, read_rows

DTYPES = ["f32", "f64", "f16", "bf16"]
RATIO_TARGET = {"f32": 0.9, "f64": 0.8, "f16": 0.95, "bf16": 0.95}
Q_MAX_N = 2**22  # the bottom row's sizes: the +1 us line is for n <= 2^20
BACKENDS = {"cuda_sm20": ("sm20", "tab:blue"), "cuda_sm11_compat": ("sm11", "tab:orange")}


def series(rows, dtype, backend, column):
    """(n, value) pairs of one dtype and backend, sorted by n, where value is a number."""
    pts = []
    for r in rows:
        if r.get("dtype") == dtype and r.get("backend") == backend:
            n, v = fnum(r.get("n")), fnum(r.get(column))
            if n is not None and v is not None:
                pts.append((n, v))
    return sorted(pts)


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) >= 2 else 2
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.splitext(os.path.abspath(path))[0] + ".png"
    plt = pyplot("plot_exact.py")
    if plt is None:
        return 0
    rows = read_rows(path, "plot_exact.py")
    if rows is None:
        return 1
    gpu = rows[0].get("device", "?")
    dtypes = [d for d in DTYPES if any(r.get("dtype") == d for r in rows)]
    cub = next((r.get("cub_version") for r in rows if r.get("cub_version")), None)

    fig, axes = plt.subplots(3, len(dtypes), figsize=(4.2 * len(dtypes), 10), squeeze=False)
    fig.suptitle(f"gridsync exact SUM (GS_REDUCE_EXACT) vs the default SUM and CUB gpu_to_gpu - {gpu}"
                 f" ({os.path.basename(path)})", fontsize=11)
    for j, d in enumerate(dtypes):
        ax_t, ax_r, ax_q = axes[0][j], axes[1][j], axes[2][j]
        pts = series(rows, d, "cuda_sm20", "default_us")
        if pts:
            ax_t.plot(*zip(*pts), color="black", marker=".", label="default (sm20)")
        for b, (name, color) in BACKENDS.items():
            for ax, col in ((ax_t, "exact_us"), (ax_r, "ratio"), (ax_q, "delta_queued_us")):
                pts = series(rows, d, b, col)
                if ax is ax_q:
                    pts = [(n, v) for n, v in pts if n <= Q_MAX_N]
                if pts:
                    ax.plot(*zip(*pts), color=color, marker=".", label=f"exact ({name})")
            pts = [(n, v) for n, v in series(rows, d, b, "delta_lone_us") if n <= Q_MAX_N]
            if pts:
                ax_q.plot(*zip(*pts), color=color, marker="x", linestyle="--", label=f"lone ({name})")
        pts = series(rows, d, "cuda_sm20", "cub_g2g_us")
        if pts:
            ax_t.plot(*zip(*pts), color="dimgray", linestyle="--", marker="x", label=f"CUB {cub} gpu_to_gpu")
        ax_t.set_title(d, fontsize=10)
        ax_t.set_yscale("log")
        ax_r.axhline(RATIO_TARGET[d], color="firebrick", linewidth=0.8, linestyle=":")
        ax_r.annotate(f"target {RATIO_TARGET[d]} (n >= 2^26)", (2**26, RATIO_TARGET[d]), fontsize=7,
                      color="firebrick", xytext=(0, -10), textcoords="offset points", ha="right")
        ax_r.set_ylim(0, 1.1)
        ax_q.axhline(1.0, color="firebrick", linewidth=0.8, linestyle=":")
        ax_q.annotate("+1 us (n <= 2^20)", (2**10, 1.0), fontsize=7, color="firebrick", xytext=(0, 3),
                      textcoords="offset points")
        ax_q.set_ylim(bottom=min(0.0, ax_q.get_ylim()[0]))
        for ax in (ax_t, ax_r, ax_q):
            ax.set_xscale("log", base=2)
            ax.grid(True, alpha=0.3)
        ax_q.set_xlabel("n (elements)")
    axes[0][0].set_ylabel("time per call (us), back to back")
    axes[1][0].set_ylabel("exact / default throughput")
    axes[2][0].set_ylabel("exact - default per call (us), queued")
    axes[0][0].legend(fontsize=8)
    axes[1][0].legend(fontsize=8)
    axes[2][0].legend(fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(out, dpi=100)
    plt.close(fig)
    print(f"plot_exact.py: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
