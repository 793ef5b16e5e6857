#!/usr/bin/env bash
# Unpacks a GPU run's results (gpu-results.tgz from scripts/gpu-run.sh) into
# benchmarks/results/<gpu model>/<date>-<uuid prefix>/ for committing (the model's README.md
# holds the headline table; update it by hand).
set -euo pipefail
tgz="${1:?usage: scripts/gpu-results.sh gpu-results.tgz [NAME]}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar xzf "$tgz" -C "$tmp"
# The CSV's second line: name, uuid, ...
IFS=, read -r name uuid _ < <(sed -n 3p "$tmp/summary.txt")
# "NVIDIA H100 80GB HBM3" -> h100, "NVIDIA H200" -> h200
model=$(echo "$name" | tr -cs 'A-Za-z0-9' '-' | sed 's/^-//; s/-$//' | tr 'A-Z' 'a-z' \
    | sed -E 's/^nvidia-//; s/-[0-9]+gb(-.*)?$//')
short=$(echo "$uuid" | tr -d ' ' | cut -c5-12)
dest="$root/benchmarks/results/$model/${2:-$(date -u +%Y-%m-%d)-$short}"
mkdir -p "$dest"
cp -r "$tmp"/. "$dest"/
echo "$dest"
