#!/usr/bin/env python3
"""Plots gridsync-bench's CSV (bench/README.md).

    python3 bench/plot.py bench.csv [OUTDIR]

Writes into OUTDIR (default: the CSV's folder):
  bench_time.png   time per call against n, one panel per dtype/op (rows: ops, columns: dtypes);
                   one line per gridsync backend and one for CUB; solid = hot (same buffer),
                   dashed = rotating copies with the L2 flushed (only where the input fits in L2)
  bench_gbps.png   the same as GB/s of input read, with the measured device copy bandwidth
                   and the datasheet peak as horizontal lines
  bench_ratio.png  gridsync time / CUB time (lower is better) with bench/README.md's targets as a step
Only the standard library and matplotlib; a missing matplotlib is reported, not fatal (exit 0).
"""
import csv
import math
import os
import sys
from collections import defaultdict

from plot_common import fnum, pyplot

TARGETS = [(18, 0.6), (25, 0.85), (64, 1.0)]  # n <= 2^k: gridsync/CUB time ratio at most this


def target(log2n):
    for k, t in TARGETS:
        if log2n <= k:
            return t
    return 1.0


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) >= 2 else 2
    path = sys.argv[1]
    outdir = sys.argv[2] if len(sys.argv) > 2 else (os.path.dirname(os.path.abspath(path)) or ".")
    os.makedirs(outdir, exist_ok=True)
    plt = pyplot("plot.py")
    if plt is None:
        return 0

    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append(r)
    if not rows:
        print("plot.py: the CSV has no rows", file=sys.stderr)
        return 1

    gpu = rows[0].get("gpu", "?")
    copy_gbps = None
    peak_gbps = None
    # series[(dtype, op)][(label, mode)] = [(n, time_us, gbps)]
    series = defaultdict(lambda: defaultdict(list))
    dtypes, ops, labels = [], [], []
    for r in rows:
        mode = r.get("mode", "")
        if mode == "copy":
            copy_gbps = fnum(r.get("gbps"))
            continue
        if mode not in ("hot", "rotating"):
            continue
        t = fnum(r.get("time_us_median"))
        n = fnum(r.get("n"))
        if t is None or n is None or t <= 0:
            continue
        g = fnum(r.get("gbps"))
        fp = fnum(r.get("frac_peak"))
        if g and fp:
            peak_gbps = g / fp
        label = "CUB" if r["impl"] == "cub" else r["backend"]
        key = (r["dtype"], r["op"])
        if r["dtype"] not in dtypes:
            dtypes.append(r["dtype"])
        if r["op"] not in ops:
            ops.append(r["op"])
        if label not in labels:
            labels.append(label)
        series[key][(label, mode)].append((n, t, g))
    if not series:
        print("plot.py: no timed rows in the CSV", file=sys.stderr)
        return 1
    # CUB last, so that it is drawn on top and listed last
    labels.sort(key=lambda s: (s == "CUB", s))
    colors = {}
    palette = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown"]
    for i, lab in enumerate([lab for lab in labels if lab != "CUB"]):
        colors[lab] = palette[i % len(palette)]
    colors["CUB"] = "black"

    def grid(title):
        fig, axes = plt.subplots(len(ops), len(dtypes), figsize=(4.2 * len(dtypes), 3.4 * len(ops)), squeeze=False)
        fig.suptitle(f"{title} - {gpu}", fontsize=13)
        return fig, axes

    def finish(fig, axes, name):
        handles, labs = [], []
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in labs:
                    handles.append(h)
                    labs.append(lab)
        fig.legend(handles, labs, loc="lower center", ncol=min(6, max(1, len(labs))), fontsize=9)
        fig.tight_layout(rect=(0, 0.05, 1, 0.96))
        out = os.path.join(outdir, name)
        fig.savefig(out, dpi=110)
        plt.close(fig)
        print(f"plot.py: wrote {out}")

    def log2_axis(ax):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("n (elements)")
        ax.grid(True, which="both", alpha=0.3)

    # time per call and GB/s
    for metric, name, ylabel in (("time", "bench_time.png", "time per call (us)"),
                                 ("gbps", "bench_gbps.png", "GB/s (input bytes)")):
        fig, axes = grid("gridsync vs CUB: " + ylabel)
        for i, op in enumerate(ops):
            for j, dt in enumerate(dtypes):
                ax = axes[i][j]
                ax.set_title(f"{dt} {op}")
                for lab in labels:
                    for mode, style in (("hot", "-"), ("rotating", "--")):
                        pts = sorted(series[(dt, op)].get((lab, mode), []))
                        if not pts:
                            continue
                        xs = [p[0] for p in pts]
                        ys = [p[1] if metric == "time" else p[2] for p in pts]
                        if metric == "gbps" and any(y is None for y in ys):
                            continue
                        ax.plot(xs, ys, style, color=colors[lab], marker="o" if mode == "hot" else None,
                                markersize=2.5, linewidth=1.2, label=f"{lab} ({mode})")
                if not ax.lines:
                    ax.text(0.5, 0.5, "no data\n(unsupported or skipped)", ha="center", va="center",
                            transform=ax.transAxes, color="gray")
                log2_axis(ax)
                ax.set_yscale("log")
                ax.set_ylabel(ylabel)
                if metric == "gbps":
                    if copy_gbps:
                        ax.axhline(copy_gbps, color="gray", linestyle=":", linewidth=1, label="device copy (D2D)")
                    if peak_gbps:
                        ax.axhline(peak_gbps, color="red", linestyle=":", linewidth=1, label="datasheet peak")
        finish(fig, axes, name)

    # ratio to CUB
    fig, axes = grid("gridsync time / CUB time (lower is better; step = target)")
    for i, op in enumerate(ops):
        for j, dt in enumerate(dtypes):
            ax = axes[i][j]
            ax.set_title(f"{dt} {op}")
            cub = {mode: {p[0]: p[1] for p in series[(dt, op)].get(("CUB", mode), [])} for mode in ("hot", "rotating")}
            allx = set()
            for lab in labels:
                if lab == "CUB":
                    continue
                for mode, style in (("hot", "-"), ("rotating", "--")):
                    pts = sorted(series[(dt, op)].get((lab, mode), []))
                    pts = [(n, t / cub[mode][n]) for n, t, _ in pts if n in cub[mode]]
                    if not pts:
                        continue
                    allx.update(p[0] for p in pts)
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=colors[lab],
                            marker="o" if mode == "hot" else None, markersize=2.5, linewidth=1.2,
                            label=f"{lab} ({mode})")
            if allx:
                xs = sorted(allx)
                ax.step(xs, [target(round(math.log2(x))) for x in xs], where="mid", color="red", linewidth=1,
                        label="target")
            if not allx:
                ax.text(0.5, 0.5, "no data\n(unsupported or skipped)", ha="center", va="center",
                        transform=ax.transAxes, color="gray")
            ax.axhline(1.0, color="black", linewidth=0.6)
            log2_axis(ax)
            ax.set_ylabel("gridsync / CUB")
            ax.set_ylim(bottom=0)
    finish(fig, axes, "bench_ratio.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
