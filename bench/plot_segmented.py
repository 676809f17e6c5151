#!/usr/bin/env python3
"""Plots gridsync-bench-segmented's CSV (bench/README.md, "Segmented reduction").

    python3 bench/plot_segmented.py segmented.csv [OUT.png]

Writes OUT.png (default: segmented.png beside the CSV): left, throughput (GB/s of input +
offsets + output bytes) per layout, grouped bars gridsync-sm20 / gridsync-sm11 (default and
exact sums) / CUB, each
gridsync bar labelled with its throughput relative to CUB and its target (bench/README.md); right,
time per call (log scale) with the min..max of the runs as error bars. An implementation
that failed its check or was not measured has no bar (and is named under the axis).
Only the standard library and matplotlib; a missing matplotlib is reported, not fatal (exit 0).
"""
import os
import sys

from plot_common import fnum, pyplot, read_rows

TARGETS = {"uniform": 1.0, "powerlaw": 2.0, "giant": 2.0, "tiny": 1.0}
LAYOUT_ORDER = ["uniform", "powerlaw", "giant", "tiny"]


def label_of(row):
    if row.get("impl") == "cub":
        return "CUB"
    b = row.get("backend", "")
    name = {"cuda_sm20": "gridsync-sm20", "cuda_sm11_compat": "gridsync-sm11"}.get(b, "gridsync-" + b)
    return name + "-exact" if row.get("impl") == "gridsync-exact" else name


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) >= 2 else 2
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(path)), "segmented.png")
    plt = pyplot("plot_segmented.py")
    if plt is None:
        return 0

    rows = read_rows(path, "plot_segmented.py")
    if rows is None:
        return 1
    gpu = rows[0].get("gpu", "?")
    layouts, labels = [], []
    data = {}  # (layout, label) -> row
    for r in rows:
        lay, lab = r.get("layout", "?"), label_of(r)
        if lay not in layouts:
            layouts.append(lay)
        if lab not in labels:
            labels.append(lab)
        data[(lay, lab)] = r
    layouts.sort(key=lambda s: (LAYOUT_ORDER.index(s) if s in LAYOUT_ORDER else len(LAYOUT_ORDER), s))
    order = ["gridsync-sm20", "gridsync-sm11", "gridsync-sm20-exact", "gridsync-sm11-exact", "CUB"]
    labels.sort(key=lambda s: (order.index(s) if s in order else 1.5, s))
    colors = {"gridsync-sm20": "tab:blue", "gridsync-sm11": "tab:orange", "CUB": "dimgray"}
    extra = ["tab:green", "tab:purple", "tab:brown"]
    for i, lab in enumerate(lab for lab in labels if lab not in colors):
        colors[lab] = extra[i % len(extra)]

    def layout_title(lay):
        for lab in labels:
            r = data.get((lay, lab))
            if r:
                n, s = r.get("n", "?"), r.get("num_segments", "?")
                try:
                    return f"{lay}\nn={int(n) / 2**20:.1f}Mi, {int(s):,} seg"
                except ValueError:
                    return f"{lay}\nn={n}, {s} seg"
        return lay

    fig, (ax_g, ax_t) = plt.subplots(1, 2, figsize=(15, 6.2))
    quick = any(r.get("layout") != "tiny" and (fnum(r.get("n")) or 2**26) < 2**25 for r in rows)
    fig.suptitle(f"gridsync gs_segmented_reduce vs cub::DeviceSegmentedReduce::Sum, float32 SUM - {gpu}", fontsize=12)
    width = 0.8 / max(1, len(labels))
    missing = []
    for k, lab in enumerate(labels):
        xs, gs, ts, lo_err, hi_err, txs = [], [], [], [], [], []
        for i, lay in enumerate(layouts):
            r = data.get((lay, lab))
            x = i + (k - (len(labels) - 1) / 2) * width
            g = fnum(r.get("gbps")) if r else None
            t = fnum(r.get("median_us")) if r else None
            if g is None or t is None:
                missing.append(f"{lab}/{lay}: {(r.get('check') if r else 'no row') or 'not measured'}"[:70])
                continue
            xs.append(x)
            gs.append(g)
            ts.append(t)
            lo, hi = fnum(r.get("min_us")), fnum(r.get("max_us"))
            lo_err.append(max(0.0, t - lo) if lo is not None else 0.0)
            hi_err.append(max(0.0, hi - t) if hi is not None else 0.0)
            txs.append((x, g, lay, (r.get("check") or "ok")))
        bars = ax_g.bar(xs, gs, width, color=colors[lab], label=lab)
        ax_t.bar(xs, ts, width, color=colors[lab], label=lab, yerr=[lo_err, hi_err], capsize=2, ecolor="black")
        for (x, g, lay, check), b in zip(txs, bars):
            cub = data.get((lay, "CUB"))
            cg = fnum(cub.get("gbps")) if cub else None
            if lab == "CUB" or not cg:
                txt = f"{g:.0f}"
            else:
                ratio = g / cg
                tgt = TARGETS.get(lay)
                mark = "" if tgt is None else (" met" if ratio >= tgt else " MISS")
                txt = f"{g:.0f}\n{ratio:.2f}x{mark}"
            if check != "ok":
                txt += "\n!" + check[:14]
            ax_g.annotate(txt, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                          fontsize=7, xytext=(0, 2), textcoords="offset points")
    for ax in (ax_g, ax_t):
        ax.set_xticks(range(len(layouts)))
        ax.set_xticklabels([layout_title(lay) for lay in layouts], fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=9, loc="upper right")
    ax_g.set_ylabel("GB/s (input + offsets + output bytes)")
    ax_g.set_title("throughput (label: GB/s, x CUB, vs target: uniform/tiny >= 1, powerlaw/giant >= 2)", fontsize=9)
    ax_g.set_ylim(top=ax_g.get_ylim()[1] * 1.15)
    ax_t.set_yscale("log")
    ax_t.set_ylabel("time per call (us), median; bars: min..max of the runs")
    ax_t.set_title("time per call", fontsize=9)
    notes = []
    if quick:
        notes.append("--quick sizes (about 2^22 elements): the targets are for 2^26")
    if missing:
        notes.append("not measured: " + "; ".join(missing[:6]) + (" ..." if len(missing) > 6 else ""))
    if notes:
        fig.text(0.01, 0.01, "\n".join(notes), fontsize=8, color="firebrick", va="bottom")
    fig.tight_layout(rect=(0, 0.06 if notes else 0, 1, 0.95))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"plot_segmented.py: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
