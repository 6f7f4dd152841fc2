/**
 * REST API under load (issue 48 item 3): N busy keep-alive clients (BENCH_REST_CLIENTS, 2,000) send `GET /` to
 * the local REST server as fast as it answers, from a process of their own (bench/lib/rest-load.ts), while a
 * separate probe here opens a fresh connection every BENCH_REST_PROBE_EVERY_MS (100) ms and sends `GET /`, as a
 * health checker would.
 *
 * - The server runs in a child process (bench/lib/rest-serve.ts) over the bench Redis and the local Kafka, with
 *   the REST_* bounds of the environment; BENCH_REST_ROOT runs another checkout's server (a same-run baseline).
 * - Load for BENCH_REST_LOAD_S (30) s; probes of its first 3 s are left out (connections still opening). Then
 *   the load process is killed (its connections close at once) and the probe runs every 100 ms until a 200:
 *   `recovery_s` is the time from the kill to that answer.
 * - A probe counts as answered within 1 s when it got a 200 or a 503 (a refusal with Retry-After) by then; one
 *   without an answer after 10 s counts as a timeout. Peak RSS is the server's VmHWM.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { config } from '../../lib/config/index.ts';
import { envInt } from '../lib/env.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';
import { percentile, round } from '../lib/timing.ts';

export const description = 'REST API: a probe’s GET / while N busy keep-alive clients load the local server';

export const targets: Target[] = [
  { metric: 'probe_within_1s_share', op: '>=', value: 0.9, label: 'probes answered ≤ 1 s' },
  { metric: 'recovery_s', op: '<=', value: 5, label: 's to a 200 after load' },
  { metric: 'server_peak_rss_mb', op: '<=', value: 600, label: 'server peak RSS MB' },
];

export const headline: [string, string][] = [
  ['clients', 'busy clients'],
  ['probe_within_1s_share', 'probes ≤ 1 s (200/503)'],
  ['probe_p50_ms', 'probe p50 ms'],
  ['probe_p90_ms', 'probe p90 ms'],
  ['probe_p99_ms', 'probe p99 ms'],
  ['probe_200_share', 'probes 200'],
  ['probe_503_share', 'probes 503'],
  ['probe_200_green_share', '200s GREEN'],
  ['probe_timeouts', 'probe timeouts'],
  ['recovery_s', 's to 200 after load'],
  ['server_peak_rss_mb', 'server peak RSS MB'],
  ['server_cpu_cores', 'server CPU (cores)'],
  ['load_rps', 'load answers/s'],
  ['load_503_share', 'load 503 share'],
];

const BENCH_LIB = join(dirname(fileURLToPath(import.meta.url)), '../lib');
const PROBE_TIMEOUT_MS = 10_000;
const SETTLE_MS = 3000;

interface Probe {
  /** When it was sent (ms since the load started). */
  at: number;
  ms: number;
  /** HTTP status, or 0 for no answer (timeout or connection error). */
  status: number;
  /** node_health of a 200. */
  health?: string;
}

/** One `GET /` on a connection of its own; never rejects. `health` is the report's node_health of a 200. */
function probe(url: string): Promise<{ ms: number; status: number; health?: string }> {
  const started = performance.now();
  return new Promise((resolve) => {
    let done = false;
    const finish = (status: number, health?: string) => {
      if (done) return;
      done = true;
      resolve({ ms: performance.now() - started, status, health });
    };
    const req = request(`${url}/`, { agent: false, timeout: PROBE_TIMEOUT_MS }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.once('end', () => {
        let health: string | undefined;
        try {
          health = (JSON.parse(body) as { node_health?: string }).node_health;
        } catch {
          health = undefined;
        }
        finish(res.statusCode ?? 0, health);
      });
      res.once('error', () => finish(0));
    });
    req.once('timeout', () => {
      req.destroy();
      finish(0);
    });
    req.once('error', () => finish(0));
    req.end();
  });
}

/** Starts a child on this Node and resolves with it and its first stdout line parsed. */
async function child(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  onLine: (value: Record<string, unknown>) => void,
): Promise<ChildProcess> {
  const proc = spawn(process.execPath, [join(BENCH_LIB, script), ...args], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const first = new Promise<void>((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`${script} exited (${code}) before it was ready`)));
    createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      onLine(JSON.parse(line) as Record<string, unknown>);
      resolve();
    });
  });
  await first;
  return proc;
}

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : Number.NaN;
}

/** CPU seconds the process has used (user + system), from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the command name.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function exited(proc: ChildProcess): Promise<void> {
  return proc.exitCode !== null || proc.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => proc.once('exit', () => resolve()));
}

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const clients = envInt('BENCH_REST_CLIENTS', 2000);
  const loadMs = envInt('BENCH_REST_LOAD_S', 30) * 1000;
  const probeEveryMs = envInt('BENCH_REST_PROBE_EVERY_MS', 100);
  const root = process.env.BENCH_REST_ROOT ?? '';
  const vars = config();
  const redis = await ctx.redis();
  const [redisHost, redisPort] = redis.address.split(':');
  for (const [k, v] of Object.entries({
    clients,
    load_s: loadMs / 1000,
    probe_every_ms: probeEveryMs,
    server_root: root || 'this checkout',
    REST_MAX_IN_FLIGHT: vars.REST_MAX_IN_FLIGHT,
    REST_MAX_CONNECTIONS: vars.REST_MAX_CONNECTIONS,
  }))
    ctx.input(k, v);
  ctx.note('three processes on one host: server, load clients, probe (this one); they share its cores');
  ctx.note(
    `load average at start: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );

  const env = {
    ...process.env,
    REDIS_HOST: redisHost,
    REDIS_PORT: redisPort,
    REDIS_CLUSTER: 'false',
    REDIS_KEY_PREFIX: `bench-rest-${process.pid}`,
    KAFKA_BROKERS: `127.0.0.1:${vars.CRAWL_KAFKA_PORT}`,
    LOG_LEVEL: 'WARN',
  };
  let serverLogs: Record<string, number> = {};
  let url = '';
  const server = await child('rest-serve.ts', [], env, (line) => {
    if (typeof line.url === 'string') url = line.url;
    if (line.logs) serverLogs = line.logs as Record<string, number>;
  });
  const serverPid = server.pid as number;
  try {
    for (let i = 0; i < 5; i++) await probe(url);
    const idle = await probe(url);
    ctx.progress(
      `server up at ${url}: idle probe ${Math.round(idle.ms)} ms (${idle.status}), RSS ${Math.round(statusKb(serverPid, 'VmRSS') / 1024)} MB`,
    );
    const rssBeforeMb = statusKb(serverPid, 'VmRSS') / 1024;

    let loadCounts: { at: number; counts: Record<string, number> }[] = [];
    const load = await child('rest-load.ts', [url, String(clients), '/'], process.env, (line) => {
      loadCounts.push(line as { at: number; counts: Record<string, number> });
    });
    const loadStart = Date.now();
    const cpuAtStart = cpuSeconds(serverPid);
    ctx.progress(`${clients} busy clients started`);
    const probes: Promise<Probe>[] = [];
    let peakRssKb = 0;
    while (Date.now() - loadStart < loadMs) {
      const at = Date.now() - loadStart;
      probes.push(probe(url).then((p) => ({ ...p, at })));
      peakRssKb = Math.max(peakRssKb, statusKb(serverPid, 'VmRSS'));
      if (at % 5000 < probeEveryMs) {
        const last = loadCounts.at(-1)?.counts ?? {};
        ctx.progress(
          `${Math.round(at / 1000)} s: RSS ${Math.round(peakRssKb / 1024)} MB peak, load ${JSON.stringify(last)}`,
        );
      }
      await sleep(probeEveryMs);
    }
    load.kill('SIGKILL');
    const loadEnd = Date.now();
    const serverCpu = (cpuSeconds(serverPid) - cpuAtStart) / ((loadEnd - loadStart) / 1000);
    await exited(load);
    let recoveryMs = Number.NaN;
    for (;;) {
      const p = await probe(url);
      if (p.status === 200) {
        recoveryMs = Date.now() - loadEnd;
        break;
      }
      if (Date.now() - loadEnd > 60_000) break;
      await sleep(100);
    }
    const measured = (await Promise.all(probes)).filter((p) => p.at >= SETTLE_MS);
    const peakHwmMb = statusKb(serverPid, 'VmHWM') / 1024;

    // From the load's last report before the settle point (else its first after it) to its last report: a loaded
    // machine may report once or not at all within a short load's measured window.
    const first =
      loadCounts.filter((l) => l.at - loadStart < SETTLE_MS).at(-1) ??
      loadCounts.find((l) => l.at - loadStart >= SETTLE_MS);
    const last = loadCounts.at(-1);
    const delta = (key: string) => (last?.counts[key] ?? 0) - (first?.counts[key] ?? 0);
    const keys = new Set(Object.keys(last?.counts ?? {}));
    const answered = [...keys].filter((k) => /^\d+$/.test(k)).reduce((sum, k) => sum + delta(k), 0);
    const seconds = first && last ? (last.at - first.at) / 1000 : Number.NaN;
    loadCounts = [];

    const latencies = measured.map((p) => p.ms).sort((a, b) => a - b);
    const p90Of = (status: number) =>
      round(
        percentile(
          measured
            .filter((p) => p.status === status)
            .map((p) => p.ms)
            .sort((a, b) => a - b),
          90,
        ),
        1,
      );
    const share = (test: (p: Probe) => boolean) => round(measured.filter(test).length / measured.length, 3);
    server.kill('SIGTERM');
    await exited(server);
    const statsWarnings = Object.entries(serverLogs)
      .filter(([message]) => message.includes('stats'))
      .reduce((sum, [, n]) => sum + n, 0);
    for (const [message, n] of Object.entries(serverLogs)) ctx.note(`server log ×${n}: ${message}`);
    return {
      clients,
      probes: measured.length,
      probe_within_1s_share: share((p) => (p.status === 200 || p.status === 503) && p.ms <= 1000),
      probe_p50_ms: round(percentile(latencies, 50), 1),
      probe_p90_ms: round(percentile(latencies, 90), 1),
      probe_p99_ms: round(percentile(latencies, 99), 1),
      probe_200_share: share((p) => p.status === 200),
      probe_200_green_share: round(
        measured.filter((p) => p.health === 'GREEN').length / measured.filter((p) => p.status === 200).length,
        3,
      ),
      probe_503_share: share((p) => p.status === 503),
      probe_timeouts: measured.filter((p) => p.status === 0).length,
      probe_200_p90_ms: p90Of(200),
      probe_503_p90_ms: p90Of(503),
      server_cpu_cores: round(serverCpu, 2),
      idle_probe_ms: round(idle.ms, 1),
      recovery_s: round(recoveryMs / 1000, 2),
      server_rss_before_mb: round(rssBeforeMb, 0),
      server_peak_rss_mb: round(Math.max(peakHwmMb, peakRssKb / 1024), 0),
      load_rps: round(answered / seconds, 0),
      load_503_share: round(delta('503') / answered, 3),
      load_errors: [...keys].filter((k) => !/^\d+$/.test(k)).reduce((sum, k) => sum + delta(k), 0),
      stats_warnings: statsWarnings,
    };
  } finally {
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  }
}
