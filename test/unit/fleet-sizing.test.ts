/**
 * Fleet sizing from what the tasks report (issue 32): the load window a crawler's heartbeat reports
 * (lib/crawl/crawler/load-report.ts), fed tick by tick on a fake clock, and the tasks the backlog needs from the tasks'
 * reports (lib/monitor/fleet-sizing.ts).
 */
import { describe, expect, it } from 'vitest';
import type { SlotBound } from '../../lib/crawl/crawler/concurrency.ts';
import { type CrawlerLoad, LoadWindow, parseCrawlerLoad } from '../../lib/crawl/crawler/load-report.ts';
import { DRAIN_TARGET_S, fleetLoad, freshLoads, REPORT_FRESH_MS } from '../../lib/monitor/fleet-sizing.ts';

const T = Date.UTC(2026, 2, 2, 12, 0, 0);
const TICK_MS = 500;

/** Feeds `ticks` slot ticks from `from`, `pagesPerTick` pages each; returns the time and pages after the last. */
function feed(
  w: LoadWindow,
  from: { at: number; pages: number },
  ticks: number,
  tick: { inUse: number; limit: number; bound: SlotBound; load: number },
  pagesPerTick: number,
) {
  let { at, pages } = from;
  for (let i = 0; i < ticks; i++) {
    at += TICK_MS;
    pages += pagesPerTick;
    w.sample(at, tick, pages);
  }
  return { at, pages };
}

describe('the load window a heartbeat reports', () => {
  it('reports pages/s, mean slots in use, the limit, the most frequent bound, the saturated share and mean load', () => {
    const w = new LoadWindow();
    // 30 s bound by CPU at 200 slots doing 250 pages/s, then 30 s held by work at 50 in use doing 50 pages/s.
    let now = feed(w, { at: T, pages: 0 }, 60, { inUse: 200, limit: 200, bound: 'cpu', load: 0.95 }, 125);
    now = feed(w, now, 60, { inUse: 50, limit: 200, bound: 'work', load: 0.3 }, 25);
    const r = w.report(now.at, now.pages, 200);
    expect(r.at).toBe(now.at);
    // The oldest tick in the window is the first one (at T + 500 ms, 125 pages): 59.5 s and 8,875 pages since.
    expect(r.pagesPerSec).toBeCloseTo((now.pages - 125) / 59.5, 2);
    expect(r).toMatchObject({ slotsInUse: 125, slotLimit: 200, saturated: 0.5, load: 0.625 });
    // A tie goes to the budget.
    expect(r.bound).toBe('cpu');
  });

  it('forgets ticks older than a minute', () => {
    const w = new LoadWindow();
    let now = feed(w, { at: T, pages: 0 }, 120, { inUse: 16, limit: 16, bound: 'ceiling', load: 0.4 }, 10);
    now = feed(w, now, 120, { inUse: 4, limit: 16, bound: 'work', load: 0.1 }, 1);
    expect(w.report(now.at, now.pages, 16)).toMatchObject({
      pagesPerSec: 2,
      slotsInUse: 4,
      bound: 'work',
      saturated: 0,
      load: 0.1,
    });
  });

  it('counts pages from its start until it has a full window', () => {
    const w = new LoadWindow();
    w.begin(T);
    // 40 pages before the first tick, 10 more by it, 2 s in.
    w.sample(T + 2000, { inUse: 3, limit: 16, bound: 'work', load: 0.2 }, 50);
    expect(w.report(T + 2000, 50, 16).pagesPerSec).toBe(25);
    // Once the start is more than a minute back, the oldest tick in the window is the base.
    const now = feed(w, { at: T + 2000, pages: 50 }, 120, { inUse: 3, limit: 16, bound: 'work', load: 0.2 }, 5);
    expect(w.report(now.at, now.pages, 16).pagesPerSec).toBeCloseTo(10, 1);
  });

  it('reports zeros, bound by work, before its first tick; the report reads back, garbage does not', () => {
    const r = new LoadWindow().report(T, 0, 16);
    expect(r).toEqual({ at: T, pagesPerSec: 0, slotsInUse: 0, slotLimit: 16, bound: 'work', saturated: 0, load: 0 });
    expect(parseCrawlerLoad(JSON.stringify(r))).toEqual(r);
    const browser = { ...r, spiders: ['browser'] };
    expect(parseCrawlerLoad(JSON.stringify(browser))).toEqual(browser);
    expect(parseCrawlerLoad(JSON.stringify({ ...r, spiders: [1] }))).toEqual(r);
    expect(parseCrawlerLoad('not json')).toBeUndefined();
    expect(parseCrawlerLoad(JSON.stringify({ ...r, bound: 'mood' }))).toBeUndefined();
    expect(parseCrawlerLoad(JSON.stringify({ ...r, pagesPerSec: -1 }))).toBeUndefined();
    expect(parseCrawlerLoad('null')).toBeUndefined();
  });
});

function task(over: Partial<CrawlerLoad> = {}): CrawlerLoad {
  return { at: T, pagesPerSec: 0, slotsInUse: 0, slotLimit: 16, bound: 'work', saturated: 0, load: 0.1, ...over };
}

/** A task bound by its CPU budget all minute, doing `pagesPerSec`. */
const cpuBound = (pagesPerSec: number) =>
  task({ pagesPerSec, slotsInUse: 180, slotLimit: 180, bound: 'cpu', saturated: 1, load: 0.97 });

/** A task whose slots are not all busy: the frontier gives it no more. */
const workBound = (load: number, pagesPerSec = 20) =>
  task({ pagesPerSec, slotsInUse: 10, slotLimit: 40, bound: 'work', saturated: 0, load });

describe('the tasks the backlog needs', () => {
  it('none when nothing is queued, whatever runs', () => {
    expect(fleetLoad([cpuBound(500), cpuBound(500)], 0).tasksNeeded).toBe(0);
    expect(fleetLoad([], 0)).toEqual({
      liveTasks: 0,
      pagesPerSecond: 0,
      slotUtilization: 0,
      saturatedShare: 0,
      taskPagesPerSecond: 0,
      tasksNeeded: 0,
    });
  });

  it('one when requests are queued and no task reports: it starts and measures', () => {
    expect(fleetLoad([], 5).tasksNeeded).toBe(1);
  });

  it('one when nothing is queued and no task reports but a request waits for a name only a crawler registers', () => {
    expect(fleetLoad([], 0, true).tasksNeeded).toBe(1);
    // A running task has registered what it has: a name still unknown is not one this fleet would learn.
    expect(fleetLoad([workBound(0.1)], 0, true).tasksNeeded).toBe(0);
    expect(fleetLoad([], 0, false).tasksNeeded).toBe(0);
  });

  it('saturated tasks and a backlog longer than the drain target: the tasks that drain it in time, at the pages/s a saturated task measures', () => {
    // Two CPU-bound tasks at 500 pages/s: 2.4 M queued take 40 minutes; 10 minutes need 8 tasks.
    const m = fleetLoad([cpuBound(500), cpuBound(500)], 2_400_000);
    expect(m).toEqual({
      liveTasks: 2,
      pagesPerSecond: 1000,
      slotUtilization: 1,
      saturatedShare: 1,
      taskPagesPerSecond: 500,
      tasksNeeded: Math.ceil(2_400_000 / (500 * DRAIN_TARGET_S)),
    });
    expect(m.tasksNeeded).toBe(8);
    // A slower site: the same tasks measure 50 pages/s each (bound by their ceiling), and the same backlog needs 80.
    const slow = task({ pagesPerSec: 50, slotsInUse: 256, slotLimit: 256, bound: 'ceiling', saturated: 1, load: 0.4 });
    expect(fleetLoad([slow, slow], 2_400_000).tasksNeeded).toBe(80);
  });

  it('saturated tasks and a backlog they drain within the target: as many as run, never fewer', () => {
    expect(fleetLoad([cpuBound(500), cpuBound(500), cpuBound(500)], 10_000).tasksNeeded).toBe(3);
  });

  it('tasks held by work, however large the backlog (not due: politeness or the frontier holds it), are never added to', () => {
    const loads = [workBound(0.55), workBound(0.55), workBound(0.55)];
    const m = fleetLoad(loads, 10_000_000);
    expect(m.saturatedShare).toBe(0);
    expect(m.tasksNeeded).toBe(3);
    expect(m.slotUtilization).toBe(0.25);
  });

  it('tasks held by work with little load: the fewest that carry it at 60 % each, at least one while work is queued', () => {
    // 10 tasks at 0.15 of their budgets: 1.5 in all, which 3 tasks carry at 0.5 each.
    const idle = Array.from({ length: 10 }, () => workBound(0.15));
    expect(fleetLoad(idle, 100).tasksNeeded).toBe(3);
    expect(fleetLoad([workBound(0.05), workBound(0.05)], 3).tasksNeeded).toBe(1);
  });

  it('a fleet saturated less than half of the time sizes on its load: a fleet near its budgets keeps its tasks', () => {
    const mixed = [cpuBound(400), workBound(0.7), workBound(0.7)];
    const m = fleetLoad(mixed, 5_000_000);
    expect(m.saturatedShare).toBeCloseTo(1 / 3, 3);
    // The one saturated task still says what a task sustains.
    expect(m.taskPagesPerSecond).toBe(400);
    // Load 0.97 + 0.7 + 0.7 = 2.37: four tasks' worth at 60 %, but a fleet held by work is never grown.
    expect(m.tasksNeeded).toBe(3);
  });

  it('a saturated fleet whose tasks publish nothing (memory-bound on slow pages) keeps its size', () => {
    const stuck = task({ pagesPerSec: 0, bound: 'rss', saturated: 1, load: 1.05 });
    expect(fleetLoad([stuck, stuck], 1_000_000).tasksNeeded).toBe(2);
  });

  it('counts only fresh reports: a task that stopped beating a minute ago is gone', () => {
    const now = T + REPORT_FRESH_MS;
    const loads = [task({ at: T }), task({ at: T + 1 }), task({ at: now + 5000 })];
    expect(freshLoads(loads, now)).toEqual([loads[1], loads[2]]);
  });
});
