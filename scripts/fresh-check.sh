#!/usr/bin/env bash
# Runs the README's two commands, copied from the README's "Two commands" section as they
# stand, in a fresh clone of HEAD: an empty CARGO_TARGET_DIR, no .cuda/, nothing installed
# (cargo install goes to a temporary root). On a machine without a GPU the first command must
# end with exit 3 and name the next step; with a GPU it must succeed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The first two ```sh blocks after "## Two commands", one command each.
mapfile -t commands < <(awk '
    /^## Two commands/ { on = 1; next }
    on && /^## / { exit }
    on && /^```sh/ { inblock = 1; next }
    on && inblock && /^```/ { inblock = 0; next }
    on && inblock && NF { print }
' "$root/README.md")
if [[ ${#commands[@]} -ne 2 ]]; then
    echo "fresh-check: expected 2 commands under '## Two commands' in README.md, found ${#commands[@]}" >&2
    exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
git clone -q "$root" "$tmp/clone"
cd "$tmp/clone"
# The clone's own (empty) target folder: trybuild's expected outputs name paths under it.
export CARGO_TARGET_DIR="$tmp/clone/target" CARGO_INSTALL_ROOT="$tmp/root"
export PATH="$tmp/root/bin:$PATH"
unset MEMTUNE_CUDA_PREFIX CUDA_HOME CUDA_PATH

echo "fresh-check: in $tmp/clone: ${commands[0]}"
set +e
bash -c "${commands[0]}" 2>&1 | tee "$tmp/first.log"
code=${PIPESTATUS[0]}
set -e
if [[ $code -eq 3 ]]; then
    grep -q "cargo tune probe --simulate" "$tmp/first.log" ||
        { echo "fresh-check: exit 3 (no GPU) without the next step" >&2; exit 1; }
    echo "fresh-check: first command: no GPU here, exit 3 with the next step (as documented)"
elif [[ $code -ne 0 ]]; then
    echo "fresh-check: first command failed with exit $code" >&2
    exit 1
fi
command -v cargo-tune >/dev/null || { echo "fresh-check: cargo-tune was not installed" >&2; exit 1; }

echo "fresh-check: in $tmp/clone: ${commands[1]}"
bash -c "${commands[1]}"
echo "fresh-check: both README commands did what the README says"
