#!/bin/sh
# The SASS (sm_90) of one backend module's kernels, on a machine without a GPU and without
# cuobjdump (the CUDA toolkit on the CPU machines lacks it and nvdisasm):
#
#   scripts/sass.sh [--root DIR] [--arch 90] BACKEND MODULE > out.sass
#   scripts/sass.sh --ptxas BACKEND MODULE     # registers, spills, shared memory per kernel
#
# BACKEND: cuda_sm20 or cuda_sm11_compat; MODULE: reduce, reduce_float, reduce_int,
# segmented, exact, scan_float, scan_int or scan_exact (backends/meson.build). --root: the source tree
# to compile (default this one), e.g. a `git archive` of another commit, to diff two
# versions' SASS: a change that leaves a module's SASS the same needs no new GPU run for it.
#
# It compiles the module as backends/meson.build does (nvcc -cubin, the same defines) and
# disassembles it with nvdisasm from Debian's nvidia-cuda-toolkit (11.8, in non-free),
# which it downloads once into ${SASS_TOOLS:-$HOME/.cache/gridsync-sass} with apt-get (its
# own package lists; the system's sources are left alone). 11.8's nvdisasm knows sm_90's
# instructions but not CUDA 13's cubin header, so the copy it reads has the older header
# (OS/ABI 0x33, ABI version 7, EF_CUDA_SM90 flags): the code itself is untouched. Only
# sm_90 (--arch 90) is set up that way.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
arch=90
ptxas=0
while [ $# -gt 0 ]; do
    case $1 in
    --root) root=$(cd "$2" && pwd); shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --ptxas) ptxas=1; shift ;;
    -*) echo "sass.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -eq 2 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
backend=$1
module=$2
[ "$arch" = 90 ] || { echo "sass.sh: only --arch 90 (the header rewrite is sm_90's)" >&2; exit 2; }
[ -f "$root/backends/$backend/kernels.cu" ] || { echo "sass.sh: no backend $backend in $root" >&2; exit 2; }
case $module in reduce | reduce_float | reduce_int | segmented | exact | scan_float | scan_int | scan_exact) ;; *)
    echo "sass.sh: module is one of reduce reduce_float reduce_int segmented exact scan_float scan_int scan_exact" >&2; exit 2 ;;
esac
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
tmp=$(mktemp -d /tmp/gridsync-sass.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mod_def=GS_BUILD_$(echo "$module" | tr '[:lower:]' '[:upper:]')
compat=
[ "$backend" = cuda_sm11_compat ] && compat=-DGS_BACKEND_COMPAT=1
set -- -cubin -std=c++17 -O3 --extended-lambda -I "$root/backends/common" -I "$root/backends/$backend" \
    -I "$root/api" -I "$root/internal" $compat "-D$mod_def" --diag-suppress=177 "-arch=sm_$arch"
if [ "$ptxas" = 1 ]; then
    "$nvcc" "$@" -Xptxas -v -o "$tmp/k.cubin" "$root/backends/$backend/kernels.cu"
    exit 0
fi
"$nvcc" "$@" -o "$tmp/k.cubin" "$root/backends/$backend/kernels.cu"

tools=${SASS_TOOLS:-$HOME/.cache/gridsync-sass}
nvdisasm=$tools/x/usr/bin/nvdisasm
if [ ! -x "$nvdisasm" ]; then
    echo "sass.sh: fetching nvdisasm (Debian's nvidia-cuda-toolkit, non-free) into $tools" >&2
    mkdir -p "$tools/lists/partial" "$tools/deb"
    echo "deb http://deb.debian.org/debian bookworm non-free" >"$tools/sources.list"
    o="-o Dir::Etc::SourceList=$tools/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$tools/lists"
    # shellcheck disable=SC2086
    if ! apt-get $o update >"$tools/apt.log" 2>&1 ||
        ! (cd "$tools/deb" && apt-get $o download nvidia-cuda-toolkit >>"$tools/apt.log" 2>&1); then
        echo "sass.sh: apt-get failed, see $tools/apt.log" >&2
        exit 1
    fi
    dpkg -x "$tools"/deb/nvidia-cuda-toolkit_*.deb "$tools/x"
    rm -rf "$tools/deb" "$tools/lists"
fi
python3 - "$tmp/k.cubin" "$tmp/old.cubin" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
assert b[:4] == b"\x7fELF" and b[4] == 2, "not a 64-bit ELF"
b[7], b[8] = 0x33, 7                           # ELFOSABI_CUDA, ABI version 7
struct.pack_into("<I", b, 0x30, 0x005A055A)    # SM90 | 64-bit | unified | virtual SM90
open(sys.argv[2], "wb").write(b)
EOF
"$nvdisasm" -c "$tmp/old.cubin"
