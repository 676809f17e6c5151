"""python -m gridsync info: what `gridsync info` prints, through the public C API
(gs_version_string, gs_driver_version, gs_device_count, gs_context_create/get_info), with
the command's exit statuses: 0 success, 1 failure, 2 usage error, 3 no CUDA driver, 4 no
CUDA device."""

import argparse
import ctypes
import os
import sys

from . import __version__, _lib

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_NO_DRIVER, EXIT_NO_DEVICE = 0, 1, 2, 3, 4


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


def info(out=sys.stdout):
    try:
        lib = _lib.load()
    except _lib.LibraryNotFoundError as e:
        print("gridsync: %s" % e.message, file=sys.stderr)
        return EXIT_FAIL
    driver, count = ctypes.c_int(), ctypes.c_int()
    st = lib.gs_driver_version(ctypes.byref(driver))
    if st:
        return _report(lib, "gs_driver_version", st)
    st = lib.gs_device_count(ctypes.byref(count))
    if st:
        return _report(lib, "gs_device_count", st)
    d = driver.value
    if count.value == 0:
        print("gridsync: no CUDA device: the CUDA driver (version %d.%d) sees none" % (d // 1000, (d % 1000) // 10),
              file=sys.stderr)
        return EXIT_NO_DEVICE
    # The command prints the header version it was built against; the Python package's
    # counterpart is its own version, and the file it loaded.
    print("gridsync %s (library, %s), Python package %s" % (lib.gs_version_string().decode(), _lib.library_path(),
                                                           __version__), file=out)
    print("CUDA driver %d.%d (%d)" % (d // 1000, (d % 1000) // 10, d), file=out)
    for var in ("GRIDSYNC_BACKEND", "GRIDSYNC_BACKEND_PATH"):
        if os.environ.get(var) is not None:
            print("%s=%s" % (var, os.environ[var]), file=out)
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
