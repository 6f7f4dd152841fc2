/**
 * The benchmarks run on the crawler image's Node (localstack/runtime/crawler-node.ts: CRAWLER_NODE, which
 * localstack/toolchain.sh sets): the raw loop, our workers and the Crawlee peer then share one runtime, the one the
 * fleet runs. An entry point started on another Node runs itself again on that one and exits with its code.
 * CRAWLER_NODE=$(command -v node) benches on the Node on PATH instead. An invalid CRAWLER_NODE stops the bench with its
 * message and exit code 2, as the CLI does for any invalid variable.
 */
import { spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { ConfigError } from '../../lib/errors.ts';
import { crawlerNode } from '../../localstack/runtime/crawler-node.ts';

export function onCrawlerNode(): void {
  let node: string;
  try {
    node = crawlerNode();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`bench: ${error.message}\n`);
    process.exit(2);
  }
  if (realpathSync(node) === realpathSync(process.execPath)) return;
  process.stderr.write(`bench: running on the crawler's Node, ${node}\n`);
  const r = spawnSync(node, [...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  if (r.error) throw new Error(`bench: could not start ${node}: ${r.error.message}`);
  process.exit(r.status ?? 1);
}
