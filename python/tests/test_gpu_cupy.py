"""GPU tests of the gridsync Python package through CuPy: every dtype x op against a host
reference and CuPy's own result, current and explicit streams, __cuda_array_interface__'s
stream, 0-d result slots, DLPack. Skipped where CuPy is missing; needs PyTorch too (its sleep
kernel delays the producer stream). Shared parts in gpu_common.py; test_gpu.py runs this file
with test_gpu_torch.py (meson test python-gpu). Run alone: exits 77 without a device or PyTorch.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gpu_common

import gridsync  # noqa: E402
from gpu_common import Base, CAIOnly, DLPackOnly, cupy, main, ok, torch  # noqa: E402


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


if __name__ == "__main__":
    sys.exit(main([TestCupy]))
