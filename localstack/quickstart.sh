#!/usr/bin/env bash
# From a fresh clone to a running local cluster: Node 24 toolchain, npm dependencies, the native services
# (Redis standalone + cluster mode, Kafka), and the contract's topics. The crawl itself needs the crawler
# fleet, which has not landed yet: this script says so instead of pretending.
set -euo pipefail
cd "$(dirname "$0")/.."

eval "$(bash localstack/toolchain.sh)"
echo "node $(node --version)"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  echo "installing npm dependencies (from package-lock.json)"
  npm ci --no-audit --no-fund 2>/dev/null || npm install --no-audit --no-fund
fi
node bin/crawl-cluster.ts services up
node bin/crawl-cluster.ts topics create
echo
echo "The local services run and the topics exist (see 'node bin/crawl-cluster.ts services status')."
echo "Not yet: the crawler fleet and the monitors have not landed, so no pages are crawled yet."
echo "Stop the services with: node bin/crawl-cluster.ts services down"
