#!/usr/bin/env bash
# From a fresh clone to a running local cluster: Node 24 toolchain, npm dependencies, the native services
# (Redis standalone + cluster mode, Kafka, LocalStack for S3/CloudWatch; CRAWL_LOCALSTACK=false skips it), the
# contract's topics, then a real crawl of the bundled demo site (served on 127.0.0.1) through the whole local
# cluster: kafka-monitor, Redis frontier, crawler worker processes, pages on <prefix>.crawled_firehose.
set -euo pipefail
cd "$(dirname "$0")/.."

eval "$(bash localstack/toolchain.sh)"
echo "node $(node --version)"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  echo "installing npm dependencies (from package-lock.json)"
  npm ci --no-audit --no-fund
fi
node bin/crawl-cluster.ts services up
node bin/crawl-cluster.ts topics create
node bin/crawl-cluster.ts demo "$@"
echo
# bin/crawl-cluster finds the toolchain's Node itself, so these work in a new shell too.
echo "Next: 'bin/crawl-cluster local' runs the cluster in the foreground; in a second terminal,"
echo "'bin/crawl-cluster crawl <url>' crawls a site and shows its pages, failures and a summary"
echo "(a site on this machine: start local with ALLOW_PRIVATE_NETWORKS=true)."
echo "Stop the services with: bin/crawl-cluster services down"
