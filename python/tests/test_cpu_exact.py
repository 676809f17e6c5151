"""CPU tests of gridsync.exact_accumulator and gridsync.exact_round (no GPU, no driver):
argument errors raised before any CUDA call, the host (numpy) rounding path against the real
library's gs_exact_round and an independent rounding in Python integers, a library without
gs_exact_round_device (or without the GRIDSYNC_1.2 accumulators), and the C calls the torch,
CuPy and DLPack paths make, recorded with the fake frameworks of test_cpu_frameworks.py.
Run with the other CPU tests by `meson test --suite python` (unittest discovers
test_cpu*.py); the host rounding tests need numpy and are skipped without it."""

import ctypes
import math
import os
import random
import re
import struct
import sys
import unittest
from fractions import Fraction
from unittest import mock

import gridsync
from gridsync import _core, _cuda, _dlpack, _exact, _lib
from gridsync import DType, Op

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cpu import HEADER, FakeCAI, FakeDLPack, _LibWith, have_driver  # noqa: E402
from test_cpu_frameworks import FakeCupy, FakeTorch  # noqa: E402

try:
    import numpy as np
except ImportError:
    np = None

W = 76
# (precision, smallest normal exponent, largest exponent) of each float type
FORMATS = {DType.FLOAT16: (11, -14, 15), DType.BFLOAT16: (8, -126, 127), DType.FLOAT32: (24, -126, 127),
           DType.FLOAT64: (53, -1022, 1023)}
PACK = {DType.FLOAT16: "<e", DType.FLOAT32: "<f", DType.FLOAT64: "<d"}


class _Without(_LibWith):
    """The loaded library as an older one looks: without the symbols named."""

    def __init__(self, lib, *missing):
        super().__init__(lib)
        self._missing = missing

    def __getattr__(self, name):
        if name in self._missing:
            raise AttributeError("undefined symbol: " + name)
        return super().__getattr__(name)


def acc_words(values):
    """The normalised gs_exact_acc of float64 values, made here from the documented format
    (docs/semantics.md §12), independently of the library: a list of 76 ints."""
    finite = [v for v in values if math.isfinite(v)]
    total = sum(Fraction(v) for v in finite) * 2 ** 1088
    assert total.denominator == 1
    q = total.numerator
    w = [0] * W
    for i in range(67):
        w[i], q = q & 0xFFFFFFFF, q >> 32   # floor shifts: the sign ends in the top limb
    w[67] = q
    w[68] = len(values)
    w[69] = sum(1 for v in values if math.isnan(v))
    w[70] = sum(1 for v in values if v == math.inf)
    w[71] = sum(1 for v in values if v == -math.inf)
    w[72] = int(any(struct.pack("<d", v)[7] < 0x80 for v in values))  # a sign bit clear
    return w


def round_words(w, d):
    """The IEEE bits (an int) of the correctly rounded value of accumulator words w in d,
    computed with Python integers from the documented format."""
    p, emin, emax = FORMATS[d]
    bits = d.itemsize * 8
    mant = p - 1
    ebits = bits - 1 - mant
    inf = ((1 << ebits) - 1) << mant
    if w[69] > 0 or (w[70] > 0 and w[71] > 0):
        return inf | (1 << (mant - 1))                     # the quiet NaN
    if w[70] > 0 or w[71] > 0:
        return inf | ((1 << (bits - 1)) if w[71] > 0 else 0)
    q = sum(w[i] << (32 * i) for i in range(68))           # units of 2^-1088
    if q == 0:
        return (1 << (bits - 1)) if w[68] > 0 and w[72] == 0 else 0
    sign = (1 << (bits - 1)) if q < 0 else 0
    q = abs(q)
    e = max(q.bit_length() - 1 - 1088, emin)               # 2^e <= |sum|, or the subnormal range
    shift = e - mant + 1088                                 # one ulp is 2^shift units
    m, rem = divmod(q, 1 << shift)
    half = 1 << (shift - 1)
    if rem > half or (rem == half and m & 1):
        m += 1
    if m >> p:                                              # rounded up to the next binade
        m >>= 1
        e += 1
    if e > emax:
        return sign | inf
    if m >> mant == 0:                                      # subnormal
        return sign | m
    return sign | ((e + (1 << (ebits - 1)) - 1) << mant) | (m & ((1 << mant) - 1))


def lib_round(lib, w, d):
    """gs_exact_round of the real library, called directly: the IEEE bits."""
    acc = (ctypes.c_int64 * W)(*w)
    res = (ctypes.c_uint8 * 8)()
    st = lib.gs_exact_round(ctypes.byref(acc), d, ctypes.byref(res))
    assert st == 0, st
    return int.from_bytes(bytes(res)[:d.itemsize], "little")


def random_values(rng, n):
    pick = rng.random()
    out = []
    for _ in range(n):
        if pick < 0.3:
            out.append(rng.uniform(-1, 1) * 2.0 ** rng.randint(-40, 40))
        elif pick < 0.6:
            out.append(math.ldexp(rng.getrandbits(53), rng.randint(-1130, 970)) * rng.choice((-1, 1)))
        else:  # cancellation: large terms that cancel, small ones left over
            big = rng.uniform(-1, 1) * 2.0 ** 60
            out += [big, -big, rng.uniform(-1, 1) * 2.0 ** -30]
    return out


def have_accumulators():
    return getattr(_lib.load(), _lib.EXACT_SYMBOL, None) is not None


class TestExactDeclarations(unittest.TestCase):
    def test_public_names(self):
        for name in ("exact_accumulator", "exact_round"):
            self.assertIn(name, gridsync.__all__)
            self.assertTrue(callable(getattr(gridsync, name)), name)
        self.assertEqual((_lib.GS_REDUCE_EXACT_ACCUMULATOR, _lib.GS_EXACT_ACC_WORDS, _exact.NBYTES), (2, 76, 608))
        o = _exact._ACC_OPTS
        self.assertEqual((o.struct_size, o.out_dtype, o.flags), (12, -1, 2))

    def test_header(self):
        if not os.path.exists(HEADER):
            self.skipTest("api/gridsync.h not found (not run from a source tree)")
        with open(HEADER) as f:
            h = f.read()
        self.assertRegex(h, r"#define GS_REDUCE_EXACT_ACCUMULATOR 2u\b")
        self.assertRegex(h, r"#define GS_EXACT_ACC_WORDS 76\b")
        code = re.sub(r"\s+", " ", re.sub(r"/\*.*?\*/", "", h, flags=re.S))
        self.assertIn("GS_API gs_status gs_exact_round(const gs_exact_acc *acc, gs_dtype out_dtype, void *result);",
                      code)
        if "gs_exact_round_device(" not in code:
            self.skipTest("this header has no gs_exact_round_device yet")
        self.assertIn("GS_API gs_status gs_exact_round_device(gs_context *ctx, const gs_exact_acc *acc, "
                      "uint64_t count, gs_dtype out_dtype, void *out, gs_stream stream);", code)

    def test_device_symbol_against_library(self):
        lib = _lib.load()
        f = getattr(lib, _exact.SYMBOL, None)
        if f is None:
            self.skipTest("the library under test has no gs_exact_round_device")
        # A non-float output type is refused, whether or not a driver is there.
        self.assertNotEqual(f(None, None, 0, DType.INT32, None, 0), 0)


class TestExactArguments(unittest.TestCase):
    """Refused before the input is exported or anything reaches the driver."""

    def test_refused_without_export(self):
        cases = [
            (lambda x: gridsync.exact_accumulator(x), FakeDLPack(dtype=DType.INT32), TypeError, "float arrays.*int32"),
            (lambda x: gridsync.exact_accumulator(x), FakeDLPack(dtype=DType.UINT8), TypeError, "exact already"),
            (lambda x: gridsync.exact_accumulator(x, stream="s"), FakeDLPack(dtype=DType.FLOAT32), TypeError,
             "stream"),
            (lambda x: gridsync.exact_round(x, "float32"), FakeDLPack(shape=(75,), dtype=DType.INT64), ValueError,
             "last dimension is 76"),
            (lambda x: gridsync.exact_round(x, "float32"), FakeDLPack(shape=(), dtype=DType.INT64), ValueError,
             "last dimension"),
            (lambda x: gridsync.exact_round(x, "float32"), FakeDLPack(shape=(76,), dtype=DType.UINT64), TypeError,
             "int64.*not uint64"),
            (lambda x: gridsync.exact_round(x, "int32"), FakeDLPack(shape=(76,), dtype=DType.INT64), TypeError,
             "float type"),
            (lambda x: gridsync.exact_round(x, "complex64"), FakeDLPack(shape=(76,), dtype=DType.INT64), TypeError,
             "complex64"),
            (lambda x: gridsync.exact_round(x, "f32", stream=-1), FakeDLPack(shape=(76,), dtype=DType.INT64),
             ValueError, "negative"),
        ]
        for f, x, exc, text in cases:
            with self.assertRaisesRegex(exc, text):
                f(x)
            self.assertEqual(x.calls, [], text)

    def test_host_inputs(self):
        for x in ([1.0, 2.0], 3.0):
            with self.assertRaisesRegex(TypeError, "host|not an array"):
                gridsync.exact_accumulator(x)
        cpu = FakeDLPack(device=(_dlpack.KDL_CPU, 0), dtype=DType.FLOAT64)
        with self.assertRaisesRegex(TypeError, "CPU device.*copy it to the GPU"):
            gridsync.exact_accumulator(cpu)
        self.assertEqual(cpu.calls, [])

    def test_library_without_device_rounding(self):
        lib = _Without(_lib.load(), _exact.SYMBOL)
        acc = FakeDLPack(shape=(3, 76), dtype=DType.INT64)
        with mock.patch.object(_lib, "load", lambda: lib):
            with self.assertRaises(gridsync.NotSupportedError) as cm:
                gridsync.exact_round(acc, "float64")
        e = cm.exception
        self.assertIsInstance(e, NotImplementedError)
        self.assertEqual((e.status_name, e.function), ("GS_ERROR_UNSUPPORTED", "gs_exact_round_device"))
        self.assertIn("GRIDSYNC_1.3", str(e))
        self.assertIn(gridsync.library_version(), str(e))
        self.assertEqual(acc.calls, [], "nothing is exported for a rounding that cannot run")

    def test_library_without_accumulators(self):
        lib = _Without(_lib.load(), "gs_exact_round", _exact.SYMBOL)
        x = FakeDLPack(dtype=DType.FLOAT32)
        with mock.patch.object(_lib, "load", lambda: lib):
            with self.assertRaises(gridsync.NotSupportedError) as cm:
                gridsync.exact_accumulator(x)
            self.assertIn("GRIDSYNC_1.2", str(cm.exception))
            if np is not None:
                with self.assertRaisesRegex(gridsync.NotSupportedError, "GRIDSYNC_1.2"):
                    gridsync.exact_round(np.zeros(76, np.int64), "float32")
        self.assertEqual(x.calls, [])


@unittest.skipIf(np is None, "numpy is not installed")
class TestHostRounding(unittest.TestCase):
    """exact_round of a numpy accumulator: the real gs_exact_round on the host, no GPU."""

    def setUp(self):
        if not have_accumulators():
            self.skipTest("the library under test has no gs_exact_round (GRIDSYNC_1.2)")
        self.lib = _lib.load()
        self.rng = random.Random(int(os.environ.get("GRIDSYNC_TEST_SEED", "12345")))
        self.types = [DType.FLOAT16, DType.FLOAT32, DType.FLOAT64]
        try:
            import ml_dtypes  # noqa: F401
            self.types.append(DType.BFLOAT16)
        except ImportError:
            pass

    def check_rows(self, rows, what):
        a = np.array(rows, dtype=np.int64)
        for d in self.types:
            r = gridsync.exact_round(a, d)
            self.assertIsInstance(r, np.ndarray)
            self.assertEqual((r.shape, r.dtype.itemsize), ((len(rows),), d.itemsize))
            got = [int(v) for v in r.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[d.itemsize])]
            lib = [lib_round(self.lib, w, d) for w in rows]
            ref = [round_words(w, d) for w in rows]
            self.assertEqual(got, lib, "%s %s: exact_round vs gs_exact_round" % (what, d.type_name))
            self.assertEqual(got, ref, "%s %s: exact_round vs the Python rounding" % (what, d.type_name))

    def test_random_sums(self):
        rows = [acc_words(random_values(self.rng, self.rng.randint(0, 40))) for _ in range(300)]
        self.check_rows(rows, "random sums")

    def test_specials(self):
        tiny = 5e-324
        cases = [[], [0.0], [-0.0], [-0.0, -0.0], [-0.0, 0.0], [1.0, -1.0], [-1.0, 1.0, -0.0], [math.nan],
                 [math.inf, 1.0], [-math.inf], [math.inf, -math.inf], [tiny], [-tiny, tiny, tiny],
                 [65504.0, 16.0], [65504.0, 15.9], [1.7976931348623157e308] * 2, [2.0 ** -25, 2.0 ** -25 * 1.5],
                 [1.0, 2.0 ** -24], [1.0, 2.0 ** -24, 2.0 ** -80], [3.0, 2.0 ** -23]]
        self.check_rows([acc_words(v) for v in cases], "special cases")

    def test_sums_of_accumulators(self):
        # The int64 sum of normalised accumulators (what all_reduce makes) is the accumulator
        # of all the values; the limbs are no longer normalised, the rounding the same.
        for _ in range(50):
            shards = [random_values(self.rng, self.rng.randint(0, 10)) for _ in range(self.rng.randint(1, 9))]
            total = [sum(col) for col in zip(*(acc_words(s) for s in shards))]
            every = [v for s in shards for v in s]
            for d in self.types:
                r = gridsync.exact_round(np.array(total, dtype=np.int64), d)
                self.assertEqual(r.shape, ())
                self.assertEqual(int(r.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[d.itemsize])),
                                 round_words(acc_words(every), d))

    def test_any_int64_limbs(self):
        rows = []
        for _ in range(200):
            w = [self.rng.randint(-2 ** 62, 2 ** 62) if self.rng.random() < 0.1 else 0 for _ in range(68)]
            rows.append(w + [self.rng.randint(0, 5), 0, 0, 0, self.rng.randint(0, 1), 0, 0, 0])
        self.check_rows(rows, "unnormalised limbs")

    def test_shapes_and_out(self):
        a = np.array([acc_words([float(i), 0.5]) for i in range(6)], dtype=np.int64)
        self.assertEqual(gridsync.exact_round(a.reshape(2, 3, 76), "float64").tolist(),
                         [[0.5, 1.5, 2.5], [3.5, 4.5, 5.5]])
        self.assertEqual(gridsync.exact_round(a[:0], "float32").shape, (0,))
        one = gridsync.exact_round(a[4], np.float32)
        self.assertEqual((one.shape, one.dtype, float(one)), ((), np.dtype(np.float32), 4.5))
        # a strided view is copied on the host
        self.assertEqual(gridsync.exact_round(a[::2], "float64").tolist(), [0.5, 2.5, 4.5])
        out = np.full((2, 3), -1.0, dtype=np.float64)
        self.assertIs(gridsync.exact_round(a, "float64", out=out), out)
        self.assertEqual(out.ravel().tolist(), [0.5, 1.5, 2.5, 3.5, 4.5, 5.5])
        with self.assertRaisesRegex(TypeError, "out is float32 but dtype is float64"):
            gridsync.exact_round(a, "float64", out=np.empty(6, np.float32))
        with self.assertRaisesRegex(ValueError, "out has 5 elements, acc holds 6"):
            gridsync.exact_round(a, "float64", out=np.empty(5, np.float64))
        with self.assertRaisesRegex(ValueError, "stream= is for device"):
            gridsync.exact_round(a, "float64", stream=0)
        with self.assertRaisesRegex(TypeError, "int64"):
            gridsync.exact_round(a.astype(np.int32), "float64")
        with self.assertRaisesRegex(TypeError, "native byte order"):
            gridsync.exact_round(a.astype(">i8"), "float64")
        with self.assertRaisesRegex(ValueError, "last dimension is 76"):
            gridsync.exact_round(a[:, :75], "float64")
        if DType.BFLOAT16 not in self.types:
            with self.assertRaisesRegex(TypeError, "ml_dtypes"):
                gridsync.exact_round(a, "bfloat16")


@unittest.skipIf(have_driver(), "a CUDA driver is installed: the no-driver path cannot be seen here")
class TestExactNoDriver(unittest.TestCase):
    def test_accumulator_dlpack_released(self):
        if not have_accumulators():
            self.skipTest("the library under test has no exact accumulators")
        before = len(_dlpack._exported)
        with self.assertRaises(gridsync.GridsyncError) as cm:
            gridsync.exact_accumulator(FakeDLPack(dtype=DType.BFLOAT16))
        self.assertEqual(cm.exception.status_name, "GS_ERROR_NO_DRIVER")
        self.assertIn("gs_context_create", str(cm.exception))
        self.assertEqual(len(_dlpack._exported), before)

    def test_round_cai(self):
        if getattr(_lib.load(), _exact.SYMBOL, None) is None:
            self.skipTest("the library under test has no gs_exact_round_device")
        with self.assertRaises(gridsync.GridsyncError) as cm:
            gridsync.exact_round(FakeCAI(shape=(76,), typestr="<i8"), "float32")
        self.assertEqual(cm.exception.status_name, "GS_ERROR_NO_DRIVER")


class RecordedExact(unittest.TestCase):
    """A fake framework, a context for device 0, gs_reduce_ex and gs_exact_round_device
    recorded in self.calls: ("acc", in, n, dtype, op, out, stream, (size, out_dtype, flags))
    and ("round", acc, count, out_dtype, out, stream)."""

    def framework(self):
        return []

    def setUp(self):
        self.calls = []

        def gs_reduce_ex(ctx, inp, n, dtype, op, out, stream, opts):
            o = opts._obj
            self.calls.append(("acc", inp, n, int(dtype), int(op), out, stream,
                               (o.struct_size, o.out_dtype, o.flags)))
            return 0

        def gs_exact_round_device(ctx, acc, count, dtype, out, stream):
            self.calls.append(("round", acc, count, int(dtype), out, stream))
            return 0
        lib = _LibWith(_lib.load(), gs_reduce_ex=gs_reduce_ex, gs_exact_round_device=gs_exact_round_device,
                       gs_exact_round=object())
        self.patches = [
            mock.patch.dict(_core._contexts, {0: _lib.ctx_p()}, clear=True),
            mock.patch.object(_lib, "load", lambda: lib),
            mock.patch.object(_cuda, "mem_alloc", lambda dev, nbytes: 0x7f00dead0000 + nbytes),
        ] + self.framework()
        for p in self.patches:
            p.start()

    def tearDown(self):
        for p in reversed(self.patches):
            p.stop()


class TestExactTorch(RecordedExact):
    def framework(self):
        self.fake = FakeTorch()
        return [mock.patch.dict(sys.modules, {"torch": self.fake.torch}), mock.patch.object(_core, "_slabs", {})] + \
            [mock.patch.object(_core, name, None) for name in
             ("_torch_dtypes", "_torch_fast", "_torch_tensor", "_torch_raw_stream")]

    def test_accumulator(self):
        t = self.fake.torch
        for dt, d in ((t.float16, DType.FLOAT16), (t.bfloat16, DType.BFLOAT16), (t.float32, DType.FLOAT32),
                      (t.float64, DType.FLOAT64)):
            x = t.Tensor((3, 0, 5) if d == DType.FLOAT16 else (4, 5), dt)
            a = gridsync.exact_accumulator(x)
            self.assertEqual(self.calls[-1], ("acc", x.ptr, x.numel(), d, Op.SUM, a.data_ptr(), 0, (12, -1, 2)))
            self.assertEqual((a.shape, a.dtype), ((76,), t.int64), "a new 1-d int64 array of 76 words")
        self.assertEqual(len({c[5] for c in self.calls}), 4, "a fresh accumulator each call")
        for dt in (t.int32, t.int64, t.uint8, t.int16, t.bool):
            with self.assertRaisesRegex(TypeError, "float arrays"):
                gridsync.exact_accumulator(t.Tensor((4,), dt))
        with self.assertRaisesRegex(ValueError, "contiguous"):
            gridsync.exact_accumulator(t.Tensor((4, 4), t.float32, contiguous=False))
        self.assertEqual(len(self.calls), 4)

    def test_accumulator_stream(self):
        t = self.fake.torch
        x = t.Tensor((9,), t.float32)
        self.fake.streams[0] = 0x5000
        gridsync.exact_accumulator(x)
        self.assertEqual(self.calls[-1][6], 0x5000, "the current stream by default")
        with mock.patch.object(_cuda, "wait", lambda d, c, p: self.calls.append(("wait", d, c, p))):
            a = gridsync.exact_accumulator(x, stream=0x6000)
        self.assertEqual(self.calls[-2], ("wait", 0, 0x6000, 0x5000))
        self.assertEqual(self.calls[-1][6], 0x6000)
        self.assertEqual(a.recorded, [("stream", 0x6000)], "allocated for the stream that writes it")

    def test_round(self):
        t = self.fake.torch
        for shape, want in (((76,), ()), ((5, 76), (5,)), ((2, 3, 76), (2, 3)), ((0, 76), (0,))):
            acc = t.Tensor(shape, t.int64)
            for name, dt, d in (("float32", t.float32, DType.FLOAT32), ("bf16", t.bfloat16, DType.BFLOAT16)):
                r = gridsync.exact_round(acc, name if shape != (5, 76) else dt)
                self.assertEqual(self.calls[-1], ("round", acc.ptr, acc.numel() // 76, d, r.data_ptr(), 0))
                self.assertEqual((r.shape, r.dtype), (want, dt))
        out = t.Tensor((5,), t.float64)
        acc = t.Tensor((5, 76), t.int64)
        with mock.patch.object(_cuda, "wait", lambda d, c, p: None):
            self.assertIs(gridsync.exact_round(acc, t.float64, out=out, stream=0x7000), out)
        self.assertEqual(self.calls[-1], ("round", acc.ptr, 5, DType.FLOAT64, out.ptr, 0x7000))
        n = len(self.calls)
        with self.assertRaisesRegex(TypeError, "out is float32 but dtype is float64"):
            gridsync.exact_round(acc, "float64", out=t.Tensor((5,), t.float32))
        with self.assertRaisesRegex(ValueError, "out has 4 elements, acc holds 5"):
            gridsync.exact_round(acc, "float64", out=t.Tensor((4,), t.float64))
        with self.assertRaisesRegex(TypeError, "int64.*not int32"):
            gridsync.exact_round(t.Tensor((76,), t.int32), "float64")
        with self.assertRaisesRegex(ValueError, "last dimension is 76.*\\(76, 2\\)"):
            gridsync.exact_round(t.Tensor((76, 2), t.int64), "float64")
        with self.assertRaisesRegex(ValueError, "contiguous"):
            gridsync.exact_round(t.Tensor((2, 76), t.int64, contiguous=False), "float64")
        with self.assertRaisesRegex(TypeError, "acc.numpy\\(\\)"):
            gridsync.exact_round(t.Tensor((76,), t.int64, cuda=False), "float64")
        with self.assertRaisesRegex(ValueError, "8-byte aligned"):
            gridsync.exact_round(t.Tensor((76,), t.int64, ptr=0x7f0000000004), "float64")
        self.assertEqual(len(self.calls), n, "nothing launched for refused arguments")

    def test_recipe(self):
        # The README's recipe, as calls: accumulate, (all_reduce), round to x's dtype.
        t = self.fake.torch
        x = t.Tensor((1000,), t.bfloat16)
        acc = gridsync.exact_accumulator(x)
        total = gridsync.exact_round(acc, x.dtype)
        self.assertEqual([c[0] for c in self.calls], ["acc", "round"])
        self.assertEqual(self.calls[1], ("round", acc.ptr, 1, DType.BFLOAT16, total.data_ptr(), 0))
        self.assertEqual((total.shape, total.dtype), ((), t.bfloat16))


class TestExactCupy(RecordedExact):
    def framework(self):
        self.fake = FakeCupy()
        return [mock.patch.dict(sys.modules, {"cupy": self.fake.cupy}), mock.patch.object(_core, "_cupy_slabs", {})] + \
            [mock.patch.object(_core, name, None) for name in ("_cupy_fast", "_cupy_ndarray")]

    def test_accumulate_and_round(self):
        c = self.fake.cupy
        x = c.ndarray((6, 7), c.dtype("float64"))
        self.fake.current = 0x7000
        a = gridsync.exact_accumulator(x)
        self.assertEqual(self.calls[-1], ("acc", x.data.ptr, 42, DType.FLOAT64, Op.SUM, a.data.ptr, 0x7000,
                                          (12, -1, 2)))
        self.assertEqual((a.shape, a.dtype), ((76,), c.dtype("int64")))
        r = gridsync.exact_round(a, "float32")
        self.assertEqual(self.calls[-1], ("round", a.data.ptr, 1, DType.FLOAT32, r.data.ptr, 0x7000))
        self.assertEqual((r.shape, r.dtype), ((), c.dtype("float32")))
        k = c.ndarray((3, 76), c.dtype("int64"))
        r = gridsync.exact_round(k, "float64")
        self.assertEqual((self.calls[-1][2], r.shape), (3, (3,)))
        with self.assertRaisesRegex(TypeError, "float arrays.*int32"):
            gridsync.exact_accumulator(c.ndarray((4,), c.dtype("int32")))


class TestExactDLPack(RecordedExact):
    def test_device_buffers(self):
        x = FakeDLPack(shape=(4, 6), dtype=DType.FLOAT32)
        a = gridsync.exact_accumulator(x)
        try:
            self.assertIsInstance(a, gridsync.DeviceBuffer)
            self.assertEqual((a.shape, a.dtype, a.ptr), ((76,), DType.INT64, 0x7f00dead0000 + 608))
            self.assertEqual(self.calls[-1], ("acc", 0x7f0000002000, 24, DType.FLOAT32, Op.SUM, a.ptr, 0,
                                              (12, -1, 2)))
        finally:
            a.ptr = 0  # not memory of ours to free
        acc = FakeDLPack(shape=(2, 3, 76), dtype=DType.INT64)
        r = gridsync.exact_round(acc, "float16")
        try:
            self.assertEqual((r.shape, r.dtype), ((2, 3), DType.FLOAT16))
            self.assertEqual(self.calls[-1], ("round", 0x7f0000002000, 6, DType.FLOAT16, r.ptr, 0))
        finally:
            r.ptr = 0

    def test_cai(self):
        with mock.patch.object(_cuda, "pointer_device", lambda p: 0):
            r = gridsync.exact_round(FakeCAI(shape=(4, 76), typestr="<i8", stream=None), "float64")
            try:
                self.assertEqual(self.calls[-1], ("round", 0x7f0000001000, 4, DType.FLOAT64, r.ptr, 0))
            finally:
                r.ptr = 0
            with self.assertRaisesRegex(ValueError, "8-byte aligned"):
                gridsync.exact_round(FakeCAI(shape=(76,), typestr="<i8", data=(0x7f0000001004, False)), "float64")


if __name__ == "__main__":
    unittest.main()
