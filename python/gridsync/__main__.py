"""python -m gridsync info: what `gridsync info` prints, through the public C API
(gs_version_string, gs_driver_version, gs_device_count, gs_context_create/get_info), with
the command's exit statuses: 0 success, 1 failure, 2 usage error, 3 no CUDA driver, 4 no
CUDA device. Without a driver or a device it still prints the versions, where the library
and the backend files are, and a hint, as the command does."""

import _ctypes
import argparse
import ctypes
import os
import sys

from . import __version__, _lib

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_NO_DRIVER, EXIT_NO_DEVICE = 0, 1, 2, 3, 4

# The command's hints (tools/info.c), word for word.
HINT_NO_DRIVER = ("gridsync needs the NVIDIA driver's libcuda.so.1 (CUDA 12.0 or newer): install the driver, "
                  "or check that 'ldconfig -p' lists libcuda.so.1")
HINT_NO_DEVICE = "the driver sees no GPU: check nvidia-smi and CUDA_VISIBLE_DEVICES"
HINT_NO_BACKENDS = ("no backend files: set GRIDSYNC_BACKEND_PATH to the directory of gridsync-*.so, "
                    "or reinstall libgridsync's backends")
BACKEND_ENTRY = "gridsync_backend_entry_v1"  # GS_BACKEND_ENTRY_V1_NAME


def _report(lib, what, st):
    """The command's words for a failing call (tools/cli.c: report_gs)."""
    msg = _lib.last_error_message(lib)
    if st == _lib.Status.ERROR_NO_DRIVER:
        prefix = "no CUDA driver: "
        print("gridsync: no CUDA driver: %s" % ((msg[len(prefix):] if msg.startswith(prefix) else msg) or
                                               _lib.status_text(lib, st)), file=sys.stderr)
        return EXIT_NO_DRIVER
    if st == _lib.Status.ERROR_NO_DEVICE:
        print("gridsync: no CUDA device: %s" % (msg or _lib.status_text(lib, st)), file=sys.stderr)
        return EXIT_NO_DEVICE
    print("gridsync: %s: %s%s" % (what, _lib.status_text(lib, st), ": " + msg if msg else ""), file=sys.stderr)
    return EXIT_FAIL


def backend_dirs(lib):
    """The directories the library searches for backends, in its order, each once:
    GRIDSYNC_BACKEND_PATH's, then gridsync/ next to the loaded library (where an install
    puts them). The directory configured when the library was built comes last in the
    library's search; only `gridsync info` knows it. A directory reached twice (merged
    /usr: /lib and /usr/lib) is listed where it first appears."""
    dirs, seen = [], set()

    def add(path, source):
        real = os.path.realpath(path)
        if path and real not in seen:
            seen.add(real)
            dirs.append((path, source))

    for path in os.environ.get("GRIDSYNC_BACKEND_PATH", "").split(":"):
        if path:
            add(path, "GRIDSYNC_BACKEND_PATH")
    libfile = _lib.library_file(lib)
    if libfile and os.path.isabs(libfile):
        add(os.path.join(os.path.dirname(libfile), "gridsync"), "next to libgridsync")
    return dirs


def probe_backend(path):
    """(name, None) for a file the library could take as a backend (it loads and exports
    the entry point; `gridsync info` also asks the entry point for its ABI), or (None, why)."""
    try:
        h = ctypes.CDLL(path, mode=os.RTLD_LOCAL)
    except OSError as e:
        return None, "cannot load: %s" % e
    try:
        if not hasattr(h, BACKEND_ENTRY):
            return None, "not a gridsync backend: no symbol %s" % BACKEND_ENTRY
        return os.path.basename(path)[len("gridsync-"):-len(".so")], None
    finally:
        _ctypes.dlclose(h._handle)


def print_backends(lib, out):
    """The backend directories and the backend files in them, as the command lists them;
    returns the number of files."""
    dirs = backend_dirs(lib)
    print("backend directories, in search order:", file=out)
    for path, source in dirs:
        print("  %s (%s)%s" % (path, source, "" if os.path.isdir(path) else ": absent"), file=out)
    print("backend files:", file=out)
    found = 0
    for path, _ in dirs:
        try:
            names = sorted(n for n in os.listdir(path)
                           if n.startswith("gridsync-") and n.endswith(".so") and len(n) > 12)
        except OSError:
            continue
        for n in names:
            name, why = probe_backend(os.path.join(path, n))
            print("  %s: %s" % (os.path.join(path, n), name if name else "rejected: " + why), file=out)
            found += 1
    if not found:
        print("  none", file=out)
    return found


def info(out=None):
    out = out or sys.stdout
    try:
        lib = _lib.load()
    except _lib.LibraryNotFoundError as e:
        print("gridsync: %s" % e.message, file=sys.stderr)
        return EXIT_FAIL
    driver, count = ctypes.c_int(), ctypes.c_int()
    st = lib.gs_driver_version(ctypes.byref(driver))
    rc = _report(lib, "gs_driver_version", st) if st else EXIT_OK
    if not rc:
        st = lib.gs_device_count(ctypes.byref(count))
        rc = _report(lib, "gs_device_count", st) if st else EXIT_OK
    d = driver.value
    if not rc and count.value == 0:
        print("gridsync: no CUDA device: the CUDA driver (version %d.%d) sees none" % (d // 1000, (d % 1000) // 10),
              file=sys.stderr)
        rc = EXIT_NO_DEVICE
    # The command prints the header version it was built against; the Python package's
    # counterpart is its own version, and the file it loaded.
    print("gridsync %s (library, %s), Python package %s" % (lib.gs_version_string().decode(),
                                                           _lib.library_file(lib), __version__), file=out)
    for var in ("GRIDSYNC_BACKEND", "GRIDSYNC_BACKEND_PATH"):
        if os.environ.get(var) is not None:
            print("%s=%s" % (var, os.environ[var]), file=out)
    if rc != EXIT_NO_DRIVER:
        print("CUDA driver %d.%d (%d)" % (d // 1000, (d % 1000) // 10, d), file=out)
    backends = print_backends(lib, out)
    if rc in (EXIT_NO_DRIVER, EXIT_NO_DEVICE) or not backends:
        print("hint: %s" % (HINT_NO_DRIVER if rc == EXIT_NO_DRIVER else HINT_NO_DEVICE if rc == EXIT_NO_DEVICE
                            else HINT_NO_BACKENDS), file=out)
    if rc:
        return rc
    print("%d CUDA device%s" % (count.value, "" if count.value == 1 else "s"), file=out)
    rc = EXIT_OK
    for dev in range(count.value):
        print("\ndevice %d:" % dev, file=out)
        # A context of its own, destroyed after: `info` must show the choice the current
        # environment makes, not one cached earlier in this process.
        ctx = _lib.ctx_p()
        st = lib.gs_context_create(dev, ctypes.byref(ctx))
        if st:
            print("  error: %s: %s" % (_lib.status_text(lib, st), _lib.last_error_message(lib)), file=out)
            rc = EXIT_FAIL
            continue
        inf = _lib.ContextInfo()
        inf.struct_size = ctypes.sizeof(inf)
        st = lib.gs_context_get_info(ctx, ctypes.byref(inf))
        if st:
            print("  error: gs_context_get_info: %s: %s" % (_lib.status_text(lib, st), _lib.last_error_message(lib)),
                  file=out)
            rc = EXIT_FAIL
        else:
            s = lambda b: b.decode("utf-8", "replace") if b else "?"  # noqa: E731
            print("  name:               %s" % s(inf.device_name), file=out)
            print("  compute capability: %d.%d" % (inf.cc_major, inf.cc_minor), file=out)
            print("  multiprocessors:    %d" % inf.multiprocessor_count, file=out)
            print("  backend:            %s" % s(inf.backend_name), file=out)
            print("  backend file:       %s" % s(inf.backend_path), file=out)
            print("  selection:", file=out)
            for line in (inf.selection_log or b"").decode("utf-8", "replace").splitlines():
                print("    %s" % line, file=out)
        st = lib.gs_context_destroy(ctx)
        if st:
            print("  error: gs_context_destroy: %s: %s" % (_lib.status_text(lib, st), _lib.last_error_message(lib)),
                  file=out)
            rc = EXIT_FAIL
    return rc


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m gridsync",
                                description="gridsync's Python package. Exit status: 0 success, 1 failure, "
                                            "2 usage error, 3 no CUDA driver, 4 no CUDA device.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    pi = sub.add_parser("info", help="library and driver versions, devices, and the backend chosen for each")
    pi.add_argument("--backend", metavar="NAME",
                    help="force a backend (sets GRIDSYNC_BACKEND): a name such as cuda_sm20 or cuda_sm11_compat, "
                         "or an absolute path to a backend file")
    args = p.parse_args(argv)
    if args.command != "info":
        p.print_usage(sys.stderr)
        return EXIT_USAGE
    if args.backend:
        os.environ["GRIDSYNC_BACKEND"] = args.backend
    return info()


if __name__ == "__main__":
    sys.exit(main())
