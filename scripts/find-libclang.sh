#!/usr/bin/env bash
# Finds libclang the way bindgen's loader (clang-sys, runtime linking) does, and prints the
# path of the first match. Exit 0 when found, 1 when not (the places searched go to stderr).
#
#   scripts/find-libclang.sh          search LIBCLANG_PATH, llvm-config, LD_LIBRARY_PATH and
#                                     the system library folders
#   scripts/find-libclang.sh DIR...   search only these folders (used by the tests)
#
# Names that count: libclang.so, libclang-N.so, libclang.so.N, libclang-N.so.N.
# libclang-cpp.so.* is another library (the C++ API) and never counts: a stock Debian
# machine has it without libclang.
set -uo pipefail

is_libclang() {
    local name="${1##*/}"
    case "$name" in
        libclang-cpp*) return 1 ;;
        libclang.so | libclang.so.* | libclang-*.so | libclang-*.so.*) [[ -e "$1" ]] ;;
        *) return 1 ;;
    esac
}

dirs=()
if [[ $# -gt 0 ]]; then
    dirs=("$@")
else
    if [[ -n "${LIBCLANG_PATH:-}" ]]; then
        if [[ -f "$LIBCLANG_PATH" ]]; then
            is_libclang "$LIBCLANG_PATH" && { echo "$LIBCLANG_PATH"; exit 0; }
        else
            dirs+=("$LIBCLANG_PATH")
        fi
    fi
    if command -v llvm-config >/dev/null 2>&1; then
        dirs+=("$(llvm-config --libdir 2>/dev/null)" "$(llvm-config --bindir 2>/dev/null)")
    fi
    IFS=: read -r -a ld_dirs <<<"${LD_LIBRARY_PATH:-}"
    dirs+=("${ld_dirs[@]}")
    shopt -s nullglob
    dirs+=(/usr/local/lib*/ /usr/local/llvm*/lib*/ /usr/lib*/ /usr/lib*/*/ /usr/lib*/*/lib*/
        /opt/llvm*/lib*/)
    shopt -u nullglob
fi

shopt -s nullglob
for dir in "${dirs[@]}"; do
    [[ -n "$dir" && -d "$dir" ]] || continue
    dir="${dir%/}"
    for file in "$dir"/libclang.so "$dir"/libclang-*.so "$dir"/libclang.so.* "$dir"/libclang-*.so.*; do
        if is_libclang "$file"; then
            echo "$file"
            exit 0
        fi
    done
done

if [[ ${#dirs[@]} -le 8 ]]; then where="${dirs[*]:-<none>}"; else where="${dirs[*]:0:8} and $((${#dirs[@]} - 8)) more"; fi
echo "find-libclang.sh: no libclang (libclang.so, libclang-N.so[.N]) in: $where" >&2
echo "find-libclang.sh: fix: apt-get install libclang-dev, or set LIBCLANG_PATH" >&2
exit 1
