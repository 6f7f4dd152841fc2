/**
 * The adaptive concurrency controller (lib/crawl/crawler/concurrency.ts) on fake signals, tick by tick (a tick is 500 ms in
 * the crawler), and the task limits read from cgroup files (lib/crawl/crawler/load-signals.ts).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConcurrencyController, INITIAL_SLOTS, type LoadSignals } from '../../lib/crawl/crawler/concurrency.ts';
import { ProcessSignals, taskLimits } from '../../lib/crawl/crawler/load-signals.ts';

const IDLE: LoadSignals = { loopDelayMs: 2, cpuShare: 0.1, heapShare: 0.1, rssShare: 0.1, bodyShare: 0 };
const TICKS_PER_10_S = 20;

describe('ConcurrencyController', () => {
  it('grows while every slot is busy and the process has headroom: 128 to the 200 a slow site needs within 10 s', () => {
    const c = new ConcurrencyController({ min: 4, max: 500 });
    expect(c.limit).toBe(INITIAL_SLOTS);
    let ticks = 0;
    // A site that answers in 300 ms keeps every slot busy up to ~200 slots; past that, some wait for work.
    while (c.limit < 200 && ticks < 100) {
      c.tick(IDLE, c.limit);
      ticks++;
    }
    expect(c.limit).toBeGreaterThanOrEqual(200);
    expect(ticks).toBeLessThanOrEqual(TICKS_PER_10_S);
  });

  it('starts slow-start fast: doubles a tick while far from every budget, 32 to 256 in 3 ticks (0.75 s at half ticks)', () => {
    const c = new ConcurrencyController({ min: 8, max: 256, initial: 32 });
    expect(c.ramping).toBe(true);
    const steps = Array.from({ length: 4 }, () => [c.tick(IDLE, c.limit).limit, c.ramping]);
    expect(steps).toEqual([
      [64, true],
      [128, true],
      [256, false],
      [256, false],
    ]);
    // At its defaults it starts at 128: one busy tick takes it to the ceiling.
    const d = new ConcurrencyController({ min: 8, max: 256 });
    expect([d.limit, d.tick(IDLE, d.limit).limit, d.ramping]).toEqual([128, 256, false]);
  });

  it('ramps (the caller ticks faster) only until it grows other than by doubling or backs off; holding for work keeps it', () => {
    const c = new ConcurrencyController({ min: 8, max: 1000, initial: 16 });
    expect(c.tick(IDLE, 5)).toMatchObject({ limit: 16, reason: 'hold' });
    expect(c.ramping).toBe(true);
    expect(c.tick({ ...IDLE, cpuShare: 0.54 }, 16).limit).toBe(20);
    expect(c.ramping).toBe(false);
    const d = new ConcurrencyController({ min: 8, max: 1000, initial: 16 });
    expect(d.tick({ ...IDLE, rssShare: 0.9 }, 16).reason).toBe('over:rssShare');
    expect(d.ramping).toBe(false);
  });

  it('doubles only up to the limit it last backed off to, then grows x1.25 and one slot a tick near a budget', () => {
    const c = new ConcurrencyController({ min: 8, max: 1000, initial: 200 });
    expect(c.tick({ ...IDLE, heapShare: 0.9 }, 200).limit).toBe(140);
    expect(c.tick({ ...IDLE, heapShare: 0.3 }, 140).limit).toBe(175);
    expect(c.tick(IDLE, 175).limit).toBe(219);
    // Between half and 0.7 of a budget: x1.25, never doubling, even below the threshold.
    const d = new ConcurrencyController({ min: 8, max: 1000, initial: 16 });
    expect(d.tick({ ...IDLE, cpuShare: 0.54 }, 16).limit).toBe(20);
    expect(d.tick({ ...IDLE, cpuShare: 0.7 }, 20).limit).toBe(21);
  });

  it('holds, neither growing nor backing off, while its loop lags but it uses little CPU itself (starved by neighbours)', () => {
    const c = new ConcurrencyController({ min: 8, max: 256, initial: 64 });
    expect(c.tick({ ...IDLE, loopDelayMs: 300, cpuShare: 0.2 }, 64)).toMatchObject({
      limit: 64,
      previous: 64,
      reason: 'hold:starved',
    });
    // The same lag with the process busy on its own CPU is its own overload.
    expect(c.tick({ ...IDLE, loopDelayMs: 300, cpuShare: 0.5 }, 64)).toMatchObject({
      limit: 44,
      previous: 64,
      reason: 'over:loopDelayMs',
    });
  });

  it('holds when not every slot was busy: a crawler waiting on politeness gains nothing from more (an eighth of slack)', () => {
    const c = new ConcurrencyController({ min: 4, max: 500, initial: 50 });
    expect(c.tick(IDLE, 43)).toEqual({ limit: 50, previous: 50, reason: 'hold', bound: 'work', load: 0.1 / 0.75 });
    expect(c.limit).toBe(50);
    // Within an eighth of full (a worker between two requests is not holding one): busy enough to grow.
    expect(c.tick(IDLE, 44).reason).toBe('grow');
  });

  it('says what bounds its slots: growing while far from budgets, the budget it is near, its ceiling', () => {
    const c = new ConcurrencyController({ min: 4, max: 40, initial: 30 });
    // Past half a budget (CPU 0.54 of 0.9): x1.25, not slow start's doubling.
    expect(c.tick({ ...IDLE, cpuShare: 0.54 }, 30)).toMatchObject({ limit: 38, reason: 'grow', bound: 'growing' });
    // CPU at 0.8 of the task (0.89 of its 0.9 budget): one slot a tick, bound by CPU.
    const step = c.tick({ ...IDLE, cpuShare: 0.8 }, 38);
    expect(step).toMatchObject({ limit: 39, reason: 'grow', bound: 'cpu' });
    expect(step.load).toBeCloseTo(0.8 / 0.9);
    c.tick(IDLE, 39);
    expect(c.tick(IDLE, 40)).toMatchObject({ limit: 40, reason: 'hold', bound: 'ceiling' });
  });

  it('never passes its ceiling nor goes under its floor', () => {
    const c = new ConcurrencyController({ min: 10, max: 40 });
    for (let i = 0; i < 50; i++) c.tick(IDLE, c.limit);
    expect(c.limit).toBe(40);
    const hot = { ...IDLE, cpuShare: 1.2 };
    for (let i = 0; i < 50; i++) c.tick(hot, c.limit);
    expect(c.limit).toBe(10);
  });

  it.each([
    ['loopDelayMs', 'loop', { loopDelayMs: 250, cpuShare: 0.6 }],
    ['cpuShare', 'cpu', { cpuShare: 0.97 }],
    ['heapShare', 'heap', { heapShare: 0.8 }],
    ['rssShare', 'rss', { rssShare: 0.85 }],
    ['bodyShare', 'body', { bodyShare: 1.1 }],
  ] as const)('backs off on the first tick %s is over its budget, bound by %s', (signal, bound, over) => {
    const c = new ConcurrencyController({ min: 4, max: 500, initial: 200 });
    const step = c.tick({ ...IDLE, ...over }, 200);
    expect(step).toMatchObject({ limit: 140, previous: 200, reason: `over:${signal}`, bound });
    expect(step.load).toBeGreaterThanOrEqual(1);
  });

  it('memory budget: RSS near the task memory stops growth at once and a burst of 2 MB bodies shrinks the slots', () => {
    const c = new ConcurrencyController({ min: 4, max: 500, initial: 100 });
    // Near the budget (0.75 of 0.8): one slot a tick, not x1.25.
    expect(c.tick({ ...IDLE, rssShare: 0.6 }, 100).limit).toBe(101);
    // Bodies being read over their budget: back off, and again while it stays over.
    expect(c.tick({ ...IDLE, bodyShare: 1.5 }, 101).limit).toBe(70);
    expect(c.tick({ ...IDLE, bodyShare: 1.2 }, 70).limit).toBe(49);
    // Back under budget with every slot busy: growth resumes.
    expect(c.tick(IDLE, 49).limit).toBe(62);
  });

  it('backs off to the floor within 2 s (4 ticks) from its ceiling when the event loop stays overloaded', () => {
    const c = new ConcurrencyController({ min: 16, max: 64, initial: 64 });
    const lagging = { ...IDLE, loopDelayMs: 400, cpuShare: 0.8 };
    const limits = Array.from({ length: 4 }, () => c.tick(lagging, c.limit).limit);
    expect(limits).toEqual([44, 30, 21, 16]);
  });

  it('refuses a floor above its ceiling', () => {
    expect(() => new ConcurrencyController({ min: 10, max: 5 })).toThrow(/min <= max/);
  });
});

describe('task limits', () => {
  it('reads the CPU quota and memory limit of a cgroup v2 task (Fargate: 1 vCPU, 2 GiB)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cgroup-'));
    writeFileSync(join(dir, 'cpu.max'), '100000 100000\n');
    writeFileSync(join(dir, 'memory.max'), `${2 * 1024 ** 3}\n`);
    const limits = taskLimits(dir);
    expect(limits.cpus).toBe(Math.min(1, availableParallelism()));
    expect(limits.memoryBytes).toBe(Math.min(2 * 1024 ** 3, totalmem()));
  });

  it('reads cgroup v1 files, and takes the machine where no limit is set', () => {
    const v1 = mkdtempSync(join(tmpdir(), 'cgroup-'));
    mkdirSync(join(v1, 'cpu'));
    mkdirSync(join(v1, 'memory'));
    writeFileSync(join(v1, 'cpu', 'cpu.cfs_quota_us'), '50000');
    writeFileSync(join(v1, 'cpu', 'cpu.cfs_period_us'), '100000');
    writeFileSync(join(v1, 'memory', 'memory.limit_in_bytes'), '9223372036854771712');
    expect(taskLimits(v1)).toEqual({ cpus: 0.5, memoryBytes: totalmem() });
    const none = mkdtempSync(join(tmpdir(), 'cgroup-'));
    writeFileSync(join(none, 'cpu.max'), 'max 100000');
    writeFileSync(join(none, 'memory.max'), 'max');
    expect(taskLimits(none)).toEqual({ cpus: availableParallelism(), memoryBytes: totalmem() });
  });

  it('measures this process: a busy loop shows as CPU share and event-loop delay', () => {
    const signals = new ProcessSignals({ cpus: 1, memoryBytes: totalmem() });
    try {
      const end = Date.now() + 120;
      while (Date.now() < end) {
        // Busy: the loop cannot run its timers meanwhile.
      }
      const s = signals.read(0.25);
      expect(s.cpuShare).toBeGreaterThan(0.3);
      expect(s.heapShare).toBeGreaterThan(0);
      expect(s.heapShare).toBeLessThan(1);
      expect(s.rssShare).toBeGreaterThan(0);
      expect(s.bodyShare).toBe(0.25);
    } finally {
      signals.close();
    }
  });
});
