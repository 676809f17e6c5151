#!/usr/bin/env python3
"""Every architecture's SASS is compiled from the PTX of its class's oldest architecture
(meson.build, "The virtual architecture"). That is only right while the device code cannot
tell the two apart: this checks, for every pair meson chose, that each preprocessor
condition on __CUDA_ARCH__ in the device code (backends/, api/) comes out the same for the
architecture and for its virtual architecture.

    check_arch_classes.py SOURCE_ROOT ARCH:VIRTUAL...

Exit status 0 when every condition agrees, 1 (with the conditions, files and pairs that
disagree) otherwise. Conditions it cannot evaluate are an error too, so a new kind of test
on __CUDA_ARCH__ is looked at rather than passed over."""

import pathlib
import re
import sys


def conditions(root):
    """(file, line, expression) of every #if/#elif that names __CUDA_ARCH__."""
    files = sorted(root.glob("backends/**/*.cu")) + sorted(root.glob("backends/**/*.cuh")) + sorted(
        root.glob("api/*.cuh"))
    for path in files:
        lines = path.read_text().split("\n")
        i = 0
        while i < len(lines):
            start = i
            text = lines[i]
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + " " + lines[i]
            i += 1
            m = re.match(r"\s*#\s*(if|elif)\b(.*)", text)
            if m and "__CUDA_ARCH__" in m.group(2):
                expr = re.sub(r"/\*.*?\*/|//.*", "", m.group(2)).strip()
                yield path.relative_to(root), start + 1, expr


def evaluate(expr, arch):
    """The condition for __CUDA_ARCH__ == arch (in nvcc's units: 900 for sm_90)."""
    e = re.sub(r"defined\s*\(\s*__CUDA_ARCH__\s*\)|defined\s+__CUDA_ARCH__", "1", expr)
    e = e.replace("__CUDA_ARCH__", str(arch))
    e = e.replace("&&", " and ").replace("||", " or ")
    e = re.sub(r"!(?!=)", " not ", e)
    if not re.fullmatch(r"[0-9\s()<>=!andotr]*", e):
        raise ValueError("cannot evaluate: " + expr)
    return bool(eval(e))  # digits, comparisons, and/or/not, parentheses only


def arch_value(name):
    return int(re.sub(r"[a-z]+$", "", name)) * 10


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    root = pathlib.Path(argv[1])
    pairs = [p.split(":") for p in argv[2:]]
    conds = list(conditions(root))
    if not conds:
        print("no condition on __CUDA_ARCH__ found under %s: the scan is broken" % root)
        return 1
    bad = 0
    for arch, virt in pairs:
        if arch_value(virt) > arch_value(arch):
            print("sm_%s from compute_%s: a virtual architecture newer than the real one" % (arch, virt))
            bad += 1
        for path, line, expr in conds:
            try:
                a, v = evaluate(expr, arch_value(arch)), evaluate(expr, arch_value(virt))
            except ValueError as err:
                print("%s:%d: %s" % (path, line, err))
                return 1
            if a != v:
                print("%s:%d: '%s' is %s for sm_%s but %s for compute_%s, its PTX" % (path, line, expr, a, arch, v, virt))
                bad += 1
    print("%d architecture pairs x %d conditions on __CUDA_ARCH__: %s" %
          (len(pairs), len(conds), "%d disagree" % bad if bad else "all agree"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
