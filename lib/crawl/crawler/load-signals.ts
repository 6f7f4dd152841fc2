/**
 * The load signals of this process (lib/crawl/crawler/concurrency.ts's inputs), read from Node and the container: event-loop delay
 * (perf_hooks), CPU time (process.cpuUsage) against the task's CPU quota, V8 heap against its limit, RSS against the
 * task's memory. On Fargate and in Docker the limits are the cgroup's (cgroup v2 `cpu.max` and `memory.max`, v1
 * `cpu.cfs_quota_us` and `memory.limit_in_bytes`), not the host's cores and RAM; on a host the memory limit is that
 * of the process's own cgroup (a systemd scope, say: lib/crawl/fetch/memory-limit.ts); outside a limited cgroup they are the
 * machine's.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { type ELDHistogram, monitorEventLoopDelay } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { type MemoryLimitOptions, memoryLimit } from '../fetch/memory-limit.ts';
import { ConcurrencyController, type LoadSignals } from './concurrency.ts';

/** The CPU cores and memory bytes this process may use. */
export interface TaskLimits {
  cpus: number;
  memoryBytes: number;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/**
 * The task's limits from the cgroup files under `root` (tests pass a folder of their own), falling back to the
 * machine's cores and memory where no limit is set. The memory is {@link memoryLimit}'s: the least of the limits of
 * this process's own cgroup and those above it, the task's stated size (`memory.taskBytes`) and the machine's memory.
 */
export function taskLimits(
  root = '/sys/fs/cgroup',
  memory: Omit<MemoryLimitOptions, 'root' | 'machineBytes'> = {},
): TaskLimits {
  const machineCpus = availableParallelism();
  let cpus: number | undefined;
  const cpuMax = readText(`${root}/cpu.max`)?.split(/\s+/);
  if (cpuMax && cpuMax[0] !== 'max') cpus = Number(cpuMax[0]) / Number(cpuMax[1] ?? 100_000);
  else if (!cpuMax) {
    const quota = Number(readText(`${root}/cpu/cpu.cfs_quota_us`));
    const period = Number(readText(`${root}/cpu/cpu.cfs_period_us`));
    if (quota > 0 && period > 0) cpus = quota / period;
  }
  return {
    cpus: cpus !== undefined && Number.isFinite(cpus) && cpus > 0 ? Math.min(cpus, machineCpus) : machineCpus,
    memoryBytes: memoryLimit({ ...memory, root, machineBytes: totalmem() }).bytes,
  };
}

/** Reads {@link LoadSignals} once per tick; `bodyShare` comes from the caller's body budget. */
export class ProcessSignals {
  readonly #limits: TaskLimits;
  readonly #loop: ELDHistogram;
  #cpu = process.cpuUsage();
  #at = performance.now();

  constructor(limits: TaskLimits = taskLimits()) {
    this.#limits = limits;
    this.#loop = monitorEventLoopDelay({ resolution: 10 });
    this.#loop.enable();
  }

  get limits(): TaskLimits {
    return this.#limits;
  }

  /** The signals since the last read (the first read covers the time since construction). */
  read(bodyShare: number): LoadSignals {
    const now = performance.now();
    const cpu = process.cpuUsage(this.#cpu);
    const wallMs = Math.max(1, now - this.#at);
    this.#cpu = process.cpuUsage();
    this.#at = now;
    const loopDelayMs = this.#loop.count > 0 ? this.#loop.percentile(99) / 1e6 : 0;
    this.#loop.reset();
    const heap = getHeapStatistics();
    return {
      loopDelayMs,
      cpuShare: (cpu.user + cpu.system) / 1000 / wallMs / this.#limits.cpus,
      heapShare: heap.used_heap_size / heap.heap_size_limit,
      rssShare: process.memoryUsage.rss() / this.#limits.memoryBytes,
      bodyShare,
    };
  }

  close(): void {
    this.#loop.disable();
  }
}

/**
 * The crawler's adaptive concurrency from configuration: none when CRAWLER_CONCURRENCY fixes the slots (> 0), else a
 * controller between CRAWLER_CONCURRENCY_MIN and CRAWLER_CONCURRENCY_MAX (a floor above the ceiling is lowered to
 * it) fed by this process's signals.
 */
export function adaptiveConcurrency(
  vars: {
    CRAWLER_CONCURRENCY: number;
    CRAWLER_CONCURRENCY_MIN: number;
    CRAWLER_CONCURRENCY_MAX: number;
  },
  limits: TaskLimits,
  bodyShare: () => number,
): { controller: ConcurrencyController; signals: () => LoadSignals } | undefined {
  if (vars.CRAWLER_CONCURRENCY > 0) return undefined;
  const max = vars.CRAWLER_CONCURRENCY_MAX;
  const controller = new ConcurrencyController({ min: Math.min(vars.CRAWLER_CONCURRENCY_MIN, max), max });
  const signals = new ProcessSignals(limits);
  return { controller, signals: () => signals.read(bodyShare()) };
}
