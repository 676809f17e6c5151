"""GPU tests of gridsync.exact_accumulator and gridsync.exact_round through PyTorch and CuPy:
for every float dtype, the accumulator of x rounded on the device gives the bits of
gridsync.reduce(x, exact=True) (and of out_dtype=float32/float64 for the wider outputs),
the host rounding of the same accumulator (numpy) gives them too, accumulators of random
shards (empty ones included) added as int64 round to the bits of the whole, and batches of
accumulators round in one call. Shared parts in gpu_common.py; test_gpu.py runs this file
with the others (meson test python-gpu). Run alone: exits 77 without a device or PyTorch;
the device rounding is skipped where the loaded library has no gs_exact_round_device.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gpu_common

import gridsync  # noqa: E402
from gridsync import DType, _exact, _lib  # noqa: E402
from gpu_common import Base, DLPackOnly, cupy, main, np, ok, torch  # noqa: E402

SIZES = [0, 1, 33, 1000, 65537, (1 << 20) + 3]
TORCH = {DType.FLOAT16: "float16", DType.BFLOAT16: "bfloat16", DType.FLOAT32: "float32", DType.FLOAT64: "float64"}
WIDER = {DType.FLOAT16: DType.FLOAT32, DType.BFLOAT16: DType.FLOAT32, DType.FLOAT32: DType.FLOAT64}


def device_rounding():
    return getattr(_lib.load(), _exact.SYMBOL, None) is not None


def bits_t(t):
    """The IEEE bits of a torch tensor's elements as a list of ints (any device)."""
    t = t.detach().cpu().reshape(-1)
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]).tolist()


def host_round(acc, d):
    """exact_round of a host copy of acc: gs_exact_round, the bits as a list of ints."""
    a = np.ascontiguousarray(acc.cpu().numpy() if hasattr(acc, "cpu") else cupy.asnumpy(acc))
    lib = _lib.load()
    out = []
    for row in a.reshape(-1, 76):
        res = np.zeros(1, np.uint64)
        assert lib.gs_exact_round(row.ctypes.data, d, res.ctypes.data) == 0
        out.append(int(res.view({2: np.int16, 4: np.int32, 8: np.int64}[d.itemsize])[0]))
    return out


def make(rng, d, n, kind):
    """float64 values on the host: ordinary, cancelling (wide range, shuffled), or specials."""
    if kind == "plain":
        a = rng.standard_normal(n) * (100.0 if d in (DType.FLOAT16, DType.BFLOAT16) else 1e6)
    else:
        lo, hi = {DType.FLOAT16: (-12, 12), DType.BFLOAT16: (-60, 60), DType.FLOAT32: (-60, 60),
                  DType.FLOAT64: (-300, 300)}[d]
        a = rng.standard_normal(n) * np.exp2(rng.uniform(lo, hi, n))
        a = np.concatenate([a, -a[: n // 3]])
        rng.shuffle(a)
        a = a[:n]
    return a


class Exact(Base):
    """Torch and CuPy in one: fw() makes an array of d on the device from float64 values."""

    fw_name = None

    def setUp(self):
        super().setUp()
        if not gridsync.exact_sums_available():
            self.skipTest("the library has no exact sums (GRIDSYNC_1.2)")

    def on_device(self, a, d):
        raise NotImplementedError

    def types(self):
        return [DType.FLOAT16, DType.BFLOAT16, DType.FLOAT32, DType.FLOAT64]

    def test_accumulator_rounds_to_exact_reduce(self):
        dev = device_rounding()
        for d in self.types():
            for n in SIZES:
                for kind in ("plain", "cancel"):
                    x = self.on_device(make(self.rng, d, n, kind), d)
                    what = "%s %s n=%d %s" % (self.fw_name, d.type_name, n, kind)
                    acc = gridsync.exact_accumulator(x)
                    self.assertIs(type(acc), type(x), what)
                    self.assertEqual(tuple(acc.shape), (76,), what)
                    self.assertEqual(str(acc.dtype).replace("torch.", ""), "int64", what)
                    want = self.bits(gridsync.reduce(x, exact=True))
                    self.assertEqual(host_round(acc, d), [want], what + ": host rounding vs reduce(exact=True)")
                    ok()
                    if dev:
                        r = gridsync.exact_round(acc, x.dtype)
                        self.assertEqual(tuple(r.shape), (), what)
                        self.assertEqual(self.bits(r), want, what + ": exact_round vs reduce(exact=True)")
                        ok()
                    if d in WIDER:
                        w = WIDER[d]
                        want_w = self.bits(gridsync.reduce(x, out_dtype=w.type_name, exact=True))
                        self.assertEqual(host_round(acc, w), [want_w], what + " -> " + w.type_name)
                        if dev:
                            self.assertEqual(self.bits(gridsync.exact_round(acc, w.type_name)), want_w, what)
                        ok()

    def test_shards_and_batches(self):
        if not device_rounding():
            self.skipTest("the library has no gs_exact_round_device")
        for d in self.types():
            n = 200000
            x = self.on_device(make(self.rng, d, n, "cancel"), d)
            whole = self.bits(gridsync.reduce(x, exact=True))
            for trial in range(4):
                cuts = sorted(self.rng.integers(0, n + 1, int(self.rng.integers(1, 12))).tolist())
                cuts = [0] + cuts + [cuts[-1]] + [n]  # an empty shard at least
                accs = [gridsync.exact_accumulator(x[a:b]) for a, b in zip(cuts, cuts[1:])]
                total = accs[0]
                for a in accs[1:]:
                    total = total + a        # the int64 sum an all_reduce makes
                what = "%s %s trial %d" % (self.fw_name, d.type_name, trial)
                self.assertEqual(self.bits(gridsync.exact_round(total, x.dtype)), whole, what)
                # every shard's in one batch: (k, 76) -> k results, each its shard's exact sum
                batch = self.stack(accs)
                r = gridsync.exact_round(batch, x.dtype)
                self.assertEqual(tuple(r.shape), (len(accs),), what)
                want = [self.bits(gridsync.reduce(x[a:b], exact=True)) for a, b in zip(cuts, cuts[1:])]
                self.assertEqual(self.bits_list(r), want, what + " batch")
                self.assertEqual(self.bits_list(r), host_round(batch, d), what + " batch vs host")
                ok(3)

    def test_streams_and_out(self):
        if not device_rounding():
            self.skipTest("the library has no gs_exact_round_device")
        d = DType.FLOAT32
        x = self.on_device(make(self.rng, d, 1 << 20, "cancel"), d)
        want = self.bits(gridsync.reduce(x, exact=True))
        s = self.new_stream()
        acc = gridsync.exact_accumulator(x, stream=s)
        out = self.empty((1,), d)
        self.assertIs(gridsync.exact_round(acc.reshape(1, 76), d, out=out, stream=s), out)
        self.sync(s)
        self.assertEqual(self.bits_list(out), [want])
        ok()


class TestExactTorch(Exact):
    fw_name = "torch"

    def on_device(self, a, d):
        return torch.tensor(a, dtype=torch.float64, device="cuda").to(getattr(torch, TORCH[d]))

    def bits(self, t):
        return bits_t(t)[0]

    def bits_list(self, t):
        return bits_t(t)

    def stack(self, accs):
        return torch.stack(accs)

    def new_stream(self):
        return torch.cuda.Stream()

    def sync(self, s):
        s.synchronize()

    def empty(self, shape, d):
        return torch.empty(shape, dtype=getattr(torch, TORCH[d]), device="cuda")

    def test_dlpack_input(self):
        x = self.on_device(make(self.rng, DType.FLOAT64, 5000, "cancel"), DType.FLOAT64)
        acc = gridsync.exact_accumulator(DLPackOnly(x))
        self.assertIsInstance(acc, gridsync.DeviceBuffer)
        self.assertEqual(host_round(torch.from_dlpack(acc), DType.FLOAT64),
                         [self.bits(gridsync.reduce(x, exact=True))])
        ok()


@unittest.skipIf(cupy is None, "CuPy is not installed")
class TestExactCupy(Exact):
    fw_name = "cupy"

    def types(self):
        try:
            cupy.dtype("bfloat16")
            return super().types()
        except TypeError:  # bfloat16 needs ml_dtypes
            return [DType.FLOAT16, DType.FLOAT32, DType.FLOAT64]

    def on_device(self, a, d):
        return cupy.asarray(a).astype(d.type_name)

    def bits(self, t):
        return self.bits_list(t)[0]

    def bits_list(self, t):
        h = cupy.asnumpy(t).reshape(-1)
        return h.view({2: np.int16, 4: np.int32, 8: np.int64}[h.dtype.itemsize]).tolist()

    def stack(self, accs):
        return cupy.stack(accs)

    def new_stream(self):
        return cupy.cuda.Stream(non_blocking=True)

    def sync(self, s):
        s.synchronize()

    def empty(self, shape, d):
        return cupy.empty(shape, dtype=d.type_name)


if __name__ == "__main__":
    sys.exit(main([TestExactTorch, TestExactCupy]))
