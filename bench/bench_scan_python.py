#!/usr/bin/env python3
"""gridsync.cumsum against torch.cumsum and cupy.cumsum, per call, on the same device buffers.

For float32, int32, float64, float16 and int8 at n = 2^10, 2^12, ... 2^28 (fresh random data,
one buffer per dtype and size shared by every implementation: CuPy reads torch's memory
through DLPack), on ONE non-default stream: CUDA events around `calls` back-to-back calls,
divided by `calls`; the median of `repeats` such runs. For small n this is the host's launch
rate, since the device is faster than the host.

Implementations (a framework that is not installed is left out):
  gridsync        gridsync.cumsum(x): results of x's dtype (gridsync's default)
  gridsync-wide   gridsync.cumsum(x, out_dtype=int64), int8 and int32 only: the type
                  torch.cumsum and cupy.cumsum write for them, so bytes moved are alike
  torch           torch.cumsum(x, 0): int64 results for int8 and int32
  cupy            cupy.cumsum(x): int64 results for int8 and int32 (numpy's rule)
  gridsync(cupy)  gridsync.cumsum of the CuPy array (CuPy's path of the Python layer)
Before timing, up to n = 2^--check-max-log2 (default 2^24: the check runs on the host),
gridsync's results are compared with the framework's (gridsync-wide's for the integers,
exact; floats within i * eps * sum|x[0..i]| in the accumulator, plus the final rounding): a
mismatch is printed to stderr and makes the exit status 1.

Prints CSV on stdout: dtype,n,impl,us (median microseconds per call).

    PYTHONPATH=python GRIDSYNC_LIBRARY=build/core/libgridsync.so.1 \\
        GRIDSYNC_BACKEND_PATH=build/backends python3 bench/bench_scan_python.py > scan.csv

Its helpers are its own, not bench_python.py's: that script needs PyTorch, this one runs
with CuPy alone too.
"""

import argparse
import statistics
import sys

import gridsync

try:
    import torch
    if not torch.cuda.is_available():
        torch = None
except ImportError:
    torch = None
try:
    import cupy
except ImportError:
    cupy = None

DTYPES = ["float32", "int32", "float64", "float16", "int8"]
EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52, "float16": 2.0 ** -23}  # the accumulator's


def calls_for(n):
    return 200 if n <= 1 << 20 else (50 if n <= 1 << 24 else 10)


class Timer:
    """Event timing on one stream, with torch's events or CuPy's."""

    def __init__(self):
        if torch is not None:
            self.stream = torch.cuda.Stream()
            torch.cuda.set_stream(self.stream)  # torch's current stream for the whole run
            handle = self.stream.cuda_stream
        else:
            self.stream = cupy.cuda.Stream(non_blocking=True)
            handle = self.stream.ptr
        if cupy is not None:
            # CuPy's current stream is the same stream, for the whole run (a `with` per
            # call would add its host time to the CuPy columns).
            from gridsync import _core
            self.cupy_stream = _core._cupy_stream(cupy, handle) if torch is not None else self.stream
            self.cupy_stream.use()

    def event(self):
        if torch is not None:
            return torch.cuda.Event(enable_timing=True)
        return cupy.cuda.Event()

    def record(self, e):
        e.record(self.stream)

    def elapsed_ms(self, e0, e1):
        e1.synchronize()
        if torch is not None:
            return e0.elapsed_time(e1)
        return cupy.cuda.get_elapsed_time(e0, e1)

    def synchronize(self):
        self.stream.synchronize()

    def per_call_us(self, fn, calls, repeats):
        for _ in range(3):
            fn()
        self.synchronize()
        e0, e1 = self.event(), self.event()
        out = []
        for _ in range(repeats):
            self.record(e0)
            for _ in range(calls):
                fn()
            self.record(e1)
            out.append(self.elapsed_ms(e0, e1) * 1000.0 / calls)
        return statistics.median(out)


def make(dtype, n, seed):
    """(torch tensor or None, cupy array or None) over the same device memory."""
    if torch is not None:
        g = torch.Generator(device="cuda").manual_seed(seed)
        if dtype.startswith("float"):
            # float16: 1/16 of that keeps every running sum of 2^28 far below 65504
            scale = 2.0 ** -4 if dtype == "float16" else 1.0
            x = ((torch.rand(n, device="cuda", generator=g) * 2 - 1) * scale).to(getattr(torch, dtype))
        else:
            lo = -100 if dtype == "int8" else -1000
            x = torch.randint(lo, -lo, (n,), device="cuda", generator=g, dtype=getattr(torch, dtype))
        return x, cupy.from_dlpack(x) if cupy is not None else None
    rs = cupy.random.RandomState(seed)
    if dtype.startswith("float"):
        scale = 2.0 ** -4 if dtype == "float16" else 1.0
        return None, ((rs.random_sample(n) * 2 - 1) * scale).astype(dtype)
    lo = -100 if dtype == "int8" else -1000
    return None, rs.randint(lo, -lo, n).astype(dtype)


def check(dtype, n, x, xc):
    """None, or a line saying how gridsync's cumsum differs from the framework's."""
    import numpy as np
    fw = x if x is not None else xc
    g = gridsync.cumsum(fw, out_dtype="int64" if dtype in ("int8", "int32") else None)
    if x is not None:
        want = torch.cumsum(x.double() if dtype.startswith("float") else x.long(), 0).cpu().numpy()
        got = g.double().cpu().numpy() if dtype.startswith("float") else g.cpu().numpy()
        absx = x.double().abs().cpu().numpy()
    else:
        want = cupy.cumsum(xc.astype("float64" if dtype.startswith("float") else "int64")).get()
        got = g.get().astype(want.dtype)
        absx = abs(xc.astype("float64")).get()
    if not dtype.startswith("float"):
        bad = (got != want).nonzero()[0]
        return None if bad.size == 0 else "%s n=%d: %d results differ, first at %d" % (dtype, n, bad.size, bad[0])
    k = np.arange(1, n + 1, dtype=np.float64)
    out_eps = {"float32": 2.0 ** -24, "float64": 2.0 ** -53, "float16": 2.0 ** -11}[dtype]
    # any order's bound in the accumulator, the final rounding, and the float64 reference's own
    tol = k * (EPS[dtype] + 2.0 ** -52) * np.cumsum(absx) + out_eps * np.abs(want) + 2.0 ** -24
    bad = (np.abs(got - want) > tol).nonzero()[0]
    return None if bad.size == 0 else "%s n=%d: %d results beyond the bound, first at %d" % (dtype, n, bad.size, bad[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-log2", type=int, default=10)
    ap.add_argument("--max-log2", type=int, default=28)
    ap.add_argument("--step", type=int, default=2, help="log2 step of the sizes (default 2: x4)")
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--check-max-log2", type=int, default=24,
                    help="compare with the framework up to this size (-1: never)")
    args = ap.parse_args()
    if torch is None and cupy is None:
        print("bench_scan_python: neither PyTorch with CUDA nor CuPy is installed", file=sys.stderr)
        return 77
    if not gridsync.scans_available():
        print("bench_scan_python: the loaded libgridsync %s has no gs_scan" % gridsync.library_version(),
              file=sys.stderr)
        return 77
    timer = Timer()
    bad = []
    print("dtype,n,impl,us", flush=True)
    for dtype in args.dtypes.split(","):
        for lg in range(args.min_log2, args.max_log2 + 1, args.step):
            n = 1 << lg
            x, xc = make(dtype, n, lg)
            timer.synchronize()
            if lg <= args.check_max_log2:
                msg = check(dtype, n, x, xc)
                if msg:
                    bad.append(msg)
                    print("MISMATCH: " + msg, file=sys.stderr)
            fw = x if x is not None else xc
            impls = [("gridsync", lambda: gridsync.cumsum(fw))]
            if dtype in ("int8", "int32"):
                impls.append(("gridsync-wide", lambda: gridsync.cumsum(fw, out_dtype="int64")))
            if x is not None:
                impls.append(("torch", lambda: torch.cumsum(x, 0)))
            if xc is not None:
                impls.append(("cupy", lambda: cupy.cumsum(xc)))
                if x is not None:
                    impls.append(("gridsync(cupy)", lambda: gridsync.cumsum(xc)))
            for name, fn in impls:
                us = timer.per_call_us(fn, calls_for(n), args.repeats)
                print("%s,%d,%s,%.3f" % (dtype, n, name, us), flush=True)
            del x, xc, fw, impls
            if torch is not None:
                torch.cuda.empty_cache()
            if cupy is not None:
                cupy.get_default_memory_pool().free_all_blocks()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
