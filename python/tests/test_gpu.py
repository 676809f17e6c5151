"""GPU tests of the gridsync Python package (suite 'gpu'): every dtype x op through PyTorch and
CuPy against a host reference and the framework's own result, streams, DLPack and
__cuda_array_interface__ inputs, DeviceBuffer, bfloat16, segmented reductions, exact sums.

Exits 77 (skipped) when there is no CUDA driver or device, or no PyTorch with CUDA; CuPy's
parts are skipped where CuPy is missing. Fresh random data each run (the seed is printed;
GRIDSYNC_TEST_SEED repeats one). Prints 'python-gpu: N checks' at the end.
"""

import math
import os
import struct
import sys
import threading
import time
import unittest
import zlib

import gridsync
from gridsync import DType, Op

SKIP = 77
SEED = int(os.environ.get("GRIDSYNC_TEST_SEED", time.time_ns() % 1000000007))
CHECKS = [0]
_count_lock = threading.Lock()

try:
    import numpy as np
    import torch
except ImportError:  # pragma: no cover - decided in main()
    np = torch = None
try:
    import cupy
except ImportError:
    cupy = None

SIZES = [0, 1, 33, 1000, 65537, (1 << 20) + 3]
INT_TYPES = [DType.INT8, DType.UINT8, DType.INT32, DType.UINT32, DType.INT64, DType.UINT64]
FLOAT_TYPES = [DType.FLOAT16, DType.BFLOAT16, DType.FLOAT32, DType.FLOAT64]
EPS = {DType.FLOAT16: 2.0 ** -10, DType.BFLOAT16: 2.0 ** -7, DType.FLOAT32: 2.0 ** -23, DType.FLOAT64: 2.0 ** -52}
# The accumulator of each float type (docs/semantics.md §3): 16-bit floats add in float32.
ACC_EPS = {DType.FLOAT16: EPS[DType.FLOAT32], DType.BFLOAT16: EPS[DType.FLOAT32],
           DType.FLOAT32: EPS[DType.FLOAT32], DType.FLOAT64: EPS[DType.FLOAT64]}


def ok(n=1):
    with _count_lock:
        CHECKS[0] += n


def ops_for(d):
    ops = [Op.SUM, Op.PROD, Op.MIN, Op.MAX, Op.ARGMIN, Op.ARGMAX]
    return ops if d.is_float else ops + [Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR]


def np_dtype(d):
    return None if d == DType.BFLOAT16 else np.dtype(d.type_name)


def bits(d):
    return d.itemsize * 8


def wrap(v, d):
    """v reduced mod 2^w, read as d's signedness."""
    w = bits(d)
    v &= (1 << w) - 1
    if d.name.startswith("INT") and v >> (w - 1):
        v -= 1 << w
    return v


def make_host(d, op, n, rng):
    """Random, never all-zero data for (d, op): a numpy array (float32 values for bfloat16)."""
    if d.is_float:
        if op == Op.PROD:
            # Near 1, so that a product of 2^20 of them stays finite in float16.
            step = 2.0 ** -10 if d != DType.BFLOAT16 else 2.0 ** -7
            a = 1.0 + step * rng.integers(-2, 3, n).astype(np.float64)
        else:
            a = rng.uniform(-1.0, 1.0, n) * (4.0 if d in (DType.FLOAT16, DType.BFLOAT16) else 1000.0)
        return a.astype(np.float32 if d == DType.BFLOAT16 else np_dtype(d))
    info = np.iinfo(np_dtype(d))
    a = rng.integers(info.min, info.max, n, dtype=np_dtype(d), endpoint=True)
    if op == Op.PROD:
        a |= 1  # odd factors: the wrapped product is not just 0
    return a


def to_torch(a, d):
    if d == DType.BFLOAT16:
        return torch.from_numpy(a).cuda().to(torch.bfloat16)
    try:
        return torch.from_numpy(a).cuda()
    except TypeError:  # a torch without uint32/uint64 in from_numpy
        return None


def host_values(x, d):
    """The exact input values as Python-friendly numpy (bfloat16 widened to float32)."""
    if isinstance(x, torch.Tensor):
        if d == DType.BFLOAT16:
            return x.float().cpu().numpy()
        try:
            return x.cpu().numpy()
        except TypeError:  # a torch whose numpy() lacks uint32/uint64: the same bits, signed
            signed = {DType.UINT32: (torch.int32, np.uint32), DType.UINT64: (torch.int64, np.uint64)}[d]
            return x.view(signed[0]).cpu().numpy().view(signed[1])
    return cupy.asnumpy(x)


OP_NAMES = {Op.SUM: "sum", Op.PROD: "prod", Op.MIN: "min", Op.MAX: "max", Op.ARGMIN: "argmin",
            Op.ARGMAX: "argmax", Op.BIT_AND: "and", Op.BIT_OR: "or", Op.BIT_XOR: "xor"}
IDENT = {Op.SUM: 0, Op.PROD: 1, Op.BIT_OR: 0, Op.BIT_XOR: 0, Op.ARGMIN: -1, Op.ARGMAX: -1}


def identity(d, op):
    if op in IDENT:
        return IDENT[op]
    if op == Op.BIT_AND:
        return wrap(-1, d)
    if d.is_float:
        return math.inf if op == Op.MIN else -math.inf
    info = np.iinfo(np_dtype(d))
    return int(info.max) if op == Op.MIN else int(info.min)


def reference(a, d, op):
    """(value, tolerance) of the exact semantics of docs/semantics.md, from host values."""
    n = a.size
    if n == 0:
        return identity(d, op), 0.0
    if op == Op.ARGMIN:
        return int(np.argmin(a)), 0.0
    if op == Op.ARGMAX:
        return int(np.argmax(a)), 0.0
    if op == Op.MIN:
        return a.min().item(), 0.0
    if op == Op.MAX:
        return a.max().item(), 0.0
    if not d.is_float:
        # In uint64 (signed types sign-extended first), where numpy's sum and product wrap
        # mod 2^64 and the bitwise reductions see the same low w bits.
        u = a.astype(np.int64).view(np.uint64) if d.name.startswith("INT") else a.astype(np.uint64)
        r = {Op.SUM: lambda: np.sum(u, dtype=np.uint64), Op.PROD: lambda: np.prod(u, dtype=np.uint64),
             Op.BIT_AND: lambda: np.bitwise_and.reduce(u), Op.BIT_OR: lambda: np.bitwise_or.reduce(u),
             Op.BIT_XOR: lambda: np.bitwise_xor.reduce(u)}[op]()
        return wrap(int(r), d), 0.0
    f = a.astype(np.float64)
    if op == Op.SUM:
        ref = math.fsum(f.tolist())
        # n·ε·Σ|x| for the additions, ε of the output for the final rounding (semantics §7).
        return ref, n * ACC_EPS[d] * float(np.abs(f).sum()) + EPS[d] * abs(ref)
    ref = float(np.prod(f))
    return ref, (n + 1) * ACC_EPS[d] * abs(ref) + EPS[d] * abs(ref)


def value(r):
    """A result object's value as a Python number (this waits for its stream)."""
    if isinstance(r, gridsync.DeviceBuffer):
        return r.item()
    if isinstance(r, torch.Tensor):
        r = r.cpu()
        if r.dtype == torch.bfloat16:
            r = r.float()
        try:
            return r.item()
        except RuntimeError:  # uint32/uint64 without .item(): read the bits
            return r.view(torch.int32 if r.dtype == getattr(torch, "uint32", None) else torch.int64).item()
    return cupy.asnumpy(r).item()


def framework_result(x, d, op):
    """The framework's own answer where it has the op, else None; exact types wrapped to the
    output width like gridsync's."""
    try:
        if isinstance(x, torch.Tensor):
            if op == Op.SUM:
                v = (x.sum(dtype=torch.float64) if d.is_float else x.to(torch.int64).sum()).item()
            elif op == Op.PROD:
                v = (x.double().prod() if d.is_float else x.to(torch.int64).prod()).item()
            elif op in (Op.MIN, Op.MAX):
                v = value(torch.amin(x) if op == Op.MIN else torch.amax(x))
            elif op in (Op.ARGMIN, Op.ARGMAX):
                v = (torch.argmin(x) if op == Op.ARGMIN else torch.argmax(x)).item()
            else:
                return None
        else:
            if op == Op.SUM:
                v = cupy.sum(x, dtype=cupy.float64 if d.is_float else x.dtype).item()
            elif op == Op.PROD:
                v = cupy.prod(x, dtype=cupy.float64 if d.is_float else x.dtype).item()
            elif op == Op.MIN:
                v = x.min().item()
            elif op == Op.MAX:
                v = x.max().item()
            elif op == Op.ARGMIN:
                v = int(x.argmin())
            elif op == Op.ARGMAX:
                v = int(x.argmax())
            else:
                ufunc = {Op.BIT_AND: cupy.bitwise_and, Op.BIT_OR: cupy.bitwise_or, Op.BIT_XOR: cupy.bitwise_xor}[op]
                v = ufunc.reduce(x).item()
    except (RuntimeError, NotImplementedError, TypeError, AttributeError):
        return None  # e.g. torch ops on uint32/uint64, or a CuPy ufunc without reduce
    if not d.is_float and op in (Op.SUM, Op.PROD, Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR):
        v = wrap(int(v), d)
    return v


class Base(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(SEED + zlib.crc32(self.id().encode()))

    def assert_result(self, got, ref, tol, what):
        if isinstance(ref, float) and math.isinf(ref):
            self.assertEqual(got, ref, what)
        elif tol:
            self.assertLessEqual(abs(got - ref), tol, "%s: got %r, reference %r, bound %g" % (what, got, ref, tol))
        else:
            self.assertEqual(got, ref, what)
        ok()

    def sweep(self, fw):
        types = INT_TYPES + FLOAT_TYPES
        for d in types:
            for op in ops_for(d):
                for n in SIZES:
                    a = self.make(d, op, n)
                    x = to_torch(a, d) if fw == "torch" else (
                        None if d == DType.BFLOAT16 else cupy.asarray(a))
                    if x is None:
                        continue
                    # A name takes the framework's fast path, an Op the general one: both, by size.
                    oparg = op if n % 2 else OP_NAMES[op]
                    what = "%s %s %s n=%d" % (fw, d.type_name, op.name, n)
                    r = gridsync.reduce(x, oparg)
                    self.assertIs(type(r), type(x), what)
                    self.assertEqual(tuple(r.shape), (), what)
                    want_dt = "int64" if op in (Op.ARGMIN, Op.ARGMAX) else d.type_name
                    self.assertEqual(str(r.dtype).replace("torch.", ""), want_dt, what)
                    got = value(r)
                    hv = host_values(x, d)
                    ref, tol = reference(hv, d, op)
                    self.assert_result(got, ref, tol, what + " vs host reference")
                    if n:
                        fr = framework_result(x, d, op)
                        if fr is not None:
                            self.assert_result(got, fr, 2 * tol + (EPS[d] * abs(fr) if tol else 0),
                                               what + " vs %s" % fw)

    def make(self, d, op, n):
        return make_host(d, op, n, self.rng)


class TestTorch(Base):
    def test_every_dtype_and_op(self):
        self.sweep("torch")

    def test_results_are_independent(self):
        # 0-d results come from slabs of views (_core._torch_slot): every call must get a slot
        # of its own, across slab boundaries, streams and dtypes.
        xs = [torch.full((1000 + i,), i % 97, dtype=torch.int32, device="cuda") for i in range(2 * 1024 + 50)]
        rs = [gridsync.reduce(x) for x in xs]
        ms = [gridsync.reduce(x.to(torch.int64), "max") for x in xs[:1100]]
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            rs2 = [gridsync.reduce(x) for x in xs[:1100]]
        s.synchronize()
        self.assertEqual(len({r.data_ptr() for r in rs + ms + rs2}), len(rs) + len(ms) + len(rs2))
        want = [(1000 + i) * (i % 97) for i in range(len(xs))]
        self.assertEqual(torch.stack(rs).tolist(), want)
        self.assertEqual(torch.stack(rs2).tolist(), want[:1100])
        self.assertEqual(torch.stack(ms).tolist(), [i % 97 for i in range(1100)])
        self.assertTrue(all(r.shape == () and r.dtype == torch.int32 for r in rs))
        ok(len(rs) + len(ms) + len(rs2))

    def test_shapes_reduced_whole(self):
        x = torch.randint(-100, 100, (3, 5, 7), dtype=torch.int32, device="cuda")
        self.assertEqual(gridsync.reduce(x).item(), int(x.sum()))
        self.assertEqual(gridsync.reduce(x, "argmax").item(), int(x.flatten().argmax()))
        ok(2)

    def test_out_dtype(self):
        x = torch.full((1 << 16,), 70000, dtype=torch.int32, device="cuda")
        r = gridsync.reduce(x, out_dtype=torch.int64)
        self.assertEqual((r.dtype, r.item()), (torch.int64, 70000 << 16))
        h = torch.full((4096,), 60000.0, dtype=torch.float16, device="cuda")
        r = gridsync.reduce(h, out_dtype="float32")
        self.assertEqual((r.dtype, r.item()), (torch.float32, 60000.0 * 4096))
        self.assertEqual(gridsync.reduce(h).item(), math.inf)   # float16 overflows, as documented
        with self.assertRaises(gridsync.GridsyncError) as cm:
            gridsync.reduce(h, "argmax", out_dtype="float32")
        self.assertEqual(cm.exception.status_name, "GS_ERROR_UNSUPPORTED")
        ok(5)

    def test_errors(self):
        x = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
        with self.assertRaisesRegex(ValueError, "contiguous"):
            gridsync.reduce(x.t())
        with self.assertRaisesRegex(TypeError, "copy it to the GPU"):
            gridsync.reduce(torch.ones(3))
        with self.assertRaisesRegex(TypeError, "int16"):
            gridsync.reduce(torch.ones(3, dtype=torch.int16, device="cuda"))
        with self.assertRaises(gridsync.GridsyncError) as cm:
            gridsync.reduce(x, "xor")
        e = cm.exception
        self.assertEqual((e.status_name, e.function), ("GS_ERROR_UNSUPPORTED", "gs_reduce"))
        self.assertTrue(e.message, "the exception carries gs_last_error_message()")
        ok(5)

    def test_nan(self):
        for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            x = torch.rand(100003, device="cuda").to(d)
            x[777] = math.nan
            x[90000] = math.nan
            self.assertTrue(math.isnan(gridsync.reduce(x, "min").float().item()))
            self.assertTrue(math.isnan(gridsync.reduce(x, "max").float().item()))
            self.assertEqual(gridsync.reduce(x, "argmin").item(), 777)
            self.assertEqual(gridsync.reduce(x, "argmax").item(), 777)
            ok(4)

    def test_bfloat16_through_dlpack_and_torch(self):
        x = (torch.randn(300001, device="cuda") * 3).to(torch.bfloat16)
        ref = math.fsum(x.double().cpu().tolist())
        tol = x.numel() * ACC_EPS[DType.BFLOAT16] * float(x.double().abs().sum()) + EPS[DType.BFLOAT16] * abs(ref)
        for r in (gridsync.reduce(x), gridsync.reduce(DLPackOnly(x))):
            self.assertLessEqual(abs(value(r) - ref), tol)
            ok()
        r = gridsync.reduce(DLPackOnly(x), "max")
        self.assertIsInstance(r, gridsync.DeviceBuffer)
        self.assertEqual(torch.from_dlpack(r).dtype, torch.bfloat16)
        self.assertEqual(torch.from_dlpack(r).item(), x.max().item())
        ok(2)

    def test_current_stream(self):
        s = torch.cuda.Stream()
        x = late_fill(torch.zeros(1 << 22, dtype=torch.float32, device="cuda"), 3.0, s)
        with torch.cuda.stream(s):
            r = gridsync.reduce(x)
        s.synchronize()
        self.assertEqual(r.item(), 3.0 * (1 << 22))
        ok()

    def test_explicit_stream_waits_for_producer(self):
        s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
        x = late_fill(torch.zeros(1 << 22, dtype=torch.int32, device="cuda"), 2, s1)
        with torch.cuda.stream(s1):
            r = gridsync.reduce(x, stream=s2)  # x's producer is s1: s2 must wait for it
        s2.synchronize()
        self.assertEqual(r.item(), 2 << 22)
        ok()

    def test_cuda_array_interface_and_dlpack(self):
        s = torch.cuda.Stream()
        x = late_fill(torch.zeros(1 << 20, dtype=torch.int64, device="cuda"), 5, s)
        with torch.cuda.stream(s):
            # DLPack: gridsync's stream (legacy default) is handed to torch, which orders it.
            r1 = gridsync.reduce(DLPackOnly(x))
        self.assertIsInstance(r1, gridsync.DeviceBuffer)
        self.assertEqual(r1.item(), 5 << 20)
        torch.cuda.synchronize()
        r2 = gridsync.reduce(CAIOnly(x), "max")
        self.assertEqual(r2.item(), 5)
        # DeviceBuffer to torch, both protocols.
        self.assertEqual(torch.from_dlpack(r1).item(), 5 << 20)
        self.assertEqual(torch.as_tensor(CAIOnly(r1), device="cuda").item(), 5 << 20)
        ok(4)

    def test_segmented(self):
        rng = self.rng
        for d in (torch.float32, torch.int32, torch.bfloat16):
            n = 1 << 20
            x = torch.randint(-50, 50, (n,), device="cuda").to(d)
            cuts = np.sort(rng.integers(0, n, 999))
            offsets = torch.tensor([0, *cuts.tolist(), n], dtype=torch.int64, device="cuda")
            r = gridsync.segmented_reduce(x, offsets)
            self.assertEqual(tuple(r.shape), (1000,))
            try:
                want = torch.segment_reduce(x, "sum", offsets=offsets) if d == torch.float32 else None
            except (RuntimeError, NotImplementedError):
                want = None
            hv = x.float().cpu().numpy()
            o = offsets.cpu().tolist()
            got = r.float().cpu().tolist()
            for j in range(1000):
                ref = float(hv[o[j]:o[j + 1]].astype(np.float64).sum())  # small integers: exact
                if d == torch.bfloat16:
                    ref = float(torch.tensor(ref).to(torch.bfloat16).float())
                self.assertEqual(got[j], ref, "segment %d" % j)
            if want is not None:  # small integers: every order of additions is exact
                self.assertTrue(torch.equal(r, want))
            am = gridsync.segmented_reduce(x, offsets, "argmax").cpu().tolist()
            for j in range(0, 1000, 37):
                seg = hv[o[j]:o[j + 1]]
                self.assertEqual(am[j], int(np.argmax(seg)) if seg.size else -1)
            ok(1000 + 28)
        with self.assertRaisesRegex(TypeError, "int64"):
            gridsync.segmented_reduce(x, offsets.to(torch.int32))
        bad = torch.tensor([0, 10, 5, n], dtype=torch.int64, device="cuda")
        with self.assertRaises(gridsync.GridsyncError) as cm:
            gridsync.segmented_reduce(x, bad, check_offsets=True)
        self.assertEqual(cm.exception.status_name, "GS_ERROR_INVALID_ARGUMENT")
        ok(2)

    def test_exact(self):
        n = 1 << 18
        x = torch.randn(n, dtype=torch.float64, device="cuda") * torch.logspace(-30, 30, n, dtype=torch.float64,
                                                                                 device="cuda")
        if not gridsync.exact_sums_available():
            with self.assertRaises(gridsync.NotSupportedError):
                gridsync.reduce(x, exact=True)
            ok()
            self.skipTest("the library has no exact sums: exact=True refused, as it must be")
        x = x[torch.randperm(n, device="cuda")]  # large and tiny terms interleaved: cancellation
        for d in (torch.float64, torch.float32, torch.bfloat16, torch.float16):
            with self.subTest(dtype=d):
                y = x.to(d) if d != torch.float16 else (torch.randn(n, device="cuda") * 1000).to(d)
                r = gridsync.reduce(y, exact=True)
                want = exact_round(y.double().cpu().tolist(), d)
                if d == torch.float64:  # the reference agrees with fsum, correctly rounded too
                    self.assertEqual(want.item(), math.fsum(y.cpu().tolist()))
                self.assertEqual(bits_of(r), bits_of(want), "exact %s: got %r, want %r" % (d, r.item(), want.item()))
                ok()
        # A wider output: float32 data, its exact sum rounded once to float64.
        y = x.to(torch.float32)
        r = gridsync.reduce(y, out_dtype="float64", exact=True)
        self.assertEqual(r.dtype, torch.float64)
        self.assertEqual(bits_of(r), bits_of(exact_round(y.double().cpu().tolist(), torch.float64)))
        # Bitwise the same through every path and stream: DLPack, another stream.
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            r2 = gridsync.reduce(DLPackOnly(y), out_dtype="float64", exact=True)
        self.assertEqual(struct.pack("<d", r2.item()), struct.pack("<d", r.item()))
        ok(2)
        # Segments: each one's exact sum, rounded once (empty ones: +0.0).
        cuts = np.sort(self.rng.integers(0, n, 499))
        offsets = torch.tensor([0, *cuts.tolist(), n], dtype=torch.int64, device="cuda")
        for d in (torch.float64, torch.float32):
            y = x.to(d)
            got, hv, o = gridsync.segmented_reduce(y, offsets, exact=True), y.double().cpu().tolist(), cuts.tolist()
            o = [0, *o, n]
            want = torch.stack([exact_round(hv[o[j]:o[j + 1]], d) for j in range(500)])
            iv = torch.int64 if d == torch.float64 else torch.int32
            self.assertTrue(torch.equal(got.cpu().view(iv), want.view(iv)), "segmented exact %s" % d)
            ok(500)

    def test_threads(self):
        x = torch.arange(1 << 20, dtype=torch.int64, device="cuda")
        want = (1 << 20) * ((1 << 20) - 1) // 2
        errors = []

        def work():
            try:
                s = torch.cuda.Stream()
                with torch.cuda.stream(s):
                    for _ in range(50):
                        r = gridsync.reduce(x)
                    s.synchronize()
                    if r.item() != want:
                        errors.append(r.item())
            except Exception as e:  # reported below
                errors.append(e)
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])
        ok(4)


def exact_round(values, d):
    """The exact sum of `values` rounded once, to nearest-even, to torch dtype d (a 0-d tensor)."""
    p, emin = {torch.float64: (53, -1022), torch.float32: (24, -126), torch.bfloat16: (8, -126),
               torch.float16: (11, -14)}[d]
    # exact: the value is representable in d
    return torch.tensor(exact_round_value(values, p, emin), dtype=torch.float64).to(d)


def exact_round_value(values, p, emin):
    """The exact sum of float64 values rounded once, to nearest-even, to p bits of precision
    with smallest normal exponent emin, as a Python float: the sum in integers (every float64
    is an integer multiple of 2^-1074), rounded with integer arithmetic (rounding fsum's
    float64 again would round twice). Overflow gives an infinity."""
    total = 0
    for v in values:
        m, e = math.frexp(v)
        total += int(m * (1 << 53)) << (e - 53 + 1074)
    if total == 0:
        return 0.0
    sign, q = (-1 if total < 0 else 1), abs(total)
    e = max(q.bit_length() - 1 - 1074, emin)     # 2^e <= |sum|, or the subnormal range
    shift = e - (p - 1) + 1074                    # one ulp is 2^shift units of 2^-1074
    if shift <= 0:
        return sign * math.ldexp(q, -1074)
    m, rem = divmod(q, 1 << shift)
    half = 1 << (shift - 1)
    if rem > half or (rem == half and m & 1):
        m += 1
    try:
        return sign * math.ldexp(m, shift - 1074)
    except OverflowError:
        return sign * math.inf


def bits_of(t):
    t = t.cpu()
    return t.view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]).item()


def late_fill(x, value, stream):
    """x, filled with value on the torch stream `stream` behind a sleep kernel. torch's streams
    are non-blocking (the legacy default stream does not wait for them), so a kernel queued on
    any stream not ordered after `stream` reads x before the fill."""
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(20_000_000)
        x.fill_(value)
    return x


class DLPackOnly:
    def __init__(self, x):
        self.x = x

    def __dlpack__(self, **kw):
        return self.x.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


class CAIOnly:
    def __init__(self, x):
        self.__cuda_array_interface__ = x.__cuda_array_interface__


@unittest.skipIf(cupy is None, "CuPy is not installed")
class TestCupy(Base):
    def test_every_dtype_and_op(self):
        self.sweep("cupy")

    def test_current_stream(self):
        s = cupy.cuda.Stream(non_blocking=True)
        x = cupy_late_fill(cupy.zeros(1 << 22, dtype=cupy.float64), 1.5, s)
        with s:
            r = gridsync.reduce(x)
        s.synchronize()
        self.assertIsInstance(r, cupy.ndarray)
        self.assertEqual(float(r), 1.5 * (1 << 22))
        ok()

    def test_explicit_stream(self):
        s1 = cupy.cuda.Stream(non_blocking=True)
        s2 = cupy.cuda.Stream(non_blocking=True)
        x = cupy_late_fill(cupy.zeros(1 << 22, dtype=cupy.uint32), 7, s1)
        with s1:
            r = gridsync.reduce(x, "sum", stream=s2)
        s2.synchronize()
        self.assertEqual(int(r), 7 << 22)
        ok()

    def test_cuda_array_interface_stream(self):
        # CuPy's __cuda_array_interface__ names its current stream; gridsync (on the legacy
        # default stream here) must wait for it.
        s = cupy.cuda.Stream(non_blocking=True)
        x = cupy_late_fill(cupy.zeros(1 << 22, dtype=cupy.int32), 3, s)
        with s:
            wrapped = CAIOnly(x)
        self.assertEqual(wrapped.__cuda_array_interface__.get("stream"), s.ptr)
        r = gridsync.reduce(wrapped)
        self.assertIsInstance(r, gridsync.DeviceBuffer)
        self.assertEqual(r.item(), 3 << 22)
        self.assertEqual(int(cupy.asarray(r)), 3 << 22)     # DeviceBuffer's own CAI
        self.assertEqual(int(cupy.from_dlpack(r)), 3 << 22)
        ok(3)

    def test_results_are_independent(self):
        xs = [cupy.full((1000 + i,), i % 89, dtype=cupy.int64) for i in range(2 * 1024 + 50)]
        rs = [gridsync.reduce(x) for x in xs]
        am = [gridsync.reduce(x, "argmax") for x in xs[:1100]]
        self.assertEqual(len({r.data.ptr for r in rs + am}), len(rs) + len(am))
        self.assertEqual(cupy.stack(rs).get().tolist(), [(1000 + i) * (i % 89) for i in range(len(xs))])
        self.assertEqual(cupy.stack(am).get().tolist(), [0] * 1100)
        self.assertTrue(all(r.shape == () and r.dtype == cupy.int64 for r in rs))
        ok(len(rs) + len(am))

    def test_dlpack(self):
        x = cupy.arange(1 << 20, dtype=cupy.uint64)
        r = gridsync.reduce(DLPackOnly(x))
        self.assertIsInstance(r, gridsync.DeviceBuffer)
        self.assertEqual(r.item(), (1 << 20) * ((1 << 20) - 1) // 2)
        self.assertEqual(gridsync.reduce(DLPackOnly(x[::-1].copy()), "argmin").item(), (1 << 20) - 1)
        ok(2)


def cupy_late_fill(x, value, stream):
    """late_fill for a CuPy array on a non-blocking cupy.cuda.Stream (CuPy has no sleep
    kernel: torch's, on the same raw stream)."""
    cupy.cuda.Device().synchronize()
    with torch.cuda.stream(torch.cuda.ExternalStream(stream.ptr)):
        torch.cuda._sleep(20_000_000)
    with stream:
        x.fill(value)
    return x


def main():
    if torch is None:
        print("python-gpu: skipped: PyTorch or numpy is not installed")
        return SKIP
    try:
        n = gridsync.device_count()
    except gridsync.GridsyncError as e:
        if e.status_name in ("GS_ERROR_NO_DRIVER", "GS_ERROR_NO_DEVICE"):
            print("python-gpu: skipped: %s" % e)
            return SKIP
        raise
    if n == 0 or not torch.cuda.is_available():
        print("python-gpu: skipped: no CUDA device (or PyTorch without CUDA)")
        return SKIP
    print("python-gpu: seed %d, %s, torch %s, cupy %s, library %s (%s)" % (
        SEED, torch.cuda.get_device_name(), torch.__version__, getattr(cupy, "__version__", "-"),
        gridsync.library_version(), gridsync.library_path()), flush=True)
    prog = unittest.main(exit=False, verbosity=2)
    print("python-gpu: %d checks, %d tests, %d failures, %d errors, %d skipped" % (
        CHECKS[0], prog.result.testsRun, len(prog.result.failures), len(prog.result.errors),
        len(prog.result.skipped)))
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
