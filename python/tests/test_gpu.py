"""GPU tests of the gridsync Python package (meson test python-gpu, also in the gpu-full suite):
every dtype x op through PyTorch and CuPy against a host reference and the framework's own
result, streams, DLPack and __cuda_array_interface__ inputs, DeviceBuffer, bfloat16,
segmented reductions, exact sums, scans, exact accumulators. The tests are in test_gpu_torch.py,
test_gpu_cupy.py, test_gpu_scan.py and test_gpu_exact.py, their shared parts in gpu_common.py;
this runs them all, with one summary (test_gpu_multi.py, two GPUs, runs on its own).

Exits 77 (skipped) when there is no CUDA driver or device, or no PyTorch with CUDA; CuPy's
parts are skipped where CuPy is missing. Fresh random data each run (the seed is printed;
GRIDSYNC_TEST_SEED repeats one). Prints 'python-gpu: N checks, M tests, ...' at the end.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gpu_common and the test files

from gpu_common import main  # noqa: E402
from test_gpu_cupy import TestCupy  # noqa: E402
from test_gpu_exact import TestExactCupy, TestExactTorch  # noqa: E402
from test_gpu_scan import TestScanCupy, TestScanTorch  # noqa: E402
from test_gpu_torch import TestTorch  # noqa: E402

if __name__ == "__main__":
    sys.exit(main([TestTorch, TestCupy, TestScanTorch, TestScanCupy, TestExactTorch, TestExactCupy]))
