"""Loading libgridsync.so.1 and declaring its C API to ctypes.

The library is loaded on first use, not at import, so that `import gridsync` works (and its
dtype tables, errors and docs are usable) on a machine where the library is missing; the
first call that needs it raises LibraryNotFoundError saying where it looked.
"""

import ctypes
import ctypes.util
import enum
import os
import threading

SONAME = "libgridsync.so.1"
ENV_LIBRARY = "GRIDSYNC_LIBRARY"


class Status(enum.IntEnum):
    """gs_status: values fixed forever by api/gridsync.h."""

    SUCCESS = 0
    ERROR_INVALID_ARGUMENT = 1
    ERROR_UNSUPPORTED = 2
    ERROR_NO_DRIVER = 3
    ERROR_NO_DEVICE = 4
    ERROR_BACKEND_NOT_FOUND = 5
    ERROR_BACKEND_ABI_MISMATCH = 6
    ERROR_BACKEND_INCOMPLETE = 7
    ERROR_BACKEND_INIT_FAILED = 8
    ERROR_NO_KERNEL_IMAGE = 9
    ERROR_OUT_OF_MEMORY = 10
    ERROR_CUDA = 11
    ERROR_INVALID_POINTER = 12
    ERROR_INVALID_CONTEXT = 13
    ERROR_INTERNAL = 14


class GridsyncError(RuntimeError):
    """A gridsync call failed.

    status: the gs_status value (an int; Status(status) when it is a known one);
    status_name: its name as the header spells it ("GS_ERROR_NO_DRIVER");
    message: gs_last_error_message() of the failing call (what exactly failed);
    function: the C function that returned it.
    """

    def __init__(self, status, message, function=None, status_text=None):
        self.status = None if status is None else int(status)
        if status is None:
            self.status_name = None
        else:
            try:
                self.status_name = "GS_" + Status(self.status).name
            except ValueError:
                self.status_name = "gs_status %d" % self.status
        self.message = message or ""
        self.function = function
        text = status_text or self.status_name
        detail = "%s: %s" % (text, self.message) if self.message else text
        super().__init__("%s: %s" % (function, detail) if function else detail)


class NotSupportedError(GridsyncError, NotImplementedError):
    """What was asked for exists in gridsync's API, but not in the library that is loaded
    (for example exact=True with a library older than the correctly rounded sums)."""

    def __init__(self, message, function=None):
        super().__init__(Status.ERROR_UNSUPPORTED, message, function)


class LibraryNotFoundError(GridsyncError, OSError):
    """libgridsync.so.1 could not be loaded: status and status_name are None (no library
    call returned anything)."""

    def __init__(self, message):
        GridsyncError.__init__(self, None, message, None, status_text="libgridsync not loaded")


class _Ctx(ctypes.Structure):
    pass


ctx_p = ctypes.POINTER(_Ctx)


class ContextInfo(ctypes.Structure):
    """gs_context_info, as the header declares it (members are only ever appended)."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("device", ctypes.c_int32),
        ("cc_major", ctypes.c_int32),
        ("cc_minor", ctypes.c_int32),
        ("multiprocessor_count", ctypes.c_int32),
        ("device_name", ctypes.c_char_p),
        ("backend_name", ctypes.c_char_p),
        ("backend_path", ctypes.c_char_p),
        ("selection_log", ctypes.c_char_p),
    ]


class ReduceOptions(ctypes.Structure):
    """gs_reduce_options: flags was appended in GRIDSYNC_1.2. A library before it reads only
    struct_size and out_dtype and ignores the rest, so a flag alone proves nothing: exact
    sums are only asked of a library that exports GRIDSYNC_1.2's functions (_core)."""

    _fields_ = [("struct_size", ctypes.c_uint32), ("out_dtype", ctypes.c_int32), ("flags", ctypes.c_uint32)]


class ScanOptions(ctypes.Structure):
    """gs_scan_options (GRIDSYNC_1.3): gs_reduce_options' three members, then GS_SCAN_EXACT's
    carry_in (const gs_exact_acc *), carry_in_count and total (gs_exact_acc *); 40 bytes."""

    _fields_ = [("struct_size", ctypes.c_uint32), ("out_dtype", ctypes.c_int32), ("flags", ctypes.c_uint32),
                ("carry_in", ctypes.c_void_p), ("carry_in_count", ctypes.c_uint64), ("total", ctypes.c_void_p)]


GS_OUT_DEFAULT = -1
GS_SCAN_EXCLUSIVE = 1
GS_SCAN_EXACT = 2
GS_SEGMENTED_CHECK_OFFSETS = 1
GS_SEGMENTED_EXACT = 2
GS_REDUCE_EXACT = 1
GS_REDUCE_EXACT_ACCUMULATOR = 2
# gs_exact_acc: GS_EXACT_ACC_WORDS int64 words (68 limbs, count, nan, pos_inf, neg_inf,
# sign_clear, 3 reserved), 608 bytes, 8-byte aligned.
GS_EXACT_ACC_WORDS = 76
# A function of the GRIDSYNC_1.2 node, which also brought gs_reduce_options.flags.
EXACT_SYMBOL = "gs_exact_round"

_lock = threading.Lock()
_lib = None
_lib_path = None


def _declare(lib):
    c = ctypes
    vp = c.c_void_p
    sig = {
        "gs_version": (c.c_uint32, []),
        "gs_version_string": (c.c_char_p, []),
        "gs_status_string": (c.c_char_p, [c.c_int]),
        "gs_last_error_message": (c.c_char_p, []),
        "gs_driver_version": (c.c_int, [c.POINTER(c.c_int)]),
        "gs_device_count": (c.c_int, [c.POINTER(c.c_int)]),
        "gs_context_create": (c.c_int, [c.c_int, c.POINTER(ctx_p)]),
        "gs_context_destroy": (c.c_int, [ctx_p]),
        "gs_context_get_info": (c.c_int, [ctx_p, c.POINTER(ContextInfo)]),
        # gs_reduce(ctx, in, n, dtype, op, out, stream)
        "gs_reduce": (c.c_int, [ctx_p, vp, c.c_uint64, c.c_int, c.c_int, vp, vp]),
        "gs_reduce_ex": (c.c_int, [ctx_p, vp, c.c_uint64, c.c_int, c.c_int, vp, vp, vp]),
        # gs_segmented_reduce(ctx, in, n, dtype, op, offsets, num_segments, out, stream, flags)
        "gs_segmented_reduce": (c.c_int, [ctx_p, vp, c.c_uint64, c.c_int, c.c_int, vp, c.c_uint64, vp, vp,
                                          c.c_uint32]),
        # gs_scan(ctx, in, n, dtype, op, out, stream, opts): GRIDSYNC_1.3
        "gs_scan": (c.c_int, [ctx_p, vp, c.c_uint64, c.c_int, c.c_int, vp, vp, vp]),
        # gs_exact_round(acc, out_dtype, result), gs_exact_combine(acc, other): GRIDSYNC_1.2, host only
        "gs_exact_round": (c.c_int, [vp, c.c_int, vp]),
        "gs_exact_combine": (c.c_int, [vp, vp]),
        # gs_exact_round_device(ctx, acc, count, out_dtype, out, stream): GRIDSYNC_1.3
        "gs_exact_round_device": (c.c_int, [ctx_p, vp, c.c_uint64, c.c_int, vp, vp]),
    }
    for name, (restype, argtypes) in sig.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            # gs_segmented_reduce is GRIDSYNC_1.1, gs_exact_* 1.2, gs_scan and
            # gs_exact_round_device GRIDSYNC_1.3: an older library lacks them; calls that need one say so (NotSupportedError) instead of failing to load
            # the whole library.
            continue
        f.restype = restype
        f.argtypes = argtypes


def _candidates():
    """Where the library is looked for, in order: GRIDSYNC_LIBRARY alone when set, else the
    soname as the dynamic linker resolves it (LD_LIBRARY_PATH, ld.so.cache, the default
    directories), else what ctypes.util.find_library knows of (ldconfig -p, gcc, ld; asked
    only when the soname failed, as it runs programs)."""
    path = os.environ.get(ENV_LIBRARY)
    if path:
        yield path
        return
    yield SONAME
    found = ctypes.util.find_library("gridsync")
    if found and found != SONAME:
        yield found


def load():
    """The loaded library (a ctypes.CDLL), loading it on the first call."""
    global _lib, _lib_path
    lib = _lib
    if lib is not None:
        return lib
    with _lock:
        if _lib is not None:
            return _lib
        errors = []
        for name in _candidates():
            try:
                lib = ctypes.CDLL(name)
            except OSError as e:
                errors.append(str(e))
                continue
            _declare(lib)
            _lib_path = name
            _lib = lib
            return lib
        if os.environ.get(ENV_LIBRARY):
            hint = "%s=%s could not be loaded: %s" % (ENV_LIBRARY, os.environ[ENV_LIBRARY], "; ".join(errors))
        else:
            hint = ("%s was not found (%s). Install libgridsync1 (or run 'meson install' in a gridsync build), "
                    "or set %s to the file, e.g. %s=/path/to/build/core/%s"
                    % (SONAME, "; ".join(errors), ENV_LIBRARY, ENV_LIBRARY, SONAME))
        raise LibraryNotFoundError(hint)


def library_path():
    """The name or path the library was loaded by (None before it is loaded)."""
    return _lib_path


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p), ("dli_sname", ctypes.c_char_p),
                ("dli_saddr", ctypes.c_void_p)]


def library_file(lib):
    """The path of the file `lib` was loaded from, as the dynamic linker says (dladdr of
    gs_version), made absolute; the name it was loaded by when that fails."""
    name = None
    try:
        dladdr = ctypes.CDLL(None).dladdr
        dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        info = _DlInfo()
        if dladdr(ctypes.cast(lib.gs_version, ctypes.c_void_p), ctypes.byref(info)) and info.dli_fname:
            name = os.fsdecode(info.dli_fname)
    except (AttributeError, OSError):
        pass
    name = name or _lib_path
    # A path with a slash (GRIDSYNC_LIBRARY=build/core/...) is kept as given, relative to
    # the directory the process was in when it loaded the library.
    return os.path.abspath(name) if name and "/" in name else name


def last_error_message(lib):
    m = lib.gs_last_error_message()
    return m.decode("utf-8", "replace") if m else ""


def status_text(lib, st):
    s = lib.gs_status_string(st)
    return s.decode("utf-8", "replace") if s else "unknown gridsync status"


def fail(lib, st, function):
    """The exception for status st, with the detail message of the failing call. Call it
    right after the failing call: the message is thread-local and the next gridsync call on
    this thread clears it."""
    msg = last_error_message(lib)
    text = status_text(lib, st)
    # gs_status_string reads "GS_ERROR_NO_DRIVER: no usable CUDA driver": keep both parts.
    return GridsyncError(st, msg, function, status_text=text)


def check(lib, st, function):
    if st != 0:
        raise fail(lib, st, function)
