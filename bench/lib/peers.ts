/**
 * The peers of the crawl scenario (issue 15): Crawlee, Scrapy and scrapy-redis, each in a child process of
 * its own, crawling the same fixture site (its host names resolved through the site's host map) from the
 * same seeds to the same maxdepth at the same concurrency, so that /proc gives each one's CPU time and peak
 * RSS apart from the bench's.
 *
 * The child protocol (one line each way, bench/peers/*): stdin gets the JSON options; the child runs an
 * unmeasured warm-up crawl (to `warmMaxdepth` from the warm-up seed) and prints `ready`; the parent starts its CPU
 * meter and writes `go`; the child crawls and prints `done <json>` (pages, first/last page time...) and
 * waits; the parent stops the meter, reads the child's peak RSS, and writes `exit`. Other stdout lines are
 * progress.
 *
 * Scrapy and scrapy-redis run from a virtualenv of their own, `bench/.venv` (git-ignored), built from the
 * pinned bench/peers/requirements.txt on first use and again when that file or the Python changes.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CpuMeter } from './cpu.ts';
import { BENCH_DIR } from './results.ts';

export type PeerName = 'crawlee' | 'scrapy' | 'scrapy-redis';

export const PEERS: readonly PeerName[] = ['crawlee', 'scrapy', 'scrapy-redis'];

const PEERS_DIR = join(BENCH_DIR, 'peers');
const VENV = join(BENCH_DIR, '.venv');
const REQUIREMENTS = join(PEERS_DIR, 'requirements.txt');

export interface PeerOptions {
  seeds: string[];
  /** Seed of the unmeasured warm-up crawl, and its maxdepth (site-config.ts `benchWarmupMaxdepth`). */
  warmSeeds: string[];
  warmMaxdepth: number;
  maxdepth: number;
  /** Fixed concurrency; 0 leaves the peer its own defaults (Crawlee's AutoscaledPool, Scrapy's 16 / 8 per domain). */
  concurrency: number;
  /** Scrapy: AutoThrottle on. */
  autothrottle?: boolean;
  /** The peer reports every page's epoch ms in its done line (`detail.times`). */
  keepTimes?: boolean;
  /** Host name → address (the site's host map). */
  hostMap: Record<string, string>;
  /**
   * Scrapy: the measured crawl closes after this many seconds (its CLOSESPIDER_TIMEOUT; its done line's `finish` is
   * then `closespider_timeout`): a peer whose defaults take tens of minutes on a web with dead hosts is measured on
   * what it crawled by then. 0 or absent: no limit.
   */
  closeAfterS?: number;
  /** scrapy-redis: the bench Redis and a key prefix of this run. */
  redisUrl?: string;
  redisPrefix?: string;
}

export interface PeerResult {
  peer: PeerName;
  pages: number;
  /** Pages answered 200. */
  ok: number;
  failed: number;
  seconds: number;
  pagesPerS: number;
  /** CPU seconds of the measured crawl per process kind: `crawler` (the peer's process), `redis`, `site`. */
  cpu: Record<string, number>;
  /** The peer process's peak resident set (VmHWM), MiB. */
  peakRssMb: number;
  /** What else the child reported (Scrapy stats...). */
  detail: Record<string, unknown>;
}

/** A line of /proc/<pid>/status in KiB (VmHWM, VmRSS), 0 when unknown. */
export function procStatusKb(pid: number | undefined, field: 'VmHWM' | 'VmRSS'): number {
  if (!pid) return 0;
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** The Python that builds the virtualenv: BENCH_PYTHON, else python3.11, else python3. */
function findPython(): string {
  const candidates = process.env.BENCH_PYTHON ? [process.env.BENCH_PYTHON] : ['python3.11', 'python3'];
  for (const c of candidates) {
    try {
      execFileSync(c, ['-c', 'import venv'], { stdio: 'ignore' });
      return c;
    } catch {}
  }
  throw new Error(`no Python with venv found (tried ${candidates.join(', ')}; set BENCH_PYTHON)`);
}

/** Builds bench/.venv from bench/peers/requirements.txt unless it is up to date; returns its python. */
function ensurePeerVenv(progress: (message: string) => void): string {
  const python = findPython();
  const version = execFileSync(python, ['-c', 'import sys; print(sys.version)'], { encoding: 'utf8' }).trim();
  const stamp = createHash('sha256').update(readFileSync(REQUIREMENTS)).update(version).digest('hex');
  const stampFile = join(VENV, '.bench-stamp');
  const bin = join(VENV, 'bin', 'python');
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp && existsSync(bin)) return bin;
  progress(`building ${VENV} from bench/peers/requirements.txt with ${python} (first run only, ~1 min)`);
  rmSync(VENV, { recursive: true, force: true });
  execFileSync(python, ['-m', 'venv', VENV], { stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync(bin, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', REQUIREMENTS], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  writeFileSync(stampFile, stamp);
  return bin;
}

function command(peer: PeerName, progress: (message: string) => void): [string, string[]] {
  if (peer === 'crawlee') return [process.execPath, [join(PEERS_DIR, 'crawlee.ts')]];
  return [ensurePeerVenv(progress), ['-u', join(PEERS_DIR, 'scrapy_peer.py')]];
}

interface DoneLine {
  pages: number;
  ok?: number;
  failed: number;
  seconds: number;
  pagesPerS: number;
  error?: string;
  [key: string]: unknown;
}

/**
 * Runs one peer crawl (warm-up, then the measured crawl) in its child process. `pids` names the other
 * processes whose CPU counts (the Redis of scrapy-redis, the site).
 */
export async function runPeer(
  peer: PeerName,
  o: PeerOptions,
  pids: Record<string, number[]>,
  progress: (message: string) => void,
  timeoutS = 900,
): Promise<PeerResult> {
  const [cmd, args] = command(peer, progress);
  const child: ChildProcess = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'], env: process.env });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const meter = new CpuMeter(() => ({ crawler: child.pid ? [child.pid] : [], ...pids }));
  const lines = createInterface({ input: child.stdout as NonNullable<ChildProcess['stdout']> });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutS * 1000);
  let done: DoneLine | undefined;
  let cpu: Record<string, number> = {};
  let peakKb = 0;
  try {
    const mode = peer === 'crawlee' ? {} : { mode: peer };
    child.stdin?.write(`${JSON.stringify({ ...o, ...mode })}\n`);
    for await (const line of lines) {
      if (line === 'ready') {
        progress(`${peer}: warm-up done, crawling ${o.seeds.length} seed(s) to maxdepth ${o.maxdepth}`);
        meter.start();
        child.stdin?.write('go\n');
      } else if (line.startsWith('done ')) {
        cpu = meter.stop();
        peakKb = procStatusKb(child.pid, 'VmHWM');
        done = JSON.parse(line.slice(5)) as DoneLine;
        child.stdin?.write('exit\n');
        break;
      } else if (line.trim()) progress(`  ${peer}: ${line}`);
    }
    const code = await exited;
    if (!done) throw new Error(`${peer} exited with ${code} before reporting`);
    if (done.error) throw new Error(`${peer} failed: ${done.error}`);
  } finally {
    clearTimeout(timer);
    lines.close();
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  const { pages, ok, failed, seconds, pagesPerS, ...detail } = done;
  return {
    peer,
    pages,
    ok: ok ?? pages,
    failed,
    seconds,
    pagesPerS,
    cpu,
    peakRssMb: Math.round(peakKb / 102.4) / 10,
    detail,
  };
}
