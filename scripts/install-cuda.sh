#!/usr/bin/env bash
# Installs NVRTC (and with --nvcc the full nvcc set) for CUDA 13.0 from PyPI wheels into
# the git-ignored prefix .cuda/ at the repository root. No GPU and no root are needed.
#
#   scripts/install-cuda.sh          NVRTC only (enough for memtune-kernels' tests)
#   scripts/install-cuda.sh --nvcc   also nvcc, headers, NVVM (ptxas register reports)
#
# Versions are pinned to 13.0.x because the GPU machines' driver is CUDA 13.0: PTX from a
# newer compiler may not load there. Set MEMTUNE_CUDA_PREFIX to install elsewhere.
# Idempotent: a second run finds the install (or a system CUDA 13) and returns at once.
set -euo pipefail

NVRTC_WHEELS=(nvidia-cuda-nvrtc==13.0.88)
NVCC_WHEELS=(
    nvidia-cuda-nvcc==13.0.88
    nvidia-cuda-runtime==13.0.96
    nvidia-cuda-crt==13.0.88
    nvidia-nvvm==13.0.88
    nvidia-cuda-cccl==13.0.85
)

usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }

want_nvcc=0
for arg in "$@"; do
    case "$arg" in
        --nvcc) want_nvcc=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "install-cuda.sh: unknown option '$arg'" >&2; usage >&2; exit 2 ;;
    esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${MEMTUNE_CUDA_PREFIX:-$root/.cuda}"
libdir="$prefix/nvidia/cu13/lib"
# Lists the wheels installed into $prefix; written last, so an interrupted run is redone.
marker="$prefix/.memtune-installed"

die() { echo "install-cuda.sh: error: $*" >&2; exit 1; }

# True when this exact wheel pin is recorded in the marker.
installed() { [[ -f "$marker" ]] && grep -qxF "$1" "$marker"; }

# A system CUDA 13 toolkit, when there is one, is used instead of installing anything.
system_cuda=""
for dir in "${CUDA_HOME:-}" /usr/local/cuda; do
    if [[ -n "$dir" && -e "$dir/lib64/libnvrtc.so.13" ]]; then
        system_cuda="$dir"
        break
    fi
done

if [[ -n "$system_cuda" ]] && { [[ $want_nvcc == 0 ]] || [[ -x "$system_cuda/bin/nvcc" ]]; }; then
    echo "install-cuda.sh: CUDA 13 already present at $system_cuda (libnvrtc.so.13); nothing to do."
    exit 0
fi

wheels=("${NVRTC_WHEELS[@]}")
[[ $want_nvcc == 1 ]] && wheels+=("${NVCC_WHEELS[@]}")

missing=()
for w in "${wheels[@]}"; do installed "$w" || missing+=("$w"); done
if [[ ${#missing[@]} == 0 ]]; then
    echo "install-cuda.sh: already installed in $prefix: ${wheels[*]}"
    echo "install-cuda.sh: NVRTC: $libdir/libnvrtc.so.13"
    exit 0
fi

python3 -m pip --version >/dev/null 2>&1 || die "python3 with pip is required (apt-get install python3-pip)."

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "install-cuda.sh: downloading ${missing[*]}"
python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" "${missing[@]}" \
    || die "pip could not download ${missing[*]} (network? PyPI reachable?)."

mkdir -p "$prefix"
# Unpack with Python rather than unzip(1), which CI may lack. Wheel metadata and the .alt
# library variants (an alternative build memtune does not use, ~110 MB) are skipped;
# file modes are kept so that bin/nvcc stays executable.
python3 - "$prefix" "$tmp"/*.whl <<'EOF' || die "could not unpack the wheels into $prefix."
import os, sys, zipfile
prefix, wheels = sys.argv[1], sys.argv[2:]
for wheel in wheels:
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            name = info.filename
            if ".dist-info/" in name or ".alt." in os.path.basename(name):
                continue
            path = z.extract(info, prefix)
            mode = (info.external_attr >> 16) & 0o777
            if mode and not info.is_dir():
                os.chmod(path, mode)
EOF

[[ -e "$libdir/libnvrtc.so.13" ]] || die "the wheels did not contain nvidia/cu13/lib/libnvrtc.so.13."
printf '%s\n' "${missing[@]}" >>"$marker"

echo "install-cuda.sh: installed ${missing[*]} into $prefix"
echo "install-cuda.sh: NVRTC: $libdir/libnvrtc.so.13"
if [[ $want_nvcc == 1 ]]; then
    echo "install-cuda.sh: nvcc:  $prefix/nvidia/cu13/bin/nvcc"
fi
