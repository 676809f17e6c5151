#!/usr/bin/env python3
"""The version of this tree, said once in meson.build, must be what every other place that
states the current version says: the public header, the generated .pc, the man page,
debian/changelog's newest entry, the Python package and the docs that name it.

    check_versions.py VERSION SOURCE_DIR PC_FILE

Places that name a version for history ("since 0.2.0", "measured on 0.2.0") are not
checked: only the statements listed in PLACES, each of which claims the current version.
Prints one line per place and exits 1 when any disagrees or is missing."""
import os
import re
import sys

version, src, pc = sys.argv[1], sys.argv[2], sys.argv[3]

# (file, regular expression whose group 1 is the version it states, what it is)
PLACES = [
    ("api/gridsync.h", None, "GS_VERSION_MAJOR/MINOR/PATCH"),
    ("tools/gridsync.1", r'^\.TH GRIDSYNC 1 "[^"]*" "gridsync ([^"]+)"', "the man page's .TH line"),
    ("debian/changelog", r"^gridsync \(([^)~-]+)[^)]*\)", "the newest entry (upstream part)"),
    ("python/gridsync/__init__.py", r'^__version__ = "([^"]+)"', "the Python package's __version__"),
    ("docs/ABI.md", r"`gs_version\(\)`, now ([0-9][0-9.]*)\)", "the package version it states"),
    ("docs/ABI-policy.md", r"^\| package version \| ([0-9][0-9.]*) \|", "its table of versions"),
    ("docs/semantics.md", r"This describes gridsync ([0-9][0-9.]*[0-9])", "the version it describes"),
]

bad = 0


def report(where, found, what):
    global bad
    ok = found == version
    bad += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {where}: {what}: {found if found is not None else 'not found'}")


def read(rel):
    path = os.path.join(src, rel)
    with open(path, encoding="utf-8") as f:
        return f.read()


for rel, pattern, what in PLACES:
    if rel == "python/gridsync/__init__.py" and not os.path.exists(os.path.join(src, rel)):
        continue  # a tree without the Python package
    text = read(rel)
    if pattern is None:  # the header: three numbers
        parts = [re.search(rf"^#define GS_VERSION_{p} (\d+)", text, re.M) for p in ("MAJOR", "MINOR", "PATCH")]
        found = ".".join(m.group(1) for m in parts) if all(parts) else None
    else:
        m = re.search(pattern, text, re.M)
        found = m.group(1) if m else None
    report(rel, found, what)

with open(pc, encoding="utf-8") as f:
    m = re.search(r"^Version: (\S+)", f.read(), re.M)
report(os.path.basename(pc) + " (built)", m.group(1) if m else None, "Version:")

print(f"meson.build says {version}: " + ("every place agrees" if not bad else f"{bad} place(s) disagree"))
sys.exit(1 if bad else 0)
