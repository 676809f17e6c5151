"""CPU tests of gridsync.scan and cumsum/cumprod/cummin/cummax (no GPU, no driver): argument
errors raised before any CUDA call, the declared gs_scan signature against the real library
(n == 0 needs no device), a library without gs_scan, and the C call the torch and CuPy paths
make, recorded with the fake frameworks of test_cpu_frameworks.py. Run with the other CPU
tests by `meson test --suite python` (unittest discovers test_cpu*.py)."""

import ctypes
import inspect
import os
import re
import sys
import unittest
from unittest import mock

import gridsync
from gridsync import _core, _cuda, _dlpack, _lib, _scan
from gridsync import DType, Op

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cpu import HEADER, FakeCAI, FakeDLPack, _LibWith, have_driver  # noqa: E402
from test_cpu_frameworks import FakeCupy, FakeTorch  # noqa: E402


class _NoScan(_LibWith):
    """The loaded library as one before GRIDSYNC_1.3 looks: everything but gs_scan."""

    def __getattr__(self, name):
        if name == _scan.SYMBOL:
            raise AttributeError("undefined symbol: gs_scan")
        return super().__getattr__(name)


class TestScanDeclarations(unittest.TestCase):
    def test_public_names(self):
        for name in ("scan", "cumsum", "cumprod", "cummin", "cummax", "scans_available"):
            self.assertIn(name, gridsync.__all__)
            self.assertTrue(callable(getattr(gridsync, name)), name)
        self.assertIn("int64", gridsync.cumsum.__doc__)      # the default that differs from torch's

    def test_options_layout(self):
        o = _lib.ScanOptions
        self.assertEqual(ctypes.sizeof(o), 40)
        self.assertEqual((o.out_dtype.offset, o.flags.offset, o.carry_in.offset, o.carry_in_count.offset,
                          o.total.offset), (4, 8, 16, 24, 32))
        self.assertEqual((_lib.GS_SCAN_EXCLUSIVE, _lib.GS_SCAN_EXACT), (1, 2))

    def test_header(self):
        if not os.path.exists(HEADER):
            self.skipTest("api/gridsync.h not found (not run from a source tree)")
        with open(HEADER) as f:
            h = f.read()
        if "gs_scan(" not in h:
            self.skipTest("this header has no gs_scan yet")
        self.assertRegex(h, r"#define GS_SCAN_EXCLUSIVE 1u\b")
        self.assertRegex(h, r"#define GS_SCAN_EXACT 2u\b")
        code = re.sub(r"\s+", " ", re.sub(r"/\*.*?\*/", "", h, flags=re.S))  # comments dropped
        self.assertIn("typedef struct gs_scan_options { uint32_t struct_size; int32_t out_dtype; uint32_t flags; "
                      "const gs_exact_acc *carry_in; uint64_t carry_in_count; gs_exact_acc *total; } "
                      "gs_scan_options;", code)
        self.assertIn("GS_API gs_status gs_scan(gs_context *ctx, const void *in, uint64_t n, gs_dtype dtype, gs_op op, "
                      "void *out, gs_stream stream, const gs_scan_options *opts);", code)

    def test_signature_against_library(self):
        # n == 0 checks dtype, op and options and queues nothing: no driver or device needed,
        # so the declared argtypes meet the real function here.
        lib = _lib.load()
        if not gridsync.scans_available():
            self.skipTest("the library under test has no gs_scan")
        f = lib.gs_scan
        opts = _lib.ScanOptions(ctypes.sizeof(_lib.ScanOptions), _lib.GS_OUT_DEFAULT, _lib.GS_SCAN_EXCLUSIVE)
        self.assertEqual(f(None, None, 0, DType.FLOAT32, Op.SUM, None, 0, None), 0)
        self.assertEqual(f(None, None, 0, DType.INT8, Op.BIT_XOR, None, 0, ctypes.byref(opts)), 0)
        self.assertEqual(f(None, None, 0, DType.FLOAT32, Op.ARGMAX, None, 0, None), _lib.Status.ERROR_UNSUPPORTED)
        self.assertIn("gs_scan", _lib.last_error_message(lib))
        wide = _lib.ScanOptions(ctypes.sizeof(_lib.ScanOptions), DType.INT64, 0)
        self.assertEqual(f(None, None, 0, DType.INT32, Op.SUM, None, 0, ctypes.byref(wide)), 0)
        bad = _lib.ScanOptions(ctypes.sizeof(_lib.ScanOptions), _lib.GS_OUT_DEFAULT, 4)
        self.assertEqual(f(None, None, 0, DType.INT32, Op.SUM, None, 0, ctypes.byref(bad)),
                         _lib.Status.ERROR_INVALID_ARGUMENT)

    def test_exact_options_against_library(self):
        # n == 0 without total queues nothing: the exact options' own checks, no device.
        lib = _lib.load()
        if not gridsync.scans_available():
            self.skipTest("the library under test has no gs_scan")
        f, S, X = lib.gs_scan, _lib.Status, _lib.GS_SCAN_EXACT

        def call(dtype, flags, carry_in=None, count=0, total=None, out_dtype=_lib.GS_OUT_DEFAULT):
            o = _lib.ScanOptions(ctypes.sizeof(_lib.ScanOptions), out_dtype, flags, carry_in, count, total)
            return f(None, None, 0, dtype, Op.SUM, None, 0, ctypes.byref(o))
        self.assertEqual(call(DType.FLOAT32, X), 0)
        self.assertEqual(call(DType.FLOAT16, X | _lib.GS_SCAN_EXCLUSIVE, 0x1000, 2, out_dtype=DType.FLOAT32), 0)
        self.assertEqual(call(DType.FLOAT32, 0, 0x1000, 1), S.ERROR_INVALID_ARGUMENT)
        self.assertIn("without GS_SCAN_EXACT", _lib.last_error_message(lib))
        self.assertEqual(call(DType.FLOAT32, 0, total=0x1000), S.ERROR_INVALID_ARGUMENT)
        self.assertEqual(call(DType.FLOAT64, X, None, 3), S.ERROR_INVALID_ARGUMENT)
        self.assertEqual(call(DType.FLOAT64, X, 0x1000, 0), S.ERROR_INVALID_ARGUMENT)
        self.assertEqual(call(DType.INT32, X), S.ERROR_UNSUPPORTED)
        self.assertEqual(call(DType.FLOAT64, X, out_dtype=DType.FLOAT32), S.ERROR_UNSUPPORTED)
        if not have_driver():
            # a total launches even for n == 0: that needs the driver
            self.assertEqual(call(DType.FLOAT32, X, total=0x1000), S.ERROR_NO_DRIVER)


class TestScanArguments(unittest.TestCase):
    """Refused before anything reaches the driver."""

    def test_ops(self):
        self.assertIs(_scan.scan_op("sum"), Op.SUM)
        self.assertIs(_scan.scan_op("bitwise_xor"), Op.BIT_XOR)
        self.assertIs(_scan.scan_op(Op.MAX), Op.MAX)
        for bad in ("argmin", "argmax", Op.ARGMAX):
            with self.assertRaisesRegex(ValueError, "has no scan"):
                _scan.scan_op(bad)
        with self.assertRaisesRegex(ValueError, "unknown op 'mean'"):
            _scan.scan_op("mean")

    def test_refused_without_export(self):
        # Every argument error comes before the input is exported (no DLPack call made).
        x = FakeDLPack()
        cases = [
            (lambda: gridsync.scan(x, "argmax"), ValueError, "no scan"),
            (lambda: gridsync.scan(x, "median"), ValueError, "unknown op"),
            (lambda: gridsync.cumsum(x, out_dtype="complex64"), TypeError, "complex64"),
            (lambda: gridsync.cummax(x, stream="s"), TypeError, "stream"),
            (lambda: gridsync.cumprod(x, stream=-1), ValueError, "negative"),
        ]
        for f, exc, text in cases:
            with self.assertRaisesRegex(exc, text):
                f()
        self.assertEqual(x.calls, [])

    def test_exact_refused_without_export(self):
        # The exact options' errors come before anything is exported, x or the accumulators.
        x = FakeDLPack(shape=(10,), dtype=DType.FLOAT32)
        good = FakeDLPack(shape=(76,), dtype=DType.INT64)
        accs = [FakeDLPack(shape=(76,), dtype=DType.INT32), FakeDLPack(shape=(75,), dtype=DType.INT64),
                FakeDLPack(shape=(2, 3, 76), dtype=DType.INT64), FakeDLPack(shape=(2, 76), dtype=DType.INT64),
                FakeDLPack(shape=(76,), dtype=DType.FLOAT64)]
        cases = [
            (lambda: gridsync.cumsum(x, carry_in=good), ValueError, "exact=True"),
            (lambda: gridsync.cumsum(x, total=True), ValueError, "exact=True"),
            (lambda: gridsync.scan(x, "sum", exclusive=True, total=good), ValueError, "exact=True"),
            (lambda: gridsync.scan(x, "max", exact=True), ValueError, "exact=True is for sums.*not max"),
            (lambda: gridsync.scan(x, Op.PROD, exact=True, total=True), ValueError, "not prod"),
            (lambda: gridsync.cumsum(x, exact=True, carry_in=accs[0]), TypeError, "carry_in.*int64.*not int32"),
            (lambda: gridsync.cumsum(x, exact=True, carry_in=accs[1]), ValueError,
             r"carry_in must have shape \(76,\) or \(k, 76\), it has \(75,\)"),
            (lambda: gridsync.cumsum(x, exact=True, carry_in=accs[2]), ValueError, r"\(2, 3, 76\)"),
            (lambda: gridsync.cumsum(x, exact=True, total=accs[3]), ValueError,
             r"total must have shape \(76,\), it has \(2, 76\)"),
            (lambda: gridsync.cumsum(x, exact=True, total=accs[4]), TypeError, "total.*not float64"),
        ]
        for f, exc, text in cases:
            with self.assertRaisesRegex(exc, text):
                f()
        self.assertNotIn("exact", inspect.signature(gridsync.cummax).parameters, "exact= is cumsum's alone")
        for a in [x, good] + accs:
            self.assertEqual(a.calls, [])

    def test_host_inputs(self):
        for x in ([1.0, 2.0], (1, 2), 3.0):
            with self.assertRaisesRegex(TypeError, "host|not an array"):
                gridsync.cumsum(x)
        cpu = FakeDLPack(device=(_dlpack.KDL_CPU, 0))
        with self.assertRaisesRegex(TypeError, "CPU device.*copy it to the GPU"):
            gridsync.cummin(cpu)
        self.assertEqual(cpu.calls, [])

    def test_library_without_scan(self):
        lib = _NoScan(_lib.load())
        x = FakeDLPack()
        with mock.patch.object(_lib, "load", lambda: lib):
            self.assertFalse(gridsync.scans_available())
            with self.assertRaises(gridsync.NotSupportedError) as cm:
                gridsync.cumsum(x)
        e = cm.exception
        self.assertIsInstance(e, NotImplementedError)
        self.assertEqual((e.status_name, e.function), ("GS_ERROR_UNSUPPORTED", "gs_scan"))
        self.assertIn("GRIDSYNC_1.3", str(e))
        self.assertIn(gridsync.library_version(), str(e))
        self.assertEqual(x.calls, [], "nothing is exported for a scan that cannot run")


@unittest.skipIf(have_driver(), "a CUDA driver is installed: the no-driver path cannot be seen here")
class TestScanNoDriver(unittest.TestCase):
    def test_cai(self):
        with self.assertRaises(gridsync.GridsyncError) as cm:
            gridsync.cumsum(FakeCAI(stream=5))
        self.assertEqual(cm.exception.status_name, "GS_ERROR_NO_DRIVER")

    def test_dlpack_released(self):
        if not gridsync.scans_available():
            self.skipTest("the library under test has no gs_scan")
        before = len(_dlpack._exported)
        with self.assertRaises(gridsync.GridsyncError) as cm:
            gridsync.scan(FakeDLPack(), "max", exclusive=True)
        self.assertEqual(cm.exception.status_name, "GS_ERROR_NO_DRIVER")
        self.assertIn("gs_context_create", str(cm.exception))
        self.assertEqual(len(_dlpack._exported), before)


def _decode(opts):
    """(out_dtype, flags) of the options pointer a gs_scan call got (None: the defaults)."""
    if opts is None:
        return (_lib.GS_OUT_DEFAULT, 0)
    o = opts._obj
    assert o.struct_size == ctypes.sizeof(_lib.ScanOptions)
    return (o.out_dtype, o.flags)


def _exact_args(opts):
    """(carry_in, carry_in_count, total) of the options a gs_scan call got, 0 for NULL."""
    if opts is None:
        return (0, 0, 0)
    o = opts._obj
    return (o.carry_in or 0, o.carry_in_count, o.total or 0)


class RecordedScan(unittest.TestCase):
    """A fake framework, a context for device 0, gs_scan recorded in self.calls as (path, in,
    n, dtype, op, out, stream, (out_dtype, flags), (carry_in, carry_in_count, total)); path
    "fast" when the options are the fast path's own (NULL or its exclusive struct), else
    "general"."""

    def framework(self):
        raise NotImplementedError

    def setUp(self):
        self.calls = []

        def gs_scan(ctx, inp, n, dtype, op, out, stream, opts):
            fast = opts is None or opts is _scan._FAST_OPTS[True]
            self.calls.append(("fast" if fast else "general", inp, n, int(dtype), int(op), out, stream,
                               _decode(opts), _exact_args(opts)))
            return 0
        lib = _LibWith(_lib.load(), gs_scan=gs_scan)
        self.patches = [
            mock.patch.dict(_core._contexts, {0: _lib.ctx_p()}, clear=True),
            mock.patch.object(_scan, "_gs_scan", None),
            mock.patch.object(_lib, "load", lambda: lib),
        ] + self.framework()
        for p in self.patches:
            p.start()

    def tearDown(self):
        for p in reversed(self.patches):
            p.stop()


class TestScanTorch(RecordedScan):
    def framework(self):
        self.fake = FakeTorch()
        return [mock.patch.dict(sys.modules, {"torch": self.fake.torch}), mock.patch.object(_core, "_slabs", {})] + \
            [mock.patch.object(_core, name, None) for name in
             ("_torch_dtypes", "_torch_fast", "_torch_tensor", "_torch_raw_stream")]

    def test_same_call_both_paths(self):
        t = self.fake.torch
        x = t.Tensor((3, 5), t.float32)
        r1 = gridsync.scan(x, Op.SUM)         # an Op: the general path (it learns torch, binds gs_scan)
        r2 = gridsync.cumsum(x)               # a name: the fast path
        r3 = gridsync.scan(x, "sum", exclusive=True)
        r4 = gridsync.scan(x, Op.SUM, exclusive=True)
        self.assertEqual([c[0] for c in self.calls], ["general", "fast", "fast", "general"])
        for c in self.calls:
            self.assertEqual(c[1:5] + c[6:7], (x.ptr, 15, DType.FLOAT32, Op.SUM, 0))
        self.assertEqual([c[7] for c in self.calls], [(-1, 0), (-1, 0), (-1, 1), (-1, 1)])
        rs = (r1, r2, r3, r4)
        self.assertEqual([r.data_ptr() for r in rs], [c[5] for c in self.calls])
        self.assertEqual(len({c[5] for c in self.calls}), 4, "a fresh output each call")
        self.assertTrue(all(r.shape == (15,) and r.dtype is t.float32 for r in rs), "1-d, x flattened")

    def test_spellings(self):
        t = self.fake.torch
        x = t.Tensor((8,), t.int32)
        for f, op in ((gridsync.cumsum, Op.SUM), (gridsync.cumprod, Op.PROD), (gridsync.cummin, Op.MIN),
                      (gridsync.cummax, Op.MAX)):
            f(x)
            self.assertEqual(self.calls[-1][4], op, f.__name__)
            f(x, exclusive=True)
            self.assertEqual((self.calls[-1][4], self.calls[-1][7]), (op, (-1, 1)), f.__name__)
        gridsync.scan(x, "xor")
        self.assertEqual(self.calls[-1][4], Op.BIT_XOR)

    def test_out_dtype_and_out(self):
        t = self.fake.torch
        x = t.Tensor((100,), t.int32)
        r = gridsync.cumsum(x, out_dtype="int64")
        self.assertEqual((self.calls[-1][0], self.calls[-1][7], r.dtype), ("general", (DType.INT64, 0), t.int64))
        # in place: x is out, and the call says so by its pointers
        self.assertIs(gridsync.cumsum(x, out=x), x)
        self.assertEqual((self.calls[-1][1], self.calls[-1][5], self.calls[-1][7]), (x.ptr, x.ptr, (-1, 0)))
        # a wider out sets the output type by itself; any shape of n elements
        w = t.Tensor((10, 10), t.int64)
        self.assertIs(gridsync.cumsum(x, out=w, exclusive=True), w)
        self.assertEqual((self.calls[-1][5], self.calls[-1][7]), (w.ptr, (DType.INT64, 1)))
        self.assertIs(gridsync.cumsum(x, out=w, out_dtype=t.int64), w)
        n = len(self.calls)
        with self.assertRaisesRegex(TypeError, "out is int64 but out_dtype is int32"):
            gridsync.cumsum(x, out=w, out_dtype="int32")
        with self.assertRaisesRegex(ValueError, "out has 99 elements, the scan of x gives 100"):
            gridsync.cumsum(x, out=t.Tensor((99,), t.int32))
        with self.assertRaisesRegex(ValueError, "contiguous"):
            gridsync.cumsum(x, out=t.Tensor((10, 10), t.int32, contiguous=False))
        with self.assertRaisesRegex(TypeError, "copy it to the GPU"):
            gridsync.cumsum(x, out=t.Tensor((100,), t.int32, cuda=False))
        self.assertEqual(len(self.calls), n, "nothing launched for a refused out")

    def test_refused_by_both_paths(self):
        t = self.fake.torch
        gridsync.scan(t.Tensor((2,), t.int8), Op.SUM)  # learn torch, bind gs_scan
        for x, exc, text in ((t.Tensor((2, 2), t.float32, contiguous=False), ValueError, "contiguous"),
                             (t.Tensor((2,), t.float32, cuda=False), TypeError, "copy it to the GPU"),
                             (t.Tensor((2,), t.int16), TypeError, "int16")):
            for f in (gridsync.cumsum, lambda x: gridsync.scan(x, Op.MAX)):
                with self.assertRaisesRegex(exc, text):
                    f(x)
        with self.assertRaisesRegex(ValueError, "argmax has no scan"):
            gridsync.scan(t.Tensor((2,), t.int32), "argmax")
        self.assertEqual(len(self.calls), 1)

    def test_explicit_stream(self):
        t = self.fake.torch
        x = t.Tensor((7,), t.float16)
        self.fake.streams[0] = 0x5000
        with mock.patch.object(_cuda, "wait", lambda d, c, p: self.calls.append(("wait", d, c, p))):
            r = gridsync.cummax(x, stream=0x6000)
        # the kernel's stream waits for torch's current one; the result's memory is recorded
        # for it, as the caching allocator needs
        self.assertEqual(self.calls[0], ("wait", 0, 0x6000, 0x5000))
        self.assertEqual(self.calls[-1][6], 0x6000)
        self.assertEqual(r.recorded, [("stream", 0x6000)])

    def test_exact(self):
        t = self.fake.torch
        x = t.Tensor((4, 25), t.float32)
        X, XE = _lib.GS_SCAN_EXACT, _lib.GS_SCAN_EXACT | _lib.GS_SCAN_EXCLUSIVE
        gridsync.cumsum(x)  # learn torch, bind gs_scan: the exact calls below still take the general path
        r = gridsync.cumsum(x, exact=True)
        self.assertEqual(self.calls[-1][0], "general")
        self.assertEqual(self.calls[-1][7:], ((-1, X), (0, 0, 0)))
        self.assertEqual((r.shape, r.dtype, r.data_ptr()), ((100,), t.float32, self.calls[-1][5]))
        # carry_in: k accumulators, or one; (0, 76) is none
        c = t.Tensor((3, 76), t.int64)
        gridsync.scan(x, "sum", exact=True, exclusive=True, carry_in=c, out_dtype="float64")
        self.assertEqual(self.calls[-1][7:], ((DType.FLOAT64, XE), (c.ptr, 3, 0)))
        one = t.Tensor((76,), t.int64)
        gridsync.cumsum(x, exact=True, carry_in=one)
        self.assertEqual(self.calls[-1][8], (one.ptr, 1, 0))
        gridsync.cumsum(x, exact=True, carry_in=t.Tensor((0, 76), t.int64))
        self.assertEqual(self.calls[-1][8], (0, 0, 0))
        # total=True: a new int64 accumulator of x's framework, returned with the results
        r, acc = gridsync.cumsum(x, exact=True, carry_in=c, total=True)
        self.assertEqual((acc.shape, acc.dtype), ((76,), t.int64))
        self.assertEqual(self.calls[-1][8], (c.ptr, 3, acc.data_ptr()))
        self.assertEqual(r.data_ptr(), self.calls[-1][5])
        # total=<array>: written there, returned the same way
        mine = t.Tensor((76,), t.int64)
        r, acc = gridsync.scan(x, Op.SUM, exact=True, total=mine)
        self.assertIs(acc, mine)
        self.assertEqual(self.calls[-1][8], (0, 0, mine.ptr))
        # an empty x still asks for its total (the library writes the empty accumulator)
        r, acc = gridsync.cumsum(t.Tensor((0,), t.float64), exact=True, total=True)
        self.assertEqual((self.calls[-1][2], self.calls[-1][8][2]), (0, acc.data_ptr()))
        n = len(self.calls)
        for kw, exc, text in (
                ({"carry_in": t.Tensor((76,), t.int64, cuda=False)}, TypeError, "copy it to the GPU"),
                ({"carry_in": t.Tensor((2, 76), t.int64, contiguous=False)}, ValueError, "contiguous"),
                ({"carry_in": t.Tensor((76,), t.int64, ptr=0x7f0000000004)}, ValueError, "8-byte aligned"),
                ({"total": t.Tensor((76,), t.int64, ptr=0x7f0000000104)}, ValueError, "total must be 8-byte"),
                ({"total": t.Tensor((76,), t.int32)}, TypeError, "int64")):
            with self.assertRaisesRegex(exc, text):
                gridsync.cumsum(x, exact=True, **kw)
        self.assertEqual(len(self.calls), n, "nothing launched for refused accumulators")

    def test_dlpack_input_gives_device_buffer(self):
        x = FakeDLPack(shape=(4, 6), dtype=DType.BFLOAT16)
        with mock.patch.object(_cuda, "mem_alloc", lambda dev, nbytes: 0x7f00dead0000 + nbytes):
            r = gridsync.scan(x, "max", out_dtype="float32")
        try:
            self.assertIsInstance(r, gridsync.DeviceBuffer)
            self.assertEqual((r.shape, r.dtype, r.ptr), ((24,), DType.FLOAT32, 0x7f00dead0000 + 96))
            c = self.calls[-1]
            self.assertEqual(c[1:5] + c[5:8], (0x7f0000002000, 24, DType.BFLOAT16, Op.MAX, r.ptr, 0,
                                               (DType.FLOAT32, 0)))
            self.assertEqual(x.calls, [(1, {"max_version": (1, 0)})])
        finally:
            r.ptr = 0  # not memory of ours to free


class TestScanCupy(RecordedScan):
    def framework(self):
        self.fake = FakeCupy()
        return [mock.patch.dict(sys.modules, {"cupy": self.fake.cupy}), mock.patch.object(_core, "_cupy_slabs", {})] + \
            [mock.patch.object(_core, name, None) for name in ("_cupy_fast", "_cupy_ndarray")]

    def test_paths(self):
        c = self.fake.cupy
        x = c.ndarray((4, 6), c.dtype("uint8"))
        r0 = gridsync.scan(x, Op.MIN)
        r1 = gridsync.cummin(x)
        r2 = gridsync.cummin(x, exclusive=True)
        self.assertEqual([k[0] for k in self.calls], ["general", "fast", "fast"])
        for k in self.calls:
            self.assertEqual(k[1:5] + k[6:7], (x.data.ptr, 24, DType.UINT8, Op.MIN, 0))
        self.assertEqual([r.data.ptr for r in (r0, r1, r2)], [k[5] for k in self.calls])
        self.assertTrue(all(r.shape == (24,) and r.dtype == c.dtype("uint8") for r in (r0, r1, r2)))
        self.fake.current = 0x7000
        gridsync.cumsum(x)
        self.assertEqual(self.calls[-1][6], 0x7000)
        r = gridsync.cumsum(x, out_dtype="uint64")
        self.assertEqual((self.calls[-1][7], r.dtype), ((DType.UINT64, 0), c.dtype("uint64")))


if __name__ == "__main__":
    unittest.main()
