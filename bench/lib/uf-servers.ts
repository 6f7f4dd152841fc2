/**
 * The URL Frontier servers the bench scenarios measure (frontier.ts, sizes-uf.ts): ours as its own process, the
 * crawler-commons reference service from its jar, and the one unary call both scenarios make.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import { freePort, portOpen } from '../../localstack/services/processes.ts';

/** A URL Frontier client with its methods looked up by name. */
export type Client = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

const CLI = fileURLToPath(new URL('../../bin/crawl-cluster.ts', import.meta.url));

/** `crawl-cluster frontier serve` in a child process over the Redis at `redisAddress`: its address and a stop. */
export async function serveAsProcess(
  redisAddress: string,
  prefix: string,
): Promise<{ address: string; pid: number | undefined; close: () => Promise<void> }> {
  const [host, port] = redisAddress.split(':') as [string, string];
  const child = spawn(process.execPath, [CLI, 'frontier', 'serve', '--port', '0', '--prefix', prefix, '--json'], {
    env: { ...process.env, REDIS_HOST: host, REDIS_PORT: port, REDIS_CLUSTER: 'false', LOG_LEVEL: 'WARN' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8');
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`frontier serve did not start in 30 s: ${out}`)), 30_000);
    child.once('exit', (code) => reject(new Error(`frontier serve exited ${code}: ${out}`)));
    child.stdout.on('data', (d: string) => {
      out += d;
      const m = out.match(/"address":\s*"([^"]+)"/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1] as string);
      }
    });
  });
  return {
    address,
    pid: child.pid,
    async close() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** One unary call. */
export function unaryCall<Res>(client: Client, method: string, req: object): Promise<Res> {
  return new Promise((resolve, reject) => {
    (client[method] as (req: object, cb: (e: grpc.ServiceError | null, res: Res) => void) => void).call(
      client,
      req,
      (error, res) => (error ? reject(error) : resolve(res)),
    );
  });
}

/**
 * The crawler-commons reference service from a jar built outside this repository
 * (`BENCH_FRONTIER_REFERENCE_JAR`, e.g. `service/target/urlfrontier-service-2.6.jar` of a clone of
 * crawler-commons/url-frontier built with `mvn package`), on a free port with its RocksDB in a temporary directory.
 */
export async function startReference(
  jar: string,
): Promise<{ address: string; pid: number | undefined; close: () => Promise<void> }> {
  if (!existsSync(jar)) throw new Error(`BENCH_FRONTIER_REFERENCE_JAR: no file ${jar}`);
  const dir = mkdtempSync(join(tmpdir(), 'uf-reference-'));
  const port = await freePort();
  const child = spawn('java', ['-jar', jar, '-p', String(port)], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => {
    err = (err + d).slice(-2000);
  });
  const deadline = Date.now() + 60_000;
  while (!(await portOpen(port))) {
    if (child.exitCode !== null) throw new Error(`reference service exited ${child.exitCode}: ${err}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`reference service did not listen on ${port} in 60 s: ${err}`);
    }
    await sleep(250);
  }
  return {
    address: `127.0.0.1:${port}`,
    pid: child.pid,
    async close() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * PutURLs of `n` items on one stream (`item(i)`, a DiscoveredURLItem or the like), at most `window` unacked, writing
 * again once half the window is acked or the stream drains: the ack tally by status.
 */
export function streamPutUrls(
  client: Client,
  n: number,
  item: (i: number) => object,
  window: number,
  progress: (m: string) => void,
): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const call = (client.PutURLs as () => grpc.ClientDuplexStream<object, { status: string }>).call(client);
    const tally: Record<string, number> = {};
    let sent = 0;
    let acked = 0;
    let lastReport = Date.now();
    let draining = false;
    const pump = () => {
      draining = false;
      while (sent < n && sent - acked < window) {
        const ok = call.write(item(sent));
        sent++;
        if (!ok) {
          draining = true;
          call.once('drain', pump);
          return;
        }
      }
      if (sent === n) call.end();
    };
    call.on('data', (ack: { status: string }) => {
      acked++;
      tally[ack.status] = (tally[ack.status] ?? 0) + 1;
      if (Date.now() - lastReport > 5000) {
        lastReport = Date.now();
        progress(`  acked ${acked.toLocaleString('en-US')}`);
      }
      if (sent < n && !draining && sent - acked <= window / 2) pump();
    });
    call.on('error', reject);
    call.on('end', () => (acked === n ? resolve(tally) : reject(new Error(`PutURLs: ${acked} acks for ${n} items`))));
    pump();
  });
}
