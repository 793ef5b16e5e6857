#!/usr/bin/env bash
# Unpacks a GPU run's results (gpu-results.tgz from scripts/gpu-run.sh) into
# benchmarks/results/<date>-<gpu model>-<uuid prefix>/ for committing.
set -euo pipefail
tgz="${1:?usage: scripts/gpu-results.sh gpu-results.tgz [NAME]}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar xzf "$tgz" -C "$tmp"
# The CSV's second line: name, uuid, ...
IFS=, read -r name uuid _ < <(sed -n 3p "$tmp/summary.txt")
model=$(echo "$name" | tr -cs 'A-Za-z0-9' '-' | sed 's/^-//; s/-$//' | tr 'A-Z' 'a-z')
short=$(echo "$uuid" | tr -d ' ' | cut -c5-12)
dest="$root/benchmarks/results/${2:-$(date -u +%Y-%m-%d)-$model-$short}"
mkdir -p "$dest"
cp -r "$tmp"/. "$dest"/
echo "$dest"
