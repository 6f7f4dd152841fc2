/**
 * A child process of bench/scenarios/sizes-rest.ts: the REST server of `crawl-cluster local` alone, over the REST
 * deps of the configuration (the scenario sets REDIS_*, KAFKA_BROKERS and REDIS_KEY_PREFIX in its environment) and
 * the REST_* bounds. With BENCH_REST_ROOT set it runs that checkout's server instead (a same-run baseline of another
 * commit; a server without the bounds ignores them).
 *
 * Prints one JSON line `{"url"}` once it listens and, on SIGTERM, one `{"logs"}` line (warnings and errors by
 * message, with counts) before it exits.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = process.env.BENCH_REST_ROOT || resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const load = (path: string) => import(pathToFileURL(join(root, path)).href);

const { config } = (await load('lib/config/index.ts')) as typeof import('../../lib/config/index.ts');
const { createRestDeps } = (await load('functions/rest/deps.ts')) as typeof import('../../functions/rest/deps.ts');
const { startRestServer } = (await load(
  'localstack/runtime/rest-server.ts',
)) as typeof import('../../localstack/runtime/rest-server.ts');

const logs = new Map<string, number>();
const note = (level: string, message: string) => {
  if (level === 'info') return;
  const key = `${level}: ${message}`;
  logs.set(key, (logs.get(key) ?? 0) + 1);
};
const vars = config();
const deps = createRestDeps(
  'rest-bench',
  {
    info: (m) => note('info', m),
    warn: (m) => note('warn', m),
    error: (m) => note('error', m),
  },
  vars,
  { waitForResponseMs: vars.WAIT_FOR_RESPONSE_TIME * 1000 },
);
const server = await startRestServer({
  context: deps.ctx,
  port: 0,
  log: (level, message) => note(level, message),
  maxInFlight: vars.REST_MAX_IN_FLIGHT,
  maxConnections: vars.REST_MAX_CONNECTIONS,
  retryAfterSec: vars.REST_RETRY_AFTER,
});
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
process.once('SIGTERM', () => {
  process.stdout.write(`${JSON.stringify({ logs: Object.fromEntries(logs) })}\n`, () => process.exit(0));
});
