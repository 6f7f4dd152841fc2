import type { Command } from 'commander';
import { config, quietLocalMetrics, type Variables } from '../lib/config/index.ts';
import { loadSpiders, pluginList } from '../lib/crawl/spiders/registry.ts';
import { CrawlClusterError } from '../lib/errors.ts';
import type { Log } from '../lib/ports.ts';
import { settlesWithin } from '../lib/timeout.ts';
import type { ConsumerHealth } from '../localstack/runtime/consumer-supervisor.ts';
import { errorFields, type RuntimeLog } from '../localstack/runtime/log.ts';
import { addLocalAwsOptions, applyLocalAwsOptions, type LocalAwsOptions } from './local-aws-options.ts';
import { integerOption } from './options.ts';
import type { Output } from './output.ts';

interface LocalOptions extends LocalAwsOptions {
  batchSize: number;
  batchingWindow: number;
  scheduleEvery: number;
  restPort: number;
  frontierPort: number;
  browserWorkers: number;
  jsonLogs?: boolean;
}

/** The exit code of `local` when a consumer stayed down past its restart bound, or shutdown overran its bound. */
const EXIT_FAILED = 1;
/** Bound of each connection close at shutdown: a broker that went away must not hold the process. */
const CLOSE_TIMEOUT_MS = 10_000;
/** After a failed start, the time the error has to be printed before `local` exits whatever still holds it. */
const START_FAILURE_EXIT_MS = 500;
/**
 * Shutdown's bound beyond SHUTDOWN_DEADLINE_MS (the workers' drain): the workers' kill grace, a running handler
 * call and the disconnects. Past it, `local` exits anyway.
 */
const SHUTDOWN_MARGIN_MS = 60_000;

/** `local`: the whole cluster in the foreground, with the real handlers, until Ctrl-C. */
export function registerLocal(program: Command, out: Output): void {
  const command = program
    .command('local')
    .description(
      'run the cluster on this machine with the same handlers as on AWS: kafka-monitor and redis-monitor fed from ' +
        'Kafka consumer groups, expire/reclaim/stats on timers, big bodies and metrics to LocalStack (needs `services up`)',
    );
  addLocalAwsOptions(command)
    .option('--batch-size <n>', 'records per MSK event, like the event source mapping', integerOption({ min: 1 }), 100)
    .option('--batching-window <ms>', 'max batching window in ms', integerOption({ min: 0 }), 500)
    .option(
      '--schedule-every <s>',
      'seconds between expire / reclaim / stats runs (AWS: 60)',
      integerOption({ min: 1 }),
      10,
    )
    .option(
      '--rest-port <port>',
      'port of the REST API on 127.0.0.1 (Scrapy Cluster: 5343); 0 disables it',
      integerOption({ min: 0, max: 65535 }),
      5343,
    )
    .option(
      '--frontier-port <port>',
      'port of the URL Frontier API (gRPC, urlfrontier.URLFrontier) on 127.0.0.1; 0 disables it',
      integerOption({ min: 0, max: 65535 }),
      7071,
    )
    .option(
      '--browser-workers <n>',
      'browser worker processes: they lease only spiderid "browser" and render pages in headless Chromium ' +
        '(BROWSER_CHROMIUM_PATH; docs/spiders-browser.md)',
      integerOption({ min: 0 }),
      0,
    )
    .option('--json-logs', 'log lines as JSON instead of human-readable text')
    .action(async (opts: LocalOptions) => {
      quietLocalMetrics();
      const json = Boolean(opts.jsonLogs || out.json);
      const log: RuntimeLog = (level, message, fields) => {
        if (json) {
          process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, message, ...fields })}\n`);
          return;
        }
        const extra = fields && Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : '';
        process.stderr.write(`${new Date().toISOString().slice(11, 23)} ${level.padEnd(5)} ${message}${extra}\n`);
      };
      // Imported here, after quietLocalMetrics: the handler modules build their Powertools objects on import.
      const { startLocalCluster } = await import('../localstack/runtime/cluster.ts');
      const { createMonitorDeps } = await import('../functions/shared/deps.ts');
      const { withLocalSecrets } = await import('../localstack/runtime/local-aws.ts');
      // Once, before any connection: REDIS_PASSWORD may come from LocalStack's Secrets Manager.
      const vars = await withLocalSecrets(applyLocalAwsOptions(config(), opts));
      const monitorLog: Log = {
        info: (m, f) => log('info', m, f),
        warn: (m, f) => log('warn', m, f),
        error: (m, f) => log('error', m, f),
      };
      let cluster: Awaited<ReturnType<typeof startLocalCluster>> | undefined;
      const consumers = (): ConsumerHealth[] => cluster?.consumers() ?? [];
      // Before anything starts: a broken CRAWLER_PLUGINS stops `local` with the module and the reason (exit code 2).
      // startLocalCluster checks again; the modules are imported once.
      if (vars.CRAWLER_WORKERS > 0) await loadSpiders(pluginList(vars.CRAWLER_PLUGINS));
      // Then the servers, so a port in use fails the command before the cluster has started.
      const rest =
        opts.restPort === 0
          ? undefined
          : await portInUse(startRest(vars, opts.restPort, monitorLog, log, consumers), opts.restPort, 'REST API');
      const frontier =
        opts.frontierPort === 0
          ? undefined
          : await portInUse(startFrontier(vars, opts.frontierPort, log, rest), opts.frontierPort, 'URL Frontier API');
      const closeServers = async () => {
        await bounded(rest?.close(), 'REST API', log);
        await bounded(frontier?.close(), 'URL Frontier API', log);
      };
      let deps: Awaited<ReturnType<typeof createMonitorDeps>> | undefined;
      let fatal: ((error: Error) => void) | undefined;
      const failed = new Promise<Error>((resolve) => {
        fatal = resolve;
      });
      try {
        deps = await createMonitorDeps('local', monitorLog, vars);
        cluster = await startLocalCluster({
          vars,
          context: deps.ctx,
          log,
          batchSize: opts.batchSize,
          maxBatchingWindowMs: opts.batchingWindow,
          scheduleEveryMs: opts.scheduleEvery * 1000,
          browserWorkers: opts.browserWorkers,
          // The workers' JSON lines in this log's format and on its stream (stderr), not JSON on stdout.
          workerOutput: 'log',
          onBatch: (fn, s) =>
            log(s.threw || s.failures > 0 ? 'warn' : 'info', `${fn}: ${s.records} records in ${s.durationMs} ms`, {
              ...(s.failures > 0 ? { failures: s.failures } : {}),
              ...(s.threw ? { threw: true } : {}),
            }),
          // A monitor that no longer reads its topic: stop, and exit non-zero so whatever runs `local` restarts it.
          onFatal: (error) => fatal?.(error),
        });
      } catch (error) {
        // A cluster that cannot start (LocalStack or Kafka not answering) closes what it opened, each close bounded,
        // and exits soon after the error is printed: kafkajs keeps reconnect timers and sockets of a broker it never
        // reached, and the process would otherwise hang after the error.
        await closeServers();
        await bounded(deps?.close(), 'monitor connections', log);
        setTimeout(() => process.exit(process.exitCode ?? EXIT_FAILED), START_FAILURE_EXIT_MS).unref();
        throw startFailure(error, vars);
      }
      log('info', 'press Ctrl-C to stop');
      const signalled = new Promise<undefined>((resolve) => {
        process.once('SIGINT', () => resolve(undefined));
        process.once('SIGTERM', () => resolve(undefined));
      });
      const error = await Promise.race([signalled, failed]);
      if (error) log('error', `stopping: ${error.message}`);
      else log('info', 'stopping: finishing in-flight batches');
      // A second signal means the clean stop is not wanted (or stuck): leave at once.
      const force = () => {
        log('warn', 'stopping: second signal; exiting now');
        process.exit(EXIT_FAILED);
      };
      process.once('SIGINT', force);
      process.once('SIGTERM', force);
      const shutdownMs = vars.SHUTDOWN_DEADLINE_MS + SHUTDOWN_MARGIN_MS;
      const overrun = setTimeout(() => {
        log('error', `stopping: shutdown did not finish within ${shutdownMs / 1000} s; exiting`);
        process.exit(EXIT_FAILED);
      }, shutdownMs);
      await closeServers();
      await cluster.stop();
      await bounded(deps.close(), 'monitor connections', log);
      clearTimeout(overrun);
      log('info', 'stopped');
      // Exit now, not when the event loop empties: a kafkajs client that lost its broker can keep a reconnect timer
      // or socket alive after its disconnect, and `local` then hung after "stopped" until SIGKILL.
      process.exit(error ? EXIT_FAILED : 0);
    });
}

/**
 * Why `local` did not start, for a person: what failed, at which address, and what to do. A Kafka that cannot be
 * reached (kafkajs's errors are named `KafkaJS...`) is named with its brokers.
 */
function startFailure(error: unknown, vars: Pick<Variables, 'KAFKA_BROKERS'>): Error {
  const e = error as Error;
  if (typeof e?.name === 'string' && e.name.startsWith('KafkaJS')) {
    return new CrawlClusterError(
      `local did not start: cannot reach Kafka at ${vars.KAFKA_BROKERS} (KAFKA_BROKERS): ${e.message}. ` +
        'Start the local services with `crawl-cluster services up`, or set KAFKA_BROKERS to a broker that runs.',
      { cause: error },
    );
  }
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * A server that cannot listen because its port is taken: most often by another `local`, which says so, rather than
 * a bare `EADDRINUSE`.
 * @throws CrawlClusterError naming the port, what likely holds it, and the options that move it
 */
async function portInUse<T>(starting: Promise<T>, port: number, what: string): Promise<T> {
  try {
    return await starting;
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    if (e.code !== 'EADDRINUSE' && !/EADDRINUSE|address already in use|No address added/i.test(String(e.message))) {
      throw error;
    }
    throw new CrawlClusterError(
      `cannot listen on 127.0.0.1:${port} for the ${what}: the port is in use, most likely by another \`crawl-cluster local\` (stop it with Ctrl-C in its terminal). ` +
        'To run a second one anyway, give it other ports: --rest-port and --frontier-port (0 turns a server off).',
      { cause: error },
    );
  }
}

/** Waits for a close at most {@link CLOSE_TIMEOUT_MS}; a close that fails or overruns is logged, never thrown. */
async function bounded(work: Promise<void> | undefined, what: string, log: RuntimeLog): Promise<void> {
  if (work === undefined) return;
  const failure = work.then(
    () => undefined,
    (error: unknown) => ({ error }),
  );
  if (!(await settlesWithin(failure, CLOSE_TIMEOUT_MS))) {
    log('warn', `stopping: ${what} did not close within ${CLOSE_TIMEOUT_MS / 1000} s`);
    return;
  }
  const failed = await failure;
  if (failed) log('warn', `stopping: closing ${what} failed`, errorFields(failed.error));
}

/**
 * The REST API on 127.0.0.1:`port` (localstack/runtime/rest-server.ts), over connections of its own, closed with it.
 * Its health report counts Kafka as disconnected while one of `consumers` is down (runtime/consumer-health.ts).
 */
async function startRest(
  vars: Variables,
  port: number,
  monitorLog: Log,
  log: RuntimeLog,
  consumers: () => readonly ConsumerHealth[],
): Promise<{ close(): Promise<void> }> {
  const { createRestDeps } = await import('../functions/rest/deps.ts');
  const { startRestServer } = await import('../localstack/runtime/rest-server.ts');
  const { withConsumerHealth } = await import('../localstack/runtime/consumer-health.ts');
  const deps = createRestDeps('rest', monitorLog, vars, { waitForResponseMs: vars.WAIT_FOR_RESPONSE_TIME * 1000 });
  try {
    const context = { ...deps.ctx, health: withConsumerHealth(deps.ctx.health, consumers) };
    const server = await startRestServer({
      context,
      port,
      log,
      maxInFlight: vars.REST_MAX_IN_FLIGHT,
      maxConnections: vars.REST_MAX_CONNECTIONS,
      retryAfterSec: vars.REST_RETRY_AFTER,
    });
    return {
      async close() {
        await server.close();
        await deps.close();
      },
    };
  } catch (error) {
    await deps.close();
    throw error;
  }
}

/** The URL Frontier API on 127.0.0.1:`port` (localstack/runtime/url-frontier.ts); on failure closes `rest` too. */
async function startFrontier(
  vars: Variables,
  port: number,
  log: RuntimeLog,
  rest: { close(): Promise<void> } | undefined,
): Promise<{ close(): Promise<void> }> {
  const { startLocalUrlFrontier } = await import('../localstack/runtime/url-frontier.ts');
  try {
    return await startLocalUrlFrontier({ vars, port, log });
  } catch (error) {
    await rest?.close();
    throw error;
  }
}
