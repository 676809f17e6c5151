"""CPU tests of the Python package's torch and CuPy paths (no GPU, no driver): fake torch and
CuPy modules in sys.modules, gs_reduce recorded instead of made. The fast path and the
general path must make the same C call, and every 0-d result must get a slot of its own.
Split from test_cpu.py, which holds the rest of the CPU tests; run with it by
`meson test --suite python` (unittest discovers test_cpu*.py)."""
import sys
import unittest
from unittest import mock

import gridsync
from gridsync import _core, _cuda, _lib
from gridsync import DType, Op


class FakeTorch:
    """Just enough of torch for gridsync's torch paths, without a GPU: tensors are numbers
    with a pointer; the C call is recorded instead of made."""

    def __init__(self):
        import types
        torch = types.ModuleType("torch")
        names = [d.type_name for d in DType] + ["int16", "bool"]
        for n in names:
            setattr(torch, n, type("dtype", (), {"__repr__": lambda self, n=n: "torch." + n})())
        self.next_ptr = 0x7f0000100000
        self.streams = {0: 0}
        fake = self

        class Tensor:
            def __init__(self, shape, dtype, cuda=True, contiguous=True, ptr=None):
                self.shape, self.dtype, self.is_cuda, self._contig = tuple(shape), dtype, cuda, contiguous
                self.device = types.SimpleNamespace(type="cuda" if cuda else "cpu", index=0)
                self.ptr = ptr if ptr is not None else fake.alloc(8 * max(1, self.numel()))
                self.recorded = []

            def is_contiguous(self):
                return self._contig

            def get_device(self):
                return 0 if self.is_cuda else -1

            def data_ptr(self):
                return self.ptr

            def numel(self):
                n = 1
                for s in self.shape:
                    n *= s
                return n

            def unbind(self, dim):
                size = [d for d in DType if d.type_name == repr(self.dtype)[6:]][0].itemsize
                return tuple(Tensor((), self.dtype, ptr=self.ptr + i * size) for i in range(self.shape[0]))

            def record_stream(self, s):
                self.recorded.append(s)
        Tensor.__module__ = "torch"
        torch.Tensor = Tensor
        torch.empty = lambda shape, dtype, device: Tensor((shape,) if isinstance(shape, int) else shape, dtype)
        torch.device = lambda kind, index: (kind, index)
        torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda dev: fake.streams[dev])
        torch.cuda = types.SimpleNamespace(ExternalStream=lambda h, device=None: ("stream", h))
        self.torch = torch

    def alloc(self, n):
        p = self.next_ptr
        self.next_ptr += n
        return p


class RecordedCalls(unittest.TestCase):
    """A fake framework in sys.modules, a context for device 0, and gs_reduce recorded in
    self.calls instead of made: ("fast", args...) from reduce()'s fast path, ("general",
    args...) from the general path. Subclasses say which module and state to patch."""

    def framework(self):
        raise NotImplementedError

    def setUp(self):
        self.calls = []
        self.patches = [
            mock.patch.dict(_core._contexts, {0: _lib.ctx_p()}, clear=True),
            mock.patch.object(_core, "_gs_reduce", lambda *a: self.calls.append(("fast",) + a[1:]) or 0),
        ] + self.framework()
        lib = _lib.load()

        class Lib:  # the general path's lib: only gs_reduce recorded
            def __getattr__(_, name):
                return getattr(lib, name)

            def gs_reduce(_, *a):
                self.calls.append(("general",) + a[1:])
                return 0
        self.patches.append(mock.patch.object(_lib, "load", lambda: Lib()))
        for p in self.patches:
            p.start()

    def tearDown(self):
        for p in reversed(self.patches):
            p.stop()


class TestTorchPaths(RecordedCalls):
    """The torch fast path and the general path make the same C call, and every 0-d result
    gets a slot of its own (the slabs), checked with a fake torch and a recorded C call."""

    def framework(self):
        self.fake = FakeTorch()
        return [mock.patch.dict(sys.modules, {"torch": self.fake.torch}), mock.patch.object(_core, "_slabs", {})] + \
            [mock.patch.object(_core, name, None) for name in
             ("_torch_dtypes", "_torch_fast", "_torch_tensor", "_torch_raw_stream")]

    def test_same_call_both_paths(self):
        t = self.fake.torch
        x = t.Tensor((3, 5), t.float32)
        r1 = gridsync.reduce(x, Op.SUM)       # an Op, not a name: the general path (and it learns torch)
        r2 = gridsync.reduce(x, "sum")        # the fast path
        r3 = gridsync.reduce(x, "argmax")
        self.assertEqual([c[0] for c in self.calls], ["general", "fast", "fast"])
        g, f, a = self.calls
        # in, n, dtype, op, -, stream
        self.assertEqual((g[1], g[2], g[3], g[4], g[6]), (x.ptr, 15, DType.FLOAT32, Op.SUM, 0))
        self.assertEqual((f[1], f[2], f[3], f[4], f[6]), (x.ptr, 15, DType.FLOAT32, Op.SUM, 0))
        self.assertEqual((a[3], a[4]), (DType.FLOAT32, Op.ARGMAX))
        # distinct slots, each the pointer of the tensor returned, int64 for argmax
        self.assertEqual(len({g[5], f[5], a[5]}), 3)
        self.assertEqual((r1.data_ptr(), r2.data_ptr(), r3.data_ptr()), (g[5], f[5], a[5]))
        self.assertEqual(r3.dtype, t.int64)
        self.assertEqual(r2.dtype, t.float32)

    def test_slab_boundaries_and_streams(self):
        t = self.fake.torch
        x = t.Tensor((7,), t.int32)
        gridsync.reduce(x, Op.MAX)
        outs = [gridsync.reduce(x, "max") for _ in range(3 * _core.SLAB + 5)]
        ptrs = [c[5] for c in self.calls]
        self.assertEqual(len(set(ptrs)), len(ptrs), "a slot is never handed out twice")
        self.assertEqual([o.data_ptr() for o in outs], ptrs[1:])
        # Another current stream: other slabs, which record nothing (they are that stream's own).
        self.fake.streams[0] = 0x5000
        r = gridsync.reduce(x, "max")
        self.assertEqual(self.calls[-1][6], 0x5000)
        self.assertNotIn(r.data_ptr(), ptrs)
        # An explicit stream other than the current one: its slab is recorded for it.
        with mock.patch.object(_cuda, "wait", lambda d, c, p: self.calls.append(("wait", d, c, p))):
            gridsync.reduce(x, "max", stream=0x6000)
        self.assertEqual(self.calls[-2], ("wait", 0, 0x6000, 0x5000))
        self.assertEqual(self.calls[-1][6], 0x6000)
        slab_key = (0, int(DType.INT32), 0x6000)
        self.assertIn(slab_key, _core._slabs)

    def test_refused_by_both_paths(self):
        t = self.fake.torch
        gridsync.reduce(t.Tensor((2,), t.int8), Op.SUM)  # learn torch
        with self.assertRaisesRegex(ValueError, "contiguous"):
            gridsync.reduce(t.Tensor((2, 2), t.float32, contiguous=False))
        with self.assertRaisesRegex(TypeError, "copy it to the GPU"):
            gridsync.reduce(t.Tensor((2,), t.float32, cuda=False))
        with self.assertRaisesRegex(TypeError, "int16"):
            gridsync.reduce(t.Tensor((2,), t.int16))
        with self.assertRaisesRegex(ValueError, "unknown op"):
            gridsync.reduce(t.Tensor((2,), t.int32), "mean")
        self.assertEqual(len(self.calls), 1)


class FakeCupy:
    """Just enough of CuPy for gridsync's CuPy paths, without a GPU."""

    def __init__(self):
        import contextlib
        import types
        cupy = types.ModuleType("cupy")
        fake = self
        self.next_ptr = 0x7f0000800000
        self.current = 0
        self.allocs = []

        class DT:
            def __init__(self, name):
                self.name = name

            def __eq__(self, other):
                return isinstance(other, DT) and other.name == self.name

            def __hash__(self):
                return hash(self.name)

            def __str__(self):
                return self.name

        def dtype(name):
            if name == "bfloat16":
                raise TypeError("data type 'bfloat16' not understood")
            return DT(getattr(name, "name", name))

        class MemoryPointer:
            def __init__(self, ptr):
                self.ptr, self.device_id = ptr, 0

            def __add__(self, off):
                return MemoryPointer(self.ptr + off)

        class ndarray:
            def __init__(self, shape, dtype, memptr=None, contiguous=True):
                self.shape, self.dtype = tuple(shape), dtype
                self.size = 1
                for d in self.shape:
                    self.size *= d
                if memptr is None:
                    memptr = MemoryPointer(fake.next_ptr)
                    fake.allocs.append(self.size)
                    fake.next_ptr += 8 * max(1, self.size)
                self.data = memptr
                self.flags = types.SimpleNamespace(c_contiguous=contiguous)
                self.device = types.SimpleNamespace(id=0)
        ndarray.__module__ = "cupy"
        cupy.ndarray = ndarray
        cupy.dtype = dtype
        cupy.empty = lambda shape, dtype: ndarray((shape,) if isinstance(shape, int) else shape, dtype)
        cupy.cuda = types.SimpleNamespace(
            get_current_stream=lambda dev=None: types.SimpleNamespace(ptr=fake.current),
            Device=lambda dev: contextlib.nullcontext(),
            Stream=types.SimpleNamespace(from_external=lambda obj: contextlib.nullcontext()))
        self.cupy = cupy


class TestCupyPaths(RecordedCalls):
    """The CuPy fast path and the general path make the same C call; 0-d results are views
    of slabs, a slot never handed out twice (a fake CuPy and a recorded C call)."""

    def framework(self):
        self.fake = FakeCupy()
        return [mock.patch.dict(sys.modules, {"cupy": self.fake.cupy}), mock.patch.object(_core, "_cupy_slabs", {})] + \
            [mock.patch.object(_core, name, None) for name in ("_cupy_fast", "_cupy_ndarray")]

    def test_paths_and_slots(self):
        c = self.fake.cupy
        x = c.ndarray((4, 6), c.dtype("uint8"))
        r0 = gridsync.reduce(x, Op.ARGMAX)  # the general path, which learns CuPy
        rs = [gridsync.reduce(x, "argmax") for _ in range(2 * _core.SLAB + 3)]
        self.assertEqual([k[0] for k in self.calls], ["general"] + ["fast"] * len(rs))
        for k in self.calls:
            self.assertEqual((k[1], k[2], k[3], k[4], k[6]), (x.data.ptr, 24, DType.UINT8, Op.ARGMAX, 0))
        ptrs = [k[5] for k in self.calls]
        self.assertEqual(len(set(ptrs)), len(ptrs), "a slot is never handed out twice")
        self.assertEqual([r.data.ptr for r in [r0] + rs], ptrs)
        self.assertTrue(all(r.shape == () and r.dtype == c.dtype("int64") for r in rs))
        self.assertTrue(all(p % 8 == 0 for p in ptrs))
        # A new stream: a new slab.
        self.fake.current = 0x7000
        r = gridsync.reduce(x, "max")
        self.assertEqual((self.calls[-1][6], r.dtype), (0x7000, c.dtype("uint8")))
        self.assertNotIn(r.data.ptr, ptrs)

    def test_refused(self):
        c = self.fake.cupy
        gridsync.reduce(c.ndarray((2,), c.dtype("int32")), Op.SUM)
        with self.assertRaisesRegex(ValueError, "contiguous"):
            gridsync.reduce(c.ndarray((2, 2), c.dtype("float32"), contiguous=False))
        with self.assertRaisesRegex(TypeError, "int16"):
            gridsync.reduce(c.ndarray((2,), c.dtype("int16")))
        self.assertEqual(len(self.calls), 1)


if __name__ == "__main__":
    unittest.main()
