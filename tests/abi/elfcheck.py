#!/usr/bin/env python3
"""ELF checks of the abi suite, with readelf (binutils).

  elfcheck.py symbols LIST FILE...       the dynamic symbols FILE defines (with their version
                                         node) are exactly those in LIST, for every FILE
  elfcheck.py header-exports HEADER FILE every GS_API function HEADER declares is exported
                                         by FILE, and FILE exports no gs_ function it does not
  elfcheck.py not-needed PATTERN,... FILE...   no DT_NEEDED entry of any FILE matches a pattern
  elfcheck.py soname NAME FILE           FILE's DT_SONAME is NAME

Exits 0 when the property holds, 1 (with what differs) when it does not.
"""
import fnmatch
import os
import re
import subprocess
import sys

READELF = os.environ.get("READELF", "readelf")


def readelf(*args):
    res = subprocess.run([READELF, "-W", *args], capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"FAIL: {READELF} {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


def exported_symbols(path):
    """Defined global/weak dynamic symbols as 'name@@NODE' / 'name@NODE' / 'name', and
    version definitions as 'NODE (version node)'. Newer binutils print a version node's own
    symbol as 'NODE@@NODE', older ones as 'NODE': both read the same here."""
    out = set()
    for line in readelf("--dyn-syms", path).splitlines():
        f = line.split()
        # Num: Value Size Type Bind Vis Ndx Name [(n)]
        if len(f) < 8 or not f[0].endswith(":") or not f[0][:-1].isdigit():
            continue
        size, typ, bind, ndx, name = f[2], f[3], f[4], f[6], f[7]
        if ndx == "UND" or bind not in ("GLOBAL", "WEAK") or f[5] not in ("DEFAULT", "PROTECTED"):
            continue
        m = re.match(r"^([^@]+)(@@?)(.+)$", name)
        if ndx == "ABS" and typ == "OBJECT" and size == "0" and (not m or m.group(1) == m.group(3)):
            out.add(f"{m.group(1) if m else name} (version node)")
        else:
            out.add(name)
    return out


def read_list(path):
    with open(path) as f:
        return {l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")}


def cmd_symbols(listfile, files):
    want = read_list(listfile)
    ok = True
    for path in files:
        got = exported_symbols(path)
        if got != want:
            ok = False
            print(f"FAIL: {path} exports other symbols than {listfile}:")
            for s in sorted(got - want):
                print(f"  + {s}   (exported, not in the list)")
            for s in sorted(want - got):
                print(f"  - {s}   (in the list, not exported)")
        else:
            print(f"ok: {path}: {len(got)} symbols as listed")
    return ok


def cmd_header_exports(header, path):
    with open(header) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    declared = set(re.findall(r"\bGS_API\b[^;(]*?\b(gs_\w+)\s*\(", text))
    exported = {s.split("@")[0] for s in exported_symbols(path) if s.startswith("gs_")}
    ok = True
    for s in sorted(declared - exported):
        print(f"FAIL: {header} declares {s} (GS_API), but {path} does not export it")
        ok = False
    for s in sorted(exported - declared):
        print(f"FAIL: {path} exports {s}, which {header} does not declare with GS_API")
        ok = False
    if not declared:
        print(f"FAIL: found no GS_API declaration in {header}")
        ok = False
    if ok:
        print(f"ok: the {len(declared)} GS_API functions of {header} are exactly the gs_ exports of {path}")
    return ok


def dynamic_entries(path, tag):
    vals = []
    for line in readelf("-d", path).splitlines():
        m = re.search(r"\(" + tag + r"\)\s+.*\[(.*)\]", line)
        if m:
            vals.append(m.group(1))
    return vals


def cmd_not_needed(patterns, files):
    pats = [p for p in patterns.split(",") if p]
    ok = True
    for path in files:
        needed = dynamic_entries(path, "NEEDED")
        bad = [n for n in needed if any(fnmatch.fnmatch(n, p) for p in pats)]
        if bad:
            ok = False
            print(f"FAIL: {path} needs {', '.join(bad)} (must load without them)")
        else:
            print(f"ok: {path} needs only {', '.join(needed) or 'nothing'}")
    return ok


def cmd_soname(name, path):
    got = dynamic_entries(path, "SONAME")
    if got != [name]:
        print(f"FAIL: {path} has SONAME {got or 'none'}, expected {name}")
        return False
    print(f"ok: {path} has SONAME {name}")
    return True


def main(argv):
    if len(argv) >= 3 and argv[0] == "symbols":
        return cmd_symbols(argv[1], argv[2:])
    if len(argv) == 3 and argv[0] == "header-exports":
        return cmd_header_exports(argv[1], argv[2])
    if len(argv) >= 3 and argv[0] == "not-needed":
        return cmd_not_needed(argv[1], argv[2:])
    if len(argv) == 3 and argv[0] == "soname":
        return cmd_soname(argv[1], argv[2])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1:]) else 1)
