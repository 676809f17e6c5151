# What the CI scripts share to get their tools; sourced (`. scripts/ci-tools.sh`), not run.
#
#   need COMMAND:PACKAGE ...   installs, with apt-get, the package of each command that is
#                              not on PATH (as root, or through sudo)
#   need_nvcc                  puts the CUDA toolkit's nvcc on PATH (exported) or exits 1;
#                              /usr/local/bin may hold a wrapper, so it is looked at first

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

need() {
    _missing=
    for _pair in "$@"; do
        command -v "${_pair%%:*}" >/dev/null 2>&1 || _missing="$_missing ${_pair#*:}"
    done
    [ -n "$_missing" ] || return 0
    echo "== installing:$_missing"
    as_root apt-get update -qq
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $_missing >/dev/null
}

need_nvcc() {
    if ! command -v nvcc >/dev/null 2>&1; then
        for _d in /usr/local/bin /usr/local/cuda/bin; do
            [ -x "$_d/nvcc" ] && PATH=$_d:$PATH && break
        done
    fi
    command -v nvcc >/dev/null 2>&1 || { echo "nvcc not found: install the CUDA toolkit" >&2; exit 1; }
    export PATH
}
