"""GPU tests of the gridsync Python package through PyTorch: every dtype x op against a host
reference and torch's own result, 0-d result slots, out_dtype, errors, NaN, bfloat16, current
and explicit streams, DLPack and __cuda_array_interface__ inputs, segmented reductions, exact
sums bit for bit, threads. Shared parts in gpu_common.py; test_gpu.py runs this file with
test_gpu_cupy.py (meson test python-gpu). Run alone: exits 77 without a device or PyTorch.
"""

import math
import os
import struct
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gpu_common

import gridsync  # noqa: E402
from gridsync import DType  # noqa: E402
from gpu_common import ACC_EPS, EPS, Base, CAIOnly, DLPackOnly, main, np, ok, torch, value  # noqa: E402


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


if __name__ == "__main__":
    sys.exit(main([TestTorch]))
