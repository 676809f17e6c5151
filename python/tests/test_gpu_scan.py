"""GPU tests of gridsync.scan / cumsum / cumprod / cummin / cummax through PyTorch and CuPy:
every dtype x op, inclusive and exclusive, against numpy's cumulative ops on the host
(integers exact, wrapped to the output's width; MIN/MAX exact, NaN propagated; float SUM and
PROD within the rigorous bound of any order), wider outputs, out= and in place, streams,
alignment, DLPack and __cuda_array_interface__ inputs, and two calls giving the same bits.
Shared parts in gpu_common.py; test_gpu.py runs this file with the others (meson test
python-gpu). Run alone: exits 77 without a device or PyTorch; skips where the loaded library
has no gs_scan.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gpu_common

import gridsync  # noqa: E402
from gridsync import DType, Op  # noqa: E402
from gpu_common import (ACC_EPS, EPS, FLOAT_TYPES, INT_TYPES, Base, CAIOnly, DLPackOnly,  # noqa: E402
                        cupy, host_values, identity, main, make_host, np, ok, to_torch, torch, wrap)

SIZES = [0, 1, 33, 1000, 65537, (1 << 20) + 3]
SCAN_OPS = [Op.SUM, Op.PROD, Op.MIN, Op.MAX]
BIT_OPS = [Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR]
NAMES = {Op.SUM: "sum", Op.PROD: "prod", Op.MIN: "min", Op.MAX: "max", Op.BIT_AND: "and", Op.BIT_OR: "or",
         Op.BIT_XOR: "xor"}
# gs_reduce_ex's wider outputs, which gs_scan offers too
WIDER = {(DType.INT8, Op.SUM): DType.INT64, (DType.INT32, Op.PROD): DType.INT64, (DType.UINT8, Op.SUM): DType.UINT64,
         (DType.UINT32, Op.SUM): DType.UINT64, (DType.FLOAT32, Op.SUM): DType.FLOAT64,
         (DType.FLOAT32, Op.PROD): DType.FLOAT64, (DType.FLOAT16, Op.SUM): DType.FLOAT32,
         (DType.BFLOAT16, Op.MAX): DType.FLOAT32, (DType.FLOAT16, Op.MIN): DType.FLOAT32}


def have_scan():
    try:
        return gridsync.scans_available()
    except gridsync.GridsyncError:
        return False


def reference(a, d, op, out, exclusive):
    """(values, tolerances): numpy's cumulative op over the host values `a` of dtype d into
    results of type out; tolerances None where the result is exact."""
    n = a.size
    if not d.is_float:
        # In uint64 (signed types sign-extended), where numpy wraps mod 2^64 and the bitwise
        # ops see the same low bits; then wrapped to the output's width.
        u = a.astype(np.int64).view(np.uint64) if d.name.startswith("INT") else a.astype(np.uint64)
        if op in (Op.MIN, Op.MAX):
            r = (np.minimum if op == Op.MIN else np.maximum).accumulate(a).tolist() if n else []
        else:
            f = {Op.SUM: np.add, Op.PROD: np.multiply, Op.BIT_AND: np.bitwise_and, Op.BIT_OR: np.bitwise_or,
                 Op.BIT_XOR: np.bitwise_xor}[op]
            r = [wrap(int(v), out) for v in f.accumulate(u, dtype=np.uint64)] if n else []
        tol = None
    else:
        f = a.astype(np.float64)
        if op in (Op.MIN, Op.MAX):  # np.minimum/maximum propagate NaN, as gridsync does
            r = (np.minimum if op == Op.MIN else np.maximum).accumulate(f).tolist() if n else []
            tol = None
        else:
            acc = ACC_EPS[d] if out != DType.FLOAT64 else EPS[DType.FLOAT64]
            k = np.arange(1, n + 1, dtype=np.float64)
            if op == Op.SUM:
                ref = np.cumsum(f)
                # the rigorous bound of any order for the i+1 elements, the final rounding,
                # and numpy's own float64 rounding of its sequential sum
                scale = np.cumsum(np.abs(f))
                tol = k * acc * scale + EPS[out] * np.abs(ref) + k * EPS[DType.FLOAT64] * scale
            else:
                ref = np.cumprod(f)
                tol = ((k + 1) * acc + EPS[out]) * np.abs(ref) + k * EPS[DType.FLOAT64] * np.abs(ref)
            r = ref.tolist()
            tol = tol.tolist()
    if exclusive and n:
        r = [identity(out, op)] + r[:-1]
        tol = None if tol is None else [0.0] + tol[:-1]
    return r, tol


def values(r):
    """A 1-d result's values as Python numbers (waits for its stream)."""
    if isinstance(r, gridsync.DeviceBuffer):
        return r.tolist()
    if isinstance(r, torch.Tensor):
        r = r.cpu()
        if r.dtype == torch.bfloat16:
            r = r.float()
        try:
            return r.numpy().tolist()
        except TypeError:  # uint32/uint64 without numpy(): the same bits, read unsigned
            signed = {4: (torch.int32, np.uint32), 8: (torch.int64, np.uint64)}[r.element_size()]
            return r.view(signed[0]).numpy().view(signed[1]).tolist()
    return cupy.asnumpy(r).tolist()


def raw_bits(r):
    """The result's bytes (NaNs compared by their bits: two calls must agree on them too)."""
    if isinstance(r, torch.Tensor):
        return r.contiguous().view(torch.uint8).cpu().numpy().tobytes()
    return cupy.asnumpy(r).tobytes()


class ScanBase(Base):
    def setUp(self):
        super().setUp()
        if not have_scan():
            self.skipTest("the loaded libgridsync has no gs_scan")

    def assert_scan(self, got, want, tol, what):
        self.assertEqual(len(got), len(want), what)
        if tol is None and got == want:  # exact and no NaN: one comparison of the lists
            ok()
            return
        if tol is None:
            for i, (g, w) in enumerate(zip(got, want)):
                if g != w and not (g != g and w != w):  # two NaNs are equal here
                    self.fail("%s: out[%d] = %r, want %r" % (what, i, g, w))
        else:
            g, w, t = (np.asarray(v, dtype=np.float64) for v in (got, want, tol))
            good = (g == w) | (np.abs(g - w) <= t) | (np.isnan(g) & np.isnan(w))
            if not good.all():
                i = int(np.argmin(good))
                self.fail("%s: out[%d] = %r, want %r within %g (%d wrong)" % (what, i, got[i], want[i], tol[i],
                                                                             int((~good).sum())))
        ok()

    def wrap_array(self, fw, a, d):
        if fw == "torch":
            return to_torch(a, d)
        return None if d == DType.BFLOAT16 else cupy.asarray(a)

    def scan_sweep(self, fw):
        for d in INT_TYPES + FLOAT_TYPES:
            for op in SCAN_OPS + ([] if d.is_float else BIT_OPS):
                for n in SIZES:
                    x = self.wrap_array(fw, make_host(d, op, n, self.rng), d)
                    if x is None:
                        continue
                    hv = host_values(x, d)
                    for exclusive in (False, True) if n in (0, 33, 65537) else (n % 2 == 1,):
                        what = "%s %s %s%s n=%d" % (fw, d.type_name, "exclusive " if exclusive else "", op.name, n)
                        # by name (the fast path after the first call) and by Op (the general one)
                        r = gridsync.scan(x, NAMES[op] if n % 2 else op, exclusive=exclusive)
                        self.assertIs(type(r), type(x), what)
                        self.assertEqual(tuple(r.shape), (n,), what)
                        self.assertEqual(str(r.dtype).replace("torch.", ""), d.type_name, what)
                        want, tol = reference(hv, d, op, d, exclusive)
                        self.assert_scan(values(r), want, tol, what)
                        self.assertEqual(raw_bits(gridsync.scan(x, op, exclusive=exclusive)), raw_bits(r),
                                         what + ": a second call gave other bits")
                        ok()


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TestScanTorch(ScanBase):
    def test_every_dtype_and_op(self):
        self.scan_sweep("torch")

    def test_wider_outputs(self):
        for (d, op), out in WIDER.items():
            for exclusive in (False, True):
                x = to_torch(make_host(d, op, 100003, self.rng), d)
                if x is None:
                    continue
                what = "%s %s -> %s%s" % (d.type_name, op.name, out.type_name, " exclusive" if exclusive else "")
                r = gridsync.scan(x, op, out_dtype=out.type_name, exclusive=exclusive)
                self.assertEqual(str(r.dtype), "torch." + out.type_name, what)
                want, tol = reference(host_values(x, d), d, op, out, exclusive)
                self.assert_scan(values(r), want, tol, what)
                # a preallocated out of that type says the same by itself
                o = torch.empty(x.numel(), dtype=getattr(torch, out.type_name), device="cuda")
                self.assertIs(gridsync.scan(x, op, out=o, exclusive=exclusive), o)
                self.assertEqual(raw_bits(o), raw_bits(r), what + " into out=")
                ok()

    def test_torch_spelling_of_int_cumsum(self):
        # torch.cumsum widens int32 to int64; gridsync keeps int32 unless asked (documented)
        x = torch.randint(-(1 << 30), 1 << 30, (300001,), dtype=torch.int32, device="cuda")
        self.assertEqual(gridsync.cumsum(x).dtype, torch.int32)
        self.assertTrue(torch.equal(gridsync.cumsum(x, out_dtype=torch.int64), torch.cumsum(x, 0)))
        self.assertTrue(torch.equal(gridsync.cumsum(x), torch.cumsum(x, 0).to(torch.int32)))  # wrapped alike
        ok(3)

    def test_in_place_and_out(self):
        for d, op in ((torch.float32, "sum"), (torch.float16, "max"), (torch.int8, "prod"), (torch.float64, "min")):
            x = (torch.randn(1 << 20, device="cuda") * 3).to(d)
            ref = gridsync.scan(x, op)
            y = x.clone()
            self.assertIs(gridsync.scan(y, op, out=y), y)        # in place: the same bits
            self.assertEqual(raw_bits(y), raw_bits(ref), "in place %s %s" % (d, op))
            o = torch.empty((1024, 1024), dtype=d, device="cuda")  # any shape of n elements
            self.assertIs(gridsync.scan(x, op, out=o), o)
            self.assertEqual(raw_bits(o), raw_bits(ref))
            ok(2)
        x = torch.ones(1000, dtype=torch.int32, device="cuda")
        with self.assertRaisesRegex(ValueError, "out has 999 elements"):
            gridsync.cumsum(x, out=x[1:])
        with self.assertRaisesRegex(TypeError, "out is int32 but out_dtype is int64"):
            gridsync.cumsum(x, out=x, out_dtype="int64")
        buf = torch.ones(1001, dtype=torch.int32, device="cuda")
        with self.assertRaises(gridsync.GridsyncError) as cm:   # overlapping, not in place
            gridsync.cumsum(buf[:1000], out=buf[1:])
        self.assertEqual((cm.exception.status_name, cm.exception.function), ("GS_ERROR_INVALID_ARGUMENT", "gs_scan"))
        ok(3)

    def test_alignment_and_shape(self):
        # the order depends on n alone: an input at an odd address, or of another shape,
        # gives the same bits
        base = torch.randn((1 << 20) + 8, device="cuda")
        for k in (1, 3):
            x = base[k:k + (1 << 20)]
            self.assertEqual(raw_bits(gridsync.cumsum(x)), raw_bits(gridsync.cumsum(x.clone())), "offset %d" % k)
            ok()
        m = base[:1 << 20].reshape(1024, 1024)
        self.assertEqual(raw_bits(gridsync.cumsum(m)), raw_bits(gridsync.cumsum(base[:1 << 20].clone())))
        self.assertEqual(tuple(gridsync.cumsum(m).shape), (1 << 20,))
        ok(2)

    def test_nan(self):
        for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            x = torch.rand(100003, device="cuda").to(d)
            x[777] = float("nan")
            for f in (gridsync.cummin, gridsync.cummax):
                v = values(f(x))
                self.assertFalse(any(a != a for a in v[:777]), "%s %s before the NaN" % (d, f.__name__))
                self.assertTrue(all(a != a for a in v[777:]), "%s %s from the NaN on" % (d, f.__name__))
                ok()

    def test_errors(self):
        x = torch.ones(10, device="cuda")
        with self.assertRaisesRegex(ValueError, "argmax has no scan"):
            gridsync.scan(x, "argmax")
        with self.assertRaises(gridsync.GridsyncError) as cm:
            gridsync.scan(x, "xor")
        self.assertEqual((cm.exception.status_name, cm.exception.function), ("GS_ERROR_UNSUPPORTED", "gs_scan"))
        with self.assertRaisesRegex(ValueError, "contiguous"):
            gridsync.cumsum(torch.ones(10, 2, device="cuda").t())
        ok(3)

    def test_streams(self):
        from test_gpu_torch import late_fill
        s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
        x = late_fill(torch.zeros(1 << 22, dtype=torch.int32, device="cuda"), 2, s1)
        with torch.cuda.stream(s1):
            r = gridsync.cumsum(x)                  # on s1, torch's current stream
            r2 = gridsync.cumsum(x, stream=s2)      # s2 waits for s1
        s1.synchronize()
        s2.synchronize()
        want = torch.arange(1, (1 << 22) + 1, dtype=torch.int32, device="cuda") * 2
        self.assertTrue(torch.equal(r, want))
        self.assertTrue(torch.equal(r2, want))
        ok(2)

    def test_dlpack_and_cai_inputs(self):
        x = torch.randint(-100, 100, (65537,), dtype=torch.int64, device="cuda")
        want = torch.cumsum(x, 0).cpu().tolist()
        for w in (DLPackOnly(x), CAIOnly(x)):
            r = gridsync.cumsum(w)
            self.assertIsInstance(r, gridsync.DeviceBuffer)
            self.assertEqual(r.shape, (65537,))
            self.assertEqual(r.tolist(), want)
            self.assertEqual(torch.from_dlpack(r).cpu().tolist(), want)
            ok(2)
        y = x.clone()
        self.assertIsInstance(gridsync.cumsum(DLPackOnly(x), out=CAIOnly(y)), CAIOnly)
        torch.cuda.synchronize()
        self.assertEqual(y.cpu().tolist(), want)
        ok()


@unittest.skipIf(cupy is None, "CuPy is not installed")
class TestScanCupy(ScanBase):
    def test_every_dtype_and_op(self):
        self.scan_sweep("cupy")

    def test_against_cupy(self):
        x = cupy.random.standard_normal(1 << 20).astype(cupy.float32)
        r = gridsync.cumsum(x, out_dtype="float64")
        self.assertIsInstance(r, cupy.ndarray)
        self.assertTrue(bool(cupy.allclose(r, cupy.cumsum(x.astype(cupy.float64)), rtol=0, atol=1e-9)))
        i = cupy.random.randint(0, 100, 1 << 20, dtype=cupy.int32)
        # cupy has no maximum.accumulate on the device: numpy's, on the host copy
        self.assertEqual(cupy.asnumpy(gridsync.cummax(i)).tolist(), np.maximum.accumulate(cupy.asnumpy(i)).tolist())
        y = i.copy()
        self.assertIs(gridsync.cumsum(y, out=y), y)
        self.assertTrue(bool((y == cupy.cumsum(i).astype(cupy.int32)).all()))
        ok(3)


if __name__ == "__main__":
    sys.exit(main([TestScanTorch, TestScanCupy]))
