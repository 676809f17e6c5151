# shellcheck shell=sh
# What a gridsync install may contain, for test_consumer.sh (sourced; POSIX sh).
#
# stray_files STAGE prints, one a line, every file under STAGE that is none of: the library,
# the backends, the headers, gridsync.pc, the command with its man page and bash completion,
# the CMake config, and the Python package's modules (-Dpython) with their byte-compiled
# forms. Meson 1.2 and newer byte-compile installed Python, so a module X.py may come with
# __pycache__/X.cpython-NNN.pyc and __pycache__/X.cpython-NNN.opt-N.pyc beside it; a .pyc
# anywhere else, or one whose X.py was not installed, is a stray file like any other.
# tests/consumer/test_installed_files.sh checks these rules on a planted tree.

# is_installed_file PATH: 0 if PATH belongs in an install.
is_installed_file() {
    case ${1##*/} in
    libgridsync.so.1.0.0 | gridsync-*.so | *.h | *.cuh | gridsync.pc | gridsync.1) return 0 ;;
    esac
    case $1 in
    */bin/gridsync | */cmake/gridsync/gridsyncConfig*.cmake | */share/bash-completion/completions/gridsync)
        return 0 ;;
    */python3*/*-packages/gridsync/__pycache__/*.pyc)
        pyc_rest=${1##*/__pycache__/}
        case $pyc_rest in */*) return 1 ;; esac          # not directly in __pycache__
        pyc_mod=${pyc_rest%%.*}                           # X of X.cpython-NNN[.opt-N].pyc
        pyc_tag=${pyc_rest#"$pyc_mod".cpython-}
        [ "$pyc_tag" != "$pyc_rest" ] || return 1         # no .cpython- tag
        pyc_ver=${pyc_tag%%.*}
        case $pyc_ver in '' | *[!0-9]*) return 1 ;; esac
        case ${pyc_tag#"$pyc_ver"} in .pyc | .opt-[0-9].pyc) ;; *) return 1 ;; esac
        [ -n "$pyc_mod" ] && [ -f "${1%/__pycache__/*}/$pyc_mod.py" ]
        return ;;
    */python3*/*-packages/gridsync/*.py) return 0 ;;
    esac
    return 1
}

# stray_files STAGE: the files under STAGE that do not belong in an install, one a line.
stray_files() {
    find "$1" -type f | while IFS= read -r f; do
        is_installed_file "$f" || printf '%s\n' "$f"
    done
}
