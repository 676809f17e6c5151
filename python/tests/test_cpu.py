"""CPU tests of the gridsync Python package: they run everywhere (CI has no GPU and no
driver). Run: GRIDSYNC_LIBRARY=<build>/core/libgridsync.so.1 PYTHONPATH=python \
    python3 -m unittest discover -s python/tests -p 'test_cpu*.py'
The library itself is needed (it is what the no-driver test talks to)."""

import contextlib
import ctypes
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import gridsync
from gridsync import _core, _cuda, _dlpack, _lib, _types
from gridsync import DType, Op

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))  # the repository root, when run from a checkout
HEADER = os.path.join(SRC, "api", "gridsync.h")


def have_driver():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


class FakeCAI:
    """An object that only exports __cuda_array_interface__."""

    def __init__(self, **kw):
        self.__cuda_array_interface__ = dict(
            {"shape": (4,), "typestr": "<f4", "data": (0x7f0000001000, False), "version": 3,
             "strides": None, "stream": None}, **kw)


class FakeDLPack:
    """An object that only exports DLPack, through the package's own export (so the capsule
    is a real DLManagedTensor with a deleter we can watch)."""

    def __init__(self, shape=(2, 3), dtype=DType.INT32, strides=None, device=(2, 0), old=False):
        self.shape, self.dtype, self.strides, self.device, self.old = shape, dtype, strides, device, old
        self.calls = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None, **kw):
        if self.old and kw:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        self.calls.append((stream, kw))
        return _dlpack.export(self, 0x7f0000002000, self.shape, self.dtype, self.device[1], strides=self.strides,
                              device_type=self.device[0])


class TestImport(unittest.TestCase):
    def test_public_names(self):
        for name in gridsync.__all__:
            self.assertTrue(hasattr(gridsync, name), name)

    def test_version_matches_meson(self):
        path = os.path.join(SRC, "meson.build")
        if not os.path.exists(path):
            self.skipTest("not in a source tree")
        with open(path) as f:
            v = re.search(r"version:\s*'([0-9.]+)'", f.read()).group(1)
        self.assertEqual(gridsync.__version__, v)

    def test_library_loaded(self):
        self.assertRegex(gridsync.library_version(), r"^\d+\.\d+\.\d+$")
        self.assertTrue(gridsync.library_path())

    def test_library_not_found(self):
        env = dict(os.environ, GRIDSYNC_LIBRARY="/nonexistent/libgridsync.so.1", PYTHONPATH=os.pathsep.join(sys.path))
        p = subprocess.run([sys.executable, "-c", "import gridsync\n"
                            "try:\n gridsync.library_version()\n"
                            "except gridsync.LibraryNotFoundError as e:\n print('ERR', e.status, e)\n"],
                           env=env, capture_output=True, text=True)
        self.assertIn("ERR None", p.stdout, p.stderr)
        self.assertIn("GRIDSYNC_LIBRARY=/nonexistent/libgridsync.so.1", p.stdout)


class TestEnumsMatchHeader(unittest.TestCase):
    """The enum values are copied from api/gridsync.h; they must stay equal to it."""

    def setUp(self):
        if not os.path.exists(HEADER):
            self.skipTest("api/gridsync.h not found (not run from a source tree)")
        with open(HEADER) as f:
            self.h = f.read()

    def values(self, prefix):
        return {m.group(1): int(m.group(2)) for m in re.finditer(r"\b(%s\w+)\s*=\s*(\d+)" % prefix, self.h)}

    def test_dtypes(self):
        h = self.values("GS_(?=INT|UINT|FLOAT|BFLOAT)")
        self.assertEqual(h, {"GS_" + d.name: d.value for d in DType})

    def test_ops(self):
        self.assertEqual(self.values("GS_OP_"), {"GS_OP_" + o.name: o.value for o in Op})

    def test_status(self):
        h = self.values("GS_(?=SUCCESS|ERROR_)")
        self.assertEqual(h, {"GS_" + s.name: s.value for s in gridsync.Status})

    def test_constants(self):
        self.assertIn("#define GS_OUT_DEFAULT (-1)", self.h)
        self.assertEqual(_lib.GS_OUT_DEFAULT, -1)
        self.assertIn("#define GS_SEGMENTED_CHECK_OFFSETS 1u", self.h)
        self.assertEqual(_lib.GS_SEGMENTED_CHECK_OFFSETS, 1)

    def test_struct_layouts(self):
        # gs_context_info: uint32 + 4 x int32 + 4 pointers; gs_reduce_options: 2 x 32 bits.
        self.assertEqual(ctypes.sizeof(_lib.ContextInfo), 24 + 4 * ctypes.sizeof(ctypes.c_void_p))
        self.assertEqual(ctypes.sizeof(_lib.ReduceOptions), 12)
        self.assertEqual(_lib.ReduceOptions.flags.offset, 8)

    def test_exact_constants(self):
        if "GS_REDUCE_EXACT" not in self.h:
            self.skipTest("this header has no exact sums yet")
        self.assertIn("#define GS_REDUCE_EXACT 1u", self.h)
        self.assertEqual(_lib.GS_REDUCE_EXACT, 1)
        self.assertRegex(self.h, r"gs_status %s\(" % _lib.EXACT_SYMBOL)
        self.assertRegex(self.h, r"int32_t out_dtype;\n(\s*/\*.*\*/\n)*\s*uint32_t flags;")
        self.assertIn("#define GS_SEGMENTED_EXACT 2u", self.h)
        self.assertEqual(_lib.GS_SEGMENTED_EXACT, 2)


class TestDTypes(unittest.TestCase):
    def test_names(self):
        for d in DType:
            self.assertIs(_types.dtype_from(d.type_name), d)
            self.assertIs(_types.dtype_from(d), d)
            self.assertIs(_types.dtype_from(int(d)), d)
        self.assertIs(_types.dtype_from("bf16"), DType.BFLOAT16)
        self.assertIs(_types.dtype_from("F64"), DType.FLOAT64)

    def test_framework_dtype_objects(self):
        class TorchLike:  # str(torch.bfloat16) == 'torch.bfloat16'
            def __str__(self):
                return "torch.bfloat16"

        class NumpyDtypeLike:
            name = "uint32"

        class ScalarTypeLike:  # numpy.float16, ml_dtypes.bfloat16
            pass
        ScalarTypeLike.__name__ = "float16"
        self.assertIs(_types.dtype_from(TorchLike()), DType.BFLOAT16)
        self.assertIs(_types.dtype_from(NumpyDtypeLike()), DType.UINT32)
        self.assertIs(_types.dtype_from(ScalarTypeLike), DType.FLOAT16)

    def test_bad_dtypes(self):
        for bad in ("int16", "complex64", "bool", 10, -1):
            with self.assertRaises((TypeError, ValueError)):
                _types.dtype_from(bad)
        with self.assertRaisesRegex(TypeError, "int16"):
            _types.dtype_from("int16")

    def test_itemsize(self):
        self.assertEqual([d.itemsize for d in DType], [4, 4, 8, 8, 4, 8, 2, 2, 1, 1])
        self.assertEqual([d for d in DType if d.is_float], [DType.FLOAT32, DType.FLOAT64, DType.FLOAT16,
                                                           DType.BFLOAT16])

    def test_dlpack_codes(self):
        self.assertIs(_types.dtype_from_dlpack(4, 16, 1), DType.BFLOAT16)
        self.assertIs(_types.dtype_from_dlpack(2, 16, 1), DType.FLOAT16)
        self.assertIs(_types.dtype_from_dlpack(1, 64, 1), DType.UINT64)
        for d in DType:
            self.assertIs(_types.dtype_from_dlpack(*_types.DLPACK_CODE[d], 1), d)
        with self.assertRaisesRegex(TypeError, "bool8.*uint8"):
            _types.dtype_from_dlpack(6, 8, 1)
        with self.assertRaisesRegex(TypeError, "lanes"):
            _types.dtype_from_dlpack(2, 32, 4)
        with self.assertRaisesRegex(TypeError, "int16"):
            _types.dtype_from_dlpack(0, 16, 1)

    def test_typestr(self):
        table = {"|i1": DType.INT8, "|u1": DType.UINT8, "<i4": DType.INT32, "<u4": DType.UINT32, "<i8": DType.INT64,
                 "<u8": DType.UINT64, "<f2": DType.FLOAT16, "<f4": DType.FLOAT32, "<f8": DType.FLOAT64,
                 "=f4": DType.FLOAT32}
        for s, d in table.items():
            self.assertIs(_types.dtype_from_typestr(s), d, s)
        for d in DType:
            if d != DType.BFLOAT16:
                self.assertIs(_types.dtype_from_typestr(_types.TYPESTR[d]), d)
        with self.assertRaisesRegex(TypeError, "big-endian"):
            _types.dtype_from_typestr(">f4")
        with self.assertRaisesRegex(TypeError, "DLPack"):
            _types.dtype_from_typestr("<V2")
        for bad in ("|b1", "<c8", "<i2", "x", "<fz", 4):
            with self.assertRaises(TypeError):
                _types.dtype_from_typestr(bad)

    def test_typestr_bfloat16_by_array_dtype(self):
        class Arr:
            class dtype:
                name = "bfloat16"
        self.assertIs(_types.dtype_from_typestr("<V2", Arr()), DType.BFLOAT16)

    def test_default_out(self):
        self.assertIs(_types.default_out(DType.INT8, Op.SUM), DType.INT8)
        self.assertIs(_types.default_out(DType.FLOAT16, Op.ARGMAX), DType.INT64)
        self.assertIs(_types.default_out(DType.UINT8, Op.ARGMIN), DType.INT64)


class TestOps(unittest.TestCase):
    def test_names(self):
        self.assertIs(_types.op_from("sum"), Op.SUM)
        self.assertIs(_types.op_from("ARGMAX"), Op.ARGMAX)
        self.assertIs(_types.op_from("xor"), Op.BIT_XOR)
        self.assertIs(_types.op_from("bitwise_and"), Op.BIT_AND)
        self.assertIs(_types.op_from(Op.PROD), Op.PROD)
        self.assertIs(_types.op_from(3), Op.MAX)

    def test_bad(self):
        with self.assertRaisesRegex(ValueError, "unknown op 'mean'"):
            _types.op_from("mean")
        for bad in (9, -1, True, None, 1.0):
            with self.assertRaises((TypeError, ValueError)):
                _types.op_from(bad)


class TestArgumentErrors(unittest.TestCase):
    """Refused before anything reaches the driver, with a message that says what to do."""

    def test_host_objects(self):
        for x in ([1.0, 2.0], (1, 2), 3.0, b"abc"):
            with self.assertRaises(TypeError) as cm:
                gridsync.reduce(x)
            self.assertTrue("host" in str(cm.exception) or "not an array" in str(cm.exception), cm.exception)

    def test_numpy_like_host_array(self):
        class HostArray:
            __array_interface__ = {"shape": (3,), "typestr": "<f4", "data": (0, False), "version": 3}
        with self.assertRaisesRegex(TypeError, "copy it to the GPU"):
            gridsync.reduce(HostArray())

    def test_cpu_dlpack(self):
        x = FakeDLPack(device=(_dlpack.KDL_CPU, 0))
        with self.assertRaisesRegex(TypeError, "CPU device.*copy it to the GPU"):
            gridsync.reduce(x)
        self.assertEqual(x.calls, [], "a CPU tensor must not be exported")

    def test_bad_op_and_dtype(self):
        x = FakeCAI()
        with self.assertRaises(ValueError):
            gridsync.reduce(x, "mean")
        with self.assertRaises(TypeError):
            gridsync.reduce(x, out_dtype="complex64")
        with self.assertRaises(TypeError):
            gridsync.segmented_reduce(x, x, None)

    def test_bad_stream(self):
        for bad in ("s", 1.5, object(), -3):
            with self.assertRaises((TypeError, ValueError)):
                gridsync.reduce(FakeCAI(), stream=bad)

    def test_stream_handles(self):
        class TorchStream:
            cuda_stream = 0x1234

        class CupyStream:
            ptr = 0x5678

        class CoreStream:
            def __cuda_stream__(self):
                return (0, 0x9abc)

        class NumbaStream:
            def __int__(self):
                return 0xdef0
        self.assertEqual(_core.stream_handle(TorchStream()), 0x1234)
        self.assertEqual(_core.stream_handle(CupyStream()), 0x5678)
        self.assertEqual(_core.stream_handle(CoreStream()), 0x9abc)
        self.assertEqual(_core.stream_handle(NumbaStream()), 0xdef0)
        self.assertEqual(_core.stream_handle(2), 2)      # per-thread default
        self.assertEqual(_core.stream_handle(1), 0)      # CU_STREAM_LEGACY is NULL
        self.assertEqual(_core.stream_handle(0), 0)


class TestContiguity(unittest.TestCase):
    def test_rules(self):
        c = _core._contiguous
        self.assertTrue(c((2, 3), None, 4))
        self.assertTrue(c((2, 3), (12, 4), 4))
        self.assertFalse(c((2, 3), (4, 8), 4))           # Fortran order
        self.assertFalse(c((4,), (8,), 4))               # every other element
        self.assertTrue(c((1, 3), (999, 1), 1))          # size-1 dims: any stride
        self.assertTrue(c((3, 1), (1, 7), 1))
        self.assertTrue(c((0, 5), (123, 456), 4))        # empty
        self.assertTrue(c((), (), 4))                    # 0-d
        self.assertFalse(c((2, 3), (3,), 1))             # wrong rank


class TestCudaArrayInterface(unittest.TestCase):
    """Parsing of __cuda_array_interface__ with the driver calls recorded instead of made."""

    def parse(self, x, stream=None):
        waits = []
        with mock.patch.object(_cuda, "pointer_device", lambda p: 5), \
                mock.patch.object(_cuda, "wait", lambda d, c, p: waits.append((d, c, p))):
            i = _core.acquire(x, stream)
        return i, waits

    def test_parse(self):
        i, waits = self.parse(FakeCAI(shape=(2, 3), typestr="<u8", strides=(24, 8), stream=0x77))
        self.assertEqual((i.ptr, i.n, i.dtype, i.device), (0x7f0000001000, 6, DType.UINT64, 5))
        # Our stream (the legacy default, 0) waits for the producer's.
        self.assertEqual(waits, [(5, 0, 0x77)])
        i, waits = self.parse(FakeCAI(stream=2), stream=0x99)
        self.assertEqual(waits, [(5, 0x99, 2)])
        i, waits = self.parse(FakeCAI(stream=None, version=2))
        self.assertEqual(waits, [(5, 0, None)])

    def test_refused(self):
        cases = [
            (dict(strides=(8,)), ValueError, "contiguous"),
            (dict(shape=(2, 2), strides=(4, 8)), ValueError, "contiguous"),
            (dict(stream=0), ValueError, "forbids"),
            (dict(stream="s"), TypeError, "stream"),
            (dict(mask=(1, 2)), TypeError, "mask"),
            (dict(version=1), TypeError, "version"),
            (dict(typestr="<c8"), TypeError, "typestr"),
            (dict(typestr="<V2"), TypeError, "bfloat16"),
            (dict(data=(0, False)), ValueError, "NULL"),
            (dict(data=12345), TypeError, "data"),
            (dict(shape=(-1,)), ValueError, "shape"),
        ]
        for kw, exc, text in cases:
            with self.subTest(kw=kw):
                with self.assertRaisesRegex(exc, text):
                    self.parse(FakeCAI(**kw))

    def test_missing_key(self):
        x = FakeCAI()
        del x.__cuda_array_interface__["typestr"]
        with self.assertRaisesRegex(TypeError, "typestr"):
            self.parse(x)


class TestDLPackConsumer(unittest.TestCase):
    def test_consume_and_release(self):
        x = FakeDLPack(shape=(2, 3), dtype=DType.BFLOAT16)
        before = len(_dlpack._exported)
        i = _core.acquire(x, None)
        self.assertEqual((i.ptr, i.n, i.dtype, i.device, i.stream), (0x7f0000002000, 6, DType.BFLOAT16, 0, 0))
        # The legacy default stream is 1 in the handshake (0 is forbidden); DLPack 1.0 asked.
        self.assertEqual(x.calls, [(1, {"max_version": (1, 0)})])
        self.assertEqual(len(_dlpack._exported), before + 1, "the tensor is held until release()")
        i.release()
        self.assertEqual(len(_dlpack._exported), before, "release() calls the producer's deleter")
        i.release()  # a second release does nothing

    def test_capsule_renamed(self):
        cap = FakeDLPack().__dlpack__(stream=None)
        c = _dlpack.consume(cap)
        self.assertTrue(ctypes.pythonapi.PyCapsule_IsValid(cap, b"used_dltensor"))
        with self.assertRaisesRegex(TypeError, "consumed already"):
            _dlpack.consume(cap)
        c.release()

    def test_unconsumed_capsule_frees_its_tensor(self):
        before = len(_dlpack._exported)
        cap = FakeDLPack().__dlpack__(stream=None)
        self.assertEqual(len(_dlpack._exported), before + 1)
        del cap
        self.assertEqual(len(_dlpack._exported), before)

    def test_old_producer_and_stream(self):
        x = FakeDLPack(old=True)
        i = _core.acquire(x, 0x1234)
        self.assertEqual(x.calls, [(0x1234, {})])
        i.release()

    def test_strided_refused_and_released(self):
        before = len(_dlpack._exported)
        x = FakeDLPack(shape=(2, 3), strides=(1, 2))
        with self.assertRaisesRegex(ValueError, "contiguous"):
            _core.acquire(x, None)
        self.assertEqual(len(_dlpack._exported), before, "a refused tensor is released too")
        i = _core.acquire(FakeDLPack(shape=(2, 3), strides=(3, 1)), None)
        self.assertEqual(i.n, 6)
        i.release()

    def test_bad_dtype_released(self):
        before = len(_dlpack._exported)

        class Int16(FakeDLPack):
            def __dlpack__(self, *, stream=None, **kw):
                cap = super().__dlpack__(stream=stream, **kw)
                _dlpack.DLManagedTensor.from_address(
                    ctypes.pythonapi.PyCapsule_GetPointer(cap, b"dltensor")).dl_tensor.dtype.bits = 16
                return cap
        with self.assertRaisesRegex(TypeError, "int16"):
            _core.acquire(Int16(dtype=DType.INT32), None)
        self.assertEqual(len(_dlpack._exported), before)

    def test_not_a_capsule(self):
        class Bad(FakeDLPack):
            def __dlpack__(self, *, stream=None, **kw):
                return 42
        with self.assertRaisesRegex(TypeError, "PyCapsule"):
            _core.acquire(Bad(), None)


class TestExact(unittest.TestCase):
    def test_exact_rules(self):
        lib = _lib.load()
        self.assertEqual(_core.exact_flags(lib, DType.INT32, Op.SUM), 0)      # exact already
        self.assertEqual(_core.exact_flags(lib, DType.FLOAT32, Op.MAX), 0)
        with self.assertRaisesRegex(ValueError, "sums only"):
            _core.exact_flags(lib, DType.FLOAT64, Op.PROD)

    def test_exact_float_sum(self):
        lib = _lib.load()
        self.assertEqual(gridsync.exact_sums_available(), hasattr(lib, "gs_exact_round"))
        if gridsync.exact_sums_available():
            for d in (DType.FLOAT16, DType.BFLOAT16, DType.FLOAT32, DType.FLOAT64):
                self.assertEqual(_core.exact_flags(lib, d, Op.SUM), _lib.GS_REDUCE_EXACT)
                self.assertEqual(_core.exact_flags(lib, d, Op.SUM, segmented=True), _lib.GS_SEGMENTED_EXACT)
            self.assertEqual(_core.exact_flags(lib, DType.INT64, Op.SUM, segmented=True), 0)
        else:
            # Never a silently inexact result: a clear error naming the library.
            with self.assertRaises(gridsync.NotSupportedError) as cm:
                _core.exact_flags(lib, DType.FLOAT32, Op.SUM)
            self.assertIsInstance(cm.exception, NotImplementedError)
            self.assertEqual(cm.exception.status_name, "GS_ERROR_UNSUPPORTED")
            self.assertIn(gridsync.library_version(), str(cm.exception))

    def test_old_library_refused(self):
        # A library before GRIDSYNC_1.2 would ignore the flags member: it must be refused.
        class Old:
            def __init__(self, lib):
                self.gs_version_string = lib.gs_version_string
        with self.assertRaises(gridsync.NotSupportedError):
            _core.exact_flags(Old(_lib.load()), DType.FLOAT64, Op.SUM)


class _LibWith:
    """The loaded library with some functions replaced (a driver's absence or a device
    count, on any machine)."""

    def __init__(self, lib, **replaced):
        self._lib, self._replaced = lib, replaced

    def __getattr__(self, name):
        return self._replaced[name] if name in self._replaced else getattr(self._lib, name)


class TestInfoWithoutDevice(unittest.TestCase):
    """python -m gridsync info without a driver or a device prints what the command does:
    the library's version and file, the backend directories and files, and a hint."""

    def setUp(self):
        from gridsync import __main__ as cli
        self.cli = cli
        self.lib = _lib.load()
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        # A backend directory with a file that is not a shared object and one that is no
        # backend (the library itself under a backend's name).
        with open(os.path.join(self.tmp, "gridsync-junk.so"), "w") as f:
            f.write("not an ELF file\n")
        shutil.copy(_lib.library_file(self.lib), os.path.join(self.tmp, "gridsync-notabackend.so"))
        self.real_dir = os.environ.get("GRIDSYNC_BACKEND_PATH", "").split(":")[0]
        self.absent = os.path.join(self.tmp, "absent")
        path = ":".join(p for p in (self.tmp, self.absent, self.tmp, self.real_dir) if p)
        patcher = mock.patch.dict(os.environ, {"GRIDSYNC_BACKEND_PATH": path})
        patcher.start()
        self.addCleanup(patcher.stop)

    def run_info(self, **replaced):
        out, err = io.StringIO(), io.StringIO()
        with mock.patch.object(self.cli._lib, "load", return_value=_LibWith(self.lib, **replaced)), \
                contextlib.redirect_stderr(err):
            rc = self.cli.info(out=out)
        return rc, out.getvalue(), err.getvalue()

    def check_common(self, out):
        libfile = _lib.library_file(self.lib)
        self.assertTrue(os.path.isabs(libfile), libfile)
        self.assertIn("gridsync %s (library, %s), Python package %s" % (gridsync.library_version(), libfile,
                                                                       gridsync.__version__), out)
        self.assertIn("GRIDSYNC_BACKEND_PATH=" + os.environ["GRIDSYNC_BACKEND_PATH"], out)
        lines = out.splitlines()
        dirs = lines[lines.index("backend directories, in search order:") + 1:lines.index("backend files:")]
        want = ["  %s (GRIDSYNC_BACKEND_PATH)" % self.tmp, "  %s (GRIDSYNC_BACKEND_PATH): absent" % self.absent]
        self.assertEqual(dirs[:2], want)  # the repeated directory once
        self.assertIn("  %s (next to libgridsync)" % os.path.join(os.path.dirname(libfile), "gridsync"),
                      [d.replace(": absent", "") for d in dirs])
        junk = os.path.join(self.tmp, "gridsync-junk.so")
        self.assertRegex(out, r"\n  %s: rejected: cannot load: " % re.escape(junk))
        self.assertIn("\n  %s: rejected: not a gridsync backend: no symbol gridsync_backend_entry_v1\n"
                      % os.path.join(self.tmp, "gridsync-notabackend.so"), out)
        real = os.path.join(self.real_dir, "gridsync-cuda_sm20.so") if self.real_dir else ""
        if real and os.path.exists(real):  # the build tree's backends (meson test)
            self.assertIn("\n  %s: cuda_sm20\n" % real, out)

    def test_no_driver(self):
        message = b"no CUDA driver: dlopen(libcuda.so.1) failed (the test's stand-in)"
        rc, out, err = self.run_info(gs_driver_version=lambda p: _lib.Status.ERROR_NO_DRIVER,
                                     gs_last_error_message=lambda: message)
        self.assertEqual(rc, 3, err)
        self.assertEqual(err, "gridsync: no CUDA driver: dlopen(libcuda.so.1) failed (the test's stand-in)\n")
        self.check_common(out)
        self.assertNotIn("CUDA driver ", out)
        self.assertTrue(out.endswith("hint: %s\n" % self.cli.HINT_NO_DRIVER), out)
        self.assertIn("libcuda.so.1", self.cli.HINT_NO_DRIVER)

    def test_no_device(self):
        def version(p):
            p._obj.value = 12080
            return 0

        def count(p):
            p._obj.value = 0
            return 0

        rc, out, err = self.run_info(gs_driver_version=version, gs_device_count=count)
        self.assertEqual(rc, 4, err)
        self.assertEqual(err, "gridsync: no CUDA device: the CUDA driver (version 12.8) sees none\n")
        self.check_common(out)
        self.assertIn("\nCUDA driver 12.8 (12080)\n", out)
        self.assertTrue(out.endswith("hint: %s\n" % self.cli.HINT_NO_DEVICE), out)

    def test_hints_match_the_command(self):
        path = os.path.join(SRC, "tools", "info.c")
        if not os.path.exists(path):
            self.skipTest("not in a source tree")
        with open(path) as f:
            c_text = re.sub(r'"\s*"', "", re.sub(r"\s+", " ", f.read()))  # C's adjacent strings joined
        for hint in (self.cli.HINT_NO_DRIVER, self.cli.HINT_NO_DEVICE, self.cli.HINT_NO_BACKENDS):
            self.assertIn(hint, c_text)


@unittest.skipIf(have_driver(), "a CUDA driver is installed: the no-driver path cannot be seen here")
class TestNoDriver(unittest.TestCase):
    def check_no_driver(self, cm, function):
        e = cm.exception
        self.assertEqual(e.status, gridsync.Status.ERROR_NO_DRIVER)
        self.assertEqual(e.status_name, "GS_ERROR_NO_DRIVER")
        self.assertIn("libcuda.so.1", e.message)           # gs_last_error_message()
        self.assertIn(function, str(e))
        self.assertIn("GS_ERROR_NO_DRIVER", str(e))
        self.assertIn(e.message, str(e))

    def test_device_count(self):
        with self.assertRaises(gridsync.GridsyncError) as cm:
            gridsync.device_count()
        self.check_no_driver(cm, "gs_device_count")

    def test_context_create(self):
        with self.assertRaises(gridsync.GridsyncError) as cm:
            gridsync.context_info(0)
        self.check_no_driver(cm, "gs_context_create")

    def test_fake_cai_refused_cleanly(self):
        with self.assertRaises(gridsync.GridsyncError) as cm:
            gridsync.reduce(FakeCAI(stream=5))
        self.check_no_driver(cm, "gs_driver_version")

    def test_fake_dlpack_refused_and_released(self):
        before = len(_dlpack._exported)
        with self.assertRaises(gridsync.GridsyncError) as cm:
            gridsync.reduce(FakeDLPack(), "max")
        self.check_no_driver(cm, "gs_context_create")
        self.assertEqual(len(_dlpack._exported), before)

    def test_segmented(self):
        with self.assertRaises(gridsync.GridsyncError) as cm:
            gridsync.segmented_reduce(FakeCAI(), FakeCAI(typestr="<i8"))
        self.check_no_driver(cm, "gs_driver_version")

    def test_info_command(self):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        p = subprocess.run([sys.executable, "-m", "gridsync", "info"], env=env, capture_output=True, text=True)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("gridsync: no CUDA driver:", p.stderr)
        self.assertIn("gridsync %s (library, " % gridsync.library_version(), p.stdout)
        self.assertIn("\nbackend directories, in search order:\n", p.stdout)
        self.assertIn("\nbackend files:\n", p.stdout)
        self.assertIn("\nhint: gridsync needs the NVIDIA driver's libcuda.so.1", p.stdout)
        p = subprocess.run([sys.executable, "-m", "gridsync", "bogus"], env=env, capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)


if __name__ == "__main__":
    unittest.main()
