/**
 * `crawl-cluster local`'s log as a user sees it: one format on one stream per mode. The crawler workers log
 * Powertools JSON (INFO on stdout) as on ECS; `local` writes their lines through its own log, text by default and
 * JSON with --json-logs, all on stderr, and nothing on stdout.
 */
import { describe, expect, it } from 'vitest';
import { config } from '../../lib/config/index.ts';
import { startCli } from '../helpers/cli.ts';
import { uniqueName, waitUntil } from '../helpers/services.ts';

/** `local` without LocalStack, servers or monitors' noise, with one crawler worker, until it logs `until`. */
async function runLocalUntil(extra: string[], until: string): Promise<{ stdout: string; stderr: string }> {
  const base = config();
  const run = startCli(
    ['local', '--no-localstack', '--rest-port', '0', '--frontier-port', '0', ...extra],
    {
      KAFKA_BROKERS: `127.0.0.1:${base.CRAWL_KAFKA_PORT}`,
      KAFKA_TOPIC_PREFIX: uniqueName('e2e'),
      KAFKA_TOPIC_PARTITIONS: '1',
      REDIS_HOST: '127.0.0.1',
      REDIS_PORT: String(base.CRAWL_REDIS_CLUSTER_PORT),
      REDIS_CLUSTER: 'true',
      REDIS_KEY_PREFIX: uniqueName('k'),
      CRAWLER_WORKERS: '1',
      LOG_LEVEL: 'INFO',
    },
    90_000,
  );
  try {
    const said = (text: string) => () => {
      if (run.child.exitCode !== null) throw new Error(`local exited ${run.child.exitCode}: ${run.stderr()}`);
      return run.stderr().includes(text);
    };
    await waitUntil('local to start', said('press Ctrl-C to stop'), 60_000);
    // The worker starts before the monitors' consumers join: its first line is in by now, or soon.
    await waitUntil(`local to log "${until}"`, said(until), 15_000);
    run.child.kill('SIGINT');
    expect((await run.exited).code).toBe(0);
  } finally {
    if (run.child.exitCode === null) run.child.kill('SIGKILL');
  }
  return { stdout: run.stdout(), stderr: run.stderr() };
}

const linesOf = (text: string) => text.split('\n').filter((l) => l !== '');

describe('crawl-cluster local: the crawler workers log in local’s format, on stderr', () => {
  it('text by default: the worker’s lines are text lines named after it, and stdout stays empty', async () => {
    const { stdout, stderr } = await runLocalUntil([], 'crawler worker 0: crawler started');

    expect(stdout).toBe('');
    const lines = linesOf(stderr);
    for (const line of lines) expect(line).toMatch(/^\d\d:\d\d:\d\d\.\d{3} (info |warn |error) \S/);
    expect(lines.some((l) => / info {2}crawler worker 0: crawler started \{.*"node":"v\d+/.test(l))).toBe(true);
    expect(lines.some((l) => l.includes('crawler worker 0: stopped'))).toBe(true);
  });

  it('--json-logs: every stderr line is one JSON log line, the worker’s too, and stdout stays empty', async () => {
    const { stdout, stderr } = await runLocalUntil(['--json-logs'], '"message":"crawler worker 0: crawler started"');

    expect(stdout).toBe('');
    const records = linesOf(stderr).map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const r of records) expect(Object.keys(r).slice(0, 3)).toEqual(['time', 'level', 'message']);
    const started = records.find((r) => r.message === 'crawler worker 0: crawler started');
    expect(started).toMatchObject({ level: 'info', node: expect.stringMatching(/^v\d+/) });
    expect(started).not.toHaveProperty('service');
  });
});
