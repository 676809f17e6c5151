#!/usr/bin/env python3
"""Compiles (and optionally links and runs) one test source at test time, so that a
header that stops compiling cleanly fails a test of the abi suite instead of breaking the
build of everything else.

  compile_check.py [--link INPUT]... [--ld-path DIR] -- COMPILER... FLAGS... SOURCE

The compile must succeed without a single diagnostic. Without --link it is all there is
(give -fsyntax-only among the flags); with --link the object is linked with the INPUTs
(only the linker's exit status counts: a sanitizer runtime, say, may warn) and run with
LD_LIBRARY_PATH=DIR, and must exit 0.
"""
import os
import subprocess
import sys
import tempfile


def run(cmd, **kw):
    print("$ " + " ".join(cmd))
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    sys.stdout.write(res.stdout + res.stderr)
    return res


def main(argv):
    link, ld_path = [], None
    while argv and argv[0] != "--":
        if argv[0] == "--link" and len(argv) > 1:
            link.append(argv[1])
            argv = argv[2:]
        elif argv[0] == "--ld-path" and len(argv) > 1:
            ld_path, argv = argv[1], argv[2:]
        else:
            sys.exit(__doc__)
    cmd = argv[1:]
    if len(cmd) < 2:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        obj, exe = os.path.join(tmp, "t.o"), os.path.join(tmp, "t")
        res = run(cmd + (["-c", "-o", obj] if link else []))
        if res.returncode != 0:
            print(f"FAIL: the compiler exited with {res.returncode}")
            return 1
        if res.stderr.strip():
            print("FAIL: the compiler printed diagnostics")
            return 1
        if link:
            # The same command (the compiler, possibly behind a wrapper, and its flags)
            # with the object in place of the source.
            res = run(cmd[:-1] + [obj] + link + ["-o", exe])
            if res.returncode != 0:
                print(f"FAIL: linking exited with {res.returncode}")
                return 1
            env = dict(os.environ)
            if ld_path:
                old = env.get("LD_LIBRARY_PATH")
                env["LD_LIBRARY_PATH"] = ld_path + (":" + old if old else "")
            res = run([exe], env=env)
            if res.returncode != 0:
                print(f"FAIL: the program exited with {res.returncode}")
                return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
