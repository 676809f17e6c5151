#!/bin/sh
# Debian packages, end to end, for CI (no GPU needed):
#   1. installs what the build needs with apt-get (the Build-Depends of debian/control that
#      dpkg-checkbuilddeps reports missing, and dpkg-dev, debhelper, fakeroot, lintian,
#      autopkgtest);
#   2. copies the source tree (tracked and untracked files git does not ignore) to a
#      temporary directory, so the checkout gets no build leftovers, makes the upstream
#      tarball from it (everything but debian/), and builds the source and binary packages
#      there: dpkg-buildpackage -us -uc -d (-d: the CUDA toolkit is not a Debian package
#      here; debian/rules finds nvcc), test suites included;
#   3. lintian --pedantic on the source and binary packages: fails on any error (warnings,
#      info and pedantic tags are listed); with every architecture, fails when
#      libgridsync1 installs more than 20 MiB;
#   4. autopkgtest with the null runner, as a Debian CI would run debian/tests: it installs
#      the built packages with the tests' Depends, then debian/tests/consumer builds
#      tests/consumer/consumer.c with pkg-config against them and runs it (no driver
#      here: GS_ERROR_NO_DRIVER as documented; with a GPU: a checked reduction);
#   5. removes (purges) the packages again, also when a step failed.
#
#   scripts/ci-package.sh
#
# Environment: CUDA_ARCHS (default all, every architecture nvcc offers, as a distribution
# package has it; e.g. 90 for a quick run), NVCC (the compiler; default from PATH,
# /usr/local/bin, /usr/local/cuda/bin), KEEP=1 keeps the work directory (.debs, logs),
# WORK (the work directory; default a new one under /tmp).
# Runs as root, or with sudo for apt-get and dpkg.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
archs=${CUDA_ARCHS:-all}
start=$(date +%s)
jobs=$(nproc 2>/dev/null || echo 2)

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}
phase() {
    echo "== $* ($(($(date +%s) - start)) s)"
}

# ---- 1. tools --------------------------------------------------------------------------
phase "build dependencies"
need=
for p in dpkg-dev debhelper fakeroot lintian autopkgtest build-essential; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || need="$need $p"
done
if command -v dpkg-checkbuilddeps >/dev/null 2>&1; then
    # "Unmet build dependencies: meson (>= 0.63) ninja-build ..." -> package names only
    unmet=$(cd "$root" && dpkg-checkbuilddeps 2>&1 | sed -n 's/.*Unmet build dependencies: //p' |
        sed -e 's/([^)]*)//g' -e 's/:any//g' -e 's/|[^ ]*//g' -e 's/nvidia-cuda-toolkit//g')
    need="$need $unmet"
fi
# The toolkit here is NVIDIA's installer's (/usr/local/cuda), not Debian's
# nvidia-cuda-toolkit (contrib/non-free, and 11.8 in bookworm): the one build dependency
# that is not checked; the build runs with -d and debian/rules finds nvcc itself.
# shellcheck disable=SC2086,SC2116
need=$(echo $need)
if [ -n "$need" ]; then
    echo "   installing: $need"
    as_root apt-get update -qq
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null
fi
still=$(cd "$root" && dpkg-checkbuilddeps 2>&1 | sed -n 's/.*Unmet build dependencies: //p' |
    sed -e 's/nvidia-cuda-toolkit ([^)]*)//' -e 's/^ *//')
[ -z "$still" ] || { echo "FAIL: build dependencies still unmet: $still" >&2; exit 1; }
if [ -z "${NVCC:-}" ]; then
    NVCC=$(command -v nvcc 2>/dev/null || true)
    for c in /usr/local/bin/nvcc /usr/local/cuda/bin/nvcc; do
        [ -z "$NVCC" ] && [ -x "$c" ] && NVCC=$c
    done
fi
[ -n "$NVCC" ] || { echo "nvcc not found: install the CUDA toolkit or set NVCC" >&2; exit 1; }
echo "   nvcc: $NVCC; CUDA architectures: $archs"

# ---- 2. build, out of tree -------------------------------------------------------------
work=${WORK:-$(mktemp -d /tmp/gridsync-package.XXXXXX)}
mkdir -p "$work"
installed=0
cleanup() {
    rc=$?
    if [ "$installed" = 1 ]; then
        echo "== removing the packages"
        as_root dpkg --purge gridsync-tools libgridsync-dev libgridsync1 >"$work/purge.log" 2>&1 ||
            { cat "$work/purge.log" >&2; rc=1; }
    fi
    if [ "${KEEP:-0}" = 1 ] || [ "$rc" != 0 ]; then
        echo "   work directory kept: $work"
    else
        rm -rf "$work"
    fi
    echo "== scripts/ci-package.sh: $([ "$rc" = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - start)) s"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

version=$(cd "$root" && dpkg-parsechangelog -S Version)
upstream=${version%-*}
src=$work/gridsync-$upstream
phase "copying the source to $src"
rm -rf "$src"
mkdir -p "$src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # What a clean clone has, plus new files not yet committed; no ignored build trees.
    # (--ignore-failed-read: a tracked file deleted in the working tree is left out.)
    (cd "$root" && git ls-files -z --cached --others --exclude-standard |
        tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$src"
else
    (cd "$root" && tar --exclude='./build*' --exclude=./.git --exclude=./obj-* -cf - .) | tar -xf - -C "$src"
fi

# 3.0 (quilt) builds the source package from the upstream tarball and debian/.
tar -C "$work" --exclude="gridsync-$upstream/debian" -cJf "$work/gridsync_$upstream.orig.tar.xz" "gridsync-$upstream"

phase "dpkg-buildpackage -us -uc -d (log: $work/build.log)"
if ! (cd "$src" && NVCC=$NVCC CUDA_ARCHS=$archs DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" \
        dpkg-buildpackage -us -uc -d) >"$work/build.log" 2>&1; then
    tail -60 "$work/build.log" >&2
    echo "FAIL: dpkg-buildpackage" >&2
    exit 1
fi
grep -E '^(Ok|Fail|Skipped|Expected Fail|Unexpected Pass|Timeout):' "$work/build.log" | tr -s ' ' | tr '\n' ' ' |
    sed 's/^/   meson test: /'
echo
changes=$(ls "$work"/gridsync_*.changes)
for f in "$work"/*.deb; do
    echo "   $(basename "$f") $(du -h "$f" | cut -f1), installs $(dpkg-deb -f "$f" Installed-Size) KiB"
done
for f in "$work"/*.dsc "$work"/*.debian.tar.*; do echo "   $(basename "$f") $(du -h "$f" | cut -f1)"; done

# ---- 3. lintian -------------------------------------------------------------------------
phase "lintian"
if lintian --fail-on error --pedantic --display-level '>=pedantic' --tag-display-limit 0 "$changes" >"$work/lintian.log" 2>&1; then
    lrc=0
else
    lrc=$?
fi
sed 's/^/   /' "$work/lintian.log"
echo "   lintian: $(grep -c '^E: ' "$work/lintian.log" || true) errors, $(grep -c '^W: ' "$work/lintian.log" || true) warnings, $(grep -c '^I: ' "$work/lintian.log" || true) info, $(grep -c '^P: ' "$work/lintian.log" || true) pedantic"
[ "$lrc" = 0 ] || { echo "FAIL: lintian reported errors (exit status $lrc)" >&2; exit 1; }
# Issue 19: with every architecture, libgridsync1 (the library and both backends, their
# fatbins compressed) stayed under 15 MiB installed; uncompressed it was 108 MiB. The exact
# scans' 25 kernels per backend (issue 46) brought it to 19.2 MiB (19645 KiB), so the
# bound is 20 MiB until the team decides how they shrink (docs/PACKAGING.md).
if [ "$archs" = all ] || [ "$archs" = auto ]; then
    size=$(dpkg-deb -f "$work"/libgridsync1_*.deb Installed-Size)
    [ "$size" -le 20480 ] || { echo "FAIL: libgridsync1 installs $size KiB, more than 20 MiB" >&2; exit 1; }
fi

# ---- 4. install and use: autopkgtest -------------------------------------------------------
# The null runner installs the packages (and the tests' Depends) on this machine, with
# apt-get through a temporary repository of the .debs, and runs debian/tests/control's
# tests from the unpacked source ($src/, the trailing slash says it is a source tree).
phase "autopkgtest (null runner; log: $work/autopkgtest.log)"
installed=1
if as_root autopkgtest --no-built-binaries "$work"/libgridsync1_*.deb "$work"/libgridsync-dev_*.deb \
        "$work"/gridsync-tools_*.deb "$src/" -- null >"$work/autopkgtest.log" 2>&1; then
    trc=0
else
    trc=$?
fi
# the tests' own output, and autopkgtest's verdict per test
sed -n -e '/: test [a-z0-9-]*: \[-*$/,/: test [a-z0-9-]*: -*\]$/p' -e '/^[a-z0-9-]*  *\(PASS\|FAIL\|SKIP\)/p' \
    "$work/autopkgtest.log" | sed 's/^/   /'
dpkg-query -W -f='   ${Package} ${Version} ${Status}\n' libgridsync1 libgridsync-dev gridsync-tools
# autopkgtest: 0 all passed; 2 (some skipped) fails too: debian/tests has nothing to skip
[ "$trc" = 0 ] || { tail -40 "$work/autopkgtest.log" >&2; echo "FAIL: autopkgtest (exit status $trc)" >&2; exit 1; }
# 5. (cleanup, on exit) removes the packages.
