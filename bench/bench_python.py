#!/usr/bin/env python3
"""gridsync's Python package against torch.sum and cupy.sum, per call, on the same tensors.

For n = 2^10 .. 2^28 float32 elements (fresh random data, one tensor per size shared by all
three: CuPy reads torch's memory through DLPack), on ONE non-default stream:
  - per-call time: CUDA events around `calls` back-to-back calls, divided by `calls`; the
    median (and p10/p90) of `repeats` such runs. For small n this is the host's launch
    rate, since the device is faster than the host.
  - the Python layer's overhead: host time per call (perf_counter around batches of 200
    calls, the stream synchronised between batches so the launch queue never fills) of
    gridsync.reduce(x) minus that of the bare ctypes call lib.gs_reduce(...) with every
    argument prepared, at n = 2^10; torch.sum's host time beside them.
Writes bench_python.csv, overhead.csv, env.txt and (with matplotlib) bench_python.png
to --out, and prints the tables.

    PYTHONPATH=python GRIDSYNC_LIBRARY=build/core/libgridsync.so.1 \
        GRIDSYNC_BACKEND_PATH=build/backends python3 bench/bench_python.py --out DIR
"""

import argparse
import csv
import os
import platform
import statistics
import sys
import time

import torch

import gridsync
from gridsync import _core, _lib

try:
    import cupy
except ImportError:
    cupy = None


def quantiles(v):
    v = sorted(v)
    q = lambda f: v[min(len(v) - 1, int(f * (len(v) - 1) + 0.5))]  # noqa: E731
    return statistics.median(v), q(0.1), q(0.9)


def calls_for(n):
    return 200 if n <= 1 << 20 else (50 if n <= 1 << 24 else 10)


def event_time(fn, stream, calls, repeats):
    """Per-call microseconds of fn() queued `calls` times on stream, `repeats` runs."""
    for _ in range(3):
        fn()
    stream.synchronize()
    out = []
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(repeats):
        e0.record(stream)
        for _ in range(calls):
            fn()
        e1.record(stream)
        e1.synchronize()
        out.append(e0.elapsed_time(e1) * 1000.0 / calls)
    return out


def host_time(fn, stream, batches=51, batch=200):
    """Host microseconds per call of fn(), batches of `batch` calls, the stream drained
    between batches (not timed)."""
    for _ in range(batch):
        fn()
    stream.synchronize()
    out = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        t1 = time.perf_counter()
        out.append((t1 - t0) * 1e6 / batch)
        stream.synchronize()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-log2", type=int, default=10)
    ap.add_argument("--max-log2", type=int, default=28)
    ap.add_argument("--repeats", type=int, default=11)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    dev = torch.cuda.current_device()
    s = torch.cuda.Stream()
    if cupy is not None:
        # CuPy's current stream is the same stream, for the whole run (a `with` per call
        # would add its own host time to both CuPy columns).
        _core._cupy_stream(cupy, s.cuda_stream).use()
    with open(os.path.join(args.out, "env.txt"), "w") as f:
        f.write("gpu: %s\n" % torch.cuda.get_device_name(dev))
        f.write("torch: %s\ncupy: %s\npython: %s\n" % (torch.__version__, getattr(cupy, "__version__", "-"),
                                                      platform.python_version()))
        f.write("libgridsync: %s (%s)\ndriver: %d\n" % (gridsync.library_version(), gridsync.library_path(),
                                                        gridsync.driver_version()))
        f.write("backend: %s\n" % gridsync.context_info(dev)["backend_name"])
        f.write("command: %s\n" % " ".join([os.path.basename(sys.executable)] + sys.argv))

    rows = []
    bad = []
    torch.manual_seed(int(time.time()))
    with torch.cuda.stream(s):
        for lg in range(args.min_log2, args.max_log2 + 1):
            n = 1 << lg
            x = torch.rand(n, dtype=torch.float32, device="cuda") - 0.5
            xc = cupy.from_dlpack(x) if cupy is not None else None
            s.synchronize()
            # The same answer, within float32 summation error (semantics.md §7's bound).
            g, t = gridsync.reduce(x).item(), x.sum().item()
            if abs(g - t) > 2 * n * 2.0 ** -23 * x.abs().sum().item():
                bad.append((n, g, t))
            impls = [("gridsync", lambda: gridsync.reduce(x)), ("torch.sum", lambda: torch.sum(x))]
            if cupy is not None:
                impls += [("cupy.sum", lambda: cupy.sum(xc)), ("gridsync(cupy)", lambda: gridsync.reduce(xc))]
            for name, fn in impls:
                med, p10, p90 = quantiles(event_time(fn, s, calls_for(n), args.repeats))
                rows.append({"n": n, "bytes": 4 * n, "impl": name, "median_us": "%.3f" % med,
                             "p10_us": "%.3f" % p10, "p90_us": "%.3f" % p90,
                             "gbps": "%.1f" % (4 * n / med / 1e3)})
            del x, xc
    with open(os.path.join(args.out, "bench_python.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)

    # ---- the Python layer's overhead, at 2^10 elements ------------------------------------
    lib = _lib.load()
    over = []
    with torch.cuda.stream(s):
        x = torch.rand(1 << 10, device="cuda")
        out = torch.empty((), device="cuda")
        ctx = _core.context(dev)
        ptr, n, optr, sp = x.data_ptr(), x.numel(), out.data_ptr(), s.cuda_stream
        gs_reduce = lib.gs_reduce

        def bare():
            gs_reduce(ctx, ptr, n, 4, 0, optr, sp)
        cases = [("ctypes gs_reduce (prepared arguments)", bare), ("gridsync.reduce(x)", lambda: gridsync.reduce(x)),
                 ("torch.empty(()) alone", lambda: torch.empty((), device=x.device)),
                 ("torch.sum(x)", lambda: torch.sum(x))]
        if cupy is not None:
            xc = cupy.from_dlpack(x)
            cases += [("gridsync.reduce(cupy x)", lambda: gridsync.reduce(xc)), ("cupy.sum(x)", lambda: cupy.sum(xc))]
        for name, fn in cases:
            med, p10, p90 = quantiles(host_time(fn, s))
            over.append({"what": name, "host_median_us": "%.3f" % med, "p10_us": "%.3f" % p10,
                         "p90_us": "%.3f" % p90})
    with open(os.path.join(args.out, "overhead.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(over[0]))
        w.writeheader()
        w.writerows(over)

    # ---- tables ---------------------------------------------------------------------------
    by = {}
    for r in rows:
        by.setdefault(r["n"], {})[r["impl"]] = float(r["median_us"])
    names = [i for i in ("gridsync", "torch.sum", "cupy.sum", "gridsync(cupy)") if i in by[rows[0]["n"]]]
    print("\nper-call time, us (median of %d runs; CUDA events; one stream)" % args.repeats)
    print("%-7s" % "log2 n" + "".join("%16s" % k for k in names) + "%14s" % "torch/gs" +
          ("%14s" % "cupy/gs" if "cupy.sum" in names else ""))
    for n, v in sorted(by.items()):
        line = "%-7d" % (n.bit_length() - 1)
        line += "".join("%16.2f" % v[k] for k in names)
        line += "%14.2f" % (v["torch.sum"] / v["gridsync"])
        if "cupy.sum" in v:
            line += "%14.2f" % (v["cupy.sum"] / v["gridsync(cupy)"])
        print(line)
    print("\nhost time per call at n = 2^10, us (median of 51 batches of 200)")
    for o in over:
        print("  %-40s %8s" % (o["what"], o["host_median_us"]))
    base = float(over[0]["host_median_us"])
    print("Python layer overhead over the C call (torch input): %.2f us" % (float(over[1]["host_median_us"]) - base))
    if cupy is not None:
        print("Python layer overhead over the C call (cupy input):  %.2f us"
              % (float(over[4]["host_median_us"]) - base))
    if bad:
        print("MISMATCH gridsync vs torch.sum:", bad)

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no plot)")
        return 1 if bad else 0
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    ns = sorted(by)
    for k in names:
        a1.plot(ns, [by[n][k] for n in ns], marker="o", label=k)
    a1.set(xscale="log", yscale="log", xlabel="float32 elements", ylabel="us per call",
           title="per-call time, one stream (%s)" % torch.cuda.get_device_name(dev))
    a1.legend()
    a2.plot(ns, [by[n]["torch.sum"] / by[n]["gridsync"] for n in ns], marker="o", label="torch.sum / gridsync")
    if "cupy.sum" in names:
        a2.plot(ns, [by[n]["cupy.sum"] / by[n]["gridsync(cupy)"] for n in ns], marker="o",
                label="cupy.sum / gridsync(cupy)")
    a2.axhline(1.0, color="gray", lw=0.8)
    a2.set(xscale="log", xlabel="float32 elements", ylabel="speed-up of gridsync", title="ratio (>1: gridsync faster)")
    a2.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "bench_python.png"), dpi=110)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
