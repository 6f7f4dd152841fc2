/**
 * How many crawler tasks the backlog needs, from what the running tasks report they sustain (lib/crawl/crawler/load-report.ts;
 * docs/design.md §8 "Fleet sizing"). Pure: the stats function reads the reports and the backlog, this decides.
 *
 * - A task is **saturated** in a tick when its slots are held by one of its budgets (event-loop delay, CPU, heap,
 *   RSS, bodies being read) or by its ceiling: it can do no more by itself, so another task adds throughput. A task
 *   whose slots are not all busy is bound by work: the frontier gives it no more (nothing due, or politeness holds
 *   the domains it has), and another task would idle too. So saturation stands for "work is due" without reading the
 *   queues: tasks that have due work fill their slots and grow until a budget stops them.
 * - **Out**: when the fleet is saturated (the mean share of saturated ticks is at least {@link SATURATED_FLEET}) and the
 *   backlog would take longer than {@link DRAIN_TARGET_S} at what a saturated task measures (pages/s), it needs the
 *   tasks that drain the backlog in that time. A saturated fleet never needs fewer tasks than it runs.
 * - **In**: when it is not saturated, the tasks that would carry its load (the sum of each task's highest budget
 *   share) at {@link TARGET_LOAD} each, never more than it runs and at least one while anything is queued.
 * - No task reporting and a backlog: one (it will measure); no backlog: none (the fleet's floor applies), unless a
 *   request was rejected for a spider type or proxy group no crawler has registered (`wanted`, fleet-wake.ts): then
 *   one, which registers what it has.
 */
import type { CrawlerLoad } from '../crawl/crawler/load-report.ts';

/** A report older than this is of a task that stopped beating (crawlers beat every 10 s). */
export const REPORT_FRESH_MS = 60_000;
/** The fleet scales out while its backlog would take longer than this to drain at the measured rate (s). */
export const DRAIN_TARGET_S = 600;
/** The mean share of saturated ticks over the tasks from which the fleet counts as saturated. */
const SATURATED_FLEET = 0.5;
/** A task saturated in at least this share of its ticks shows what a task sustains: its pages/s is the capacity. */
const FULL_TASK = 0.5;
/** The load (highest budget share) an unsaturated fleet is shrunk to carry per task. */
const TARGET_LOAD = 0.6;

/** What the fleet sustains and needs, as the stats function publishes it. */
export interface FleetLoad {
  /** Crawler processes with a fresh report. */
  liveTasks: number;
  /** Pages per second of all of them (each over its last minute). */
  pagesPerSecond: number;
  /** Slots in use / slot limits, over all of them (0 when none reports). */
  slotUtilization: number;
  /** The mean share of saturated ticks (0..1): how much of the fleet is bound by its budgets or ceilings. */
  saturatedShare: number;
  /** The mean pages/s of the tasks saturated most of the time: what a task sustains here (0 when none is). */
  taskPagesPerSecond: number;
  /** The tasks the backlog needs (see the module note); the autoscaling follows it. */
  tasksNeeded: number;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const round = (n: number) => Math.round(n * 1000) / 1000;

/**
 * The fleet's load from the fresh reports of its tasks and the backlog it serves; `wanted`: a request is waiting for
 * a name only a running crawler registers (fleet-wake.ts).
 */
export function fleetLoad(loads: readonly CrawlerLoad[], backlog: number, wanted = false): FleetLoad {
  const n = loads.length;
  const limits = sum(loads.map((l) => l.slotLimit));
  const saturatedShare = n > 0 ? sum(loads.map((l) => l.saturated)) / n : 0;
  const full = loads.filter((l) => l.saturated >= FULL_TASK);
  const taskPagesPerSecond = full.length > 0 ? sum(full.map((l) => l.pagesPerSec)) / full.length : 0;
  return {
    liveTasks: n,
    pagesPerSecond: round(sum(loads.map((l) => l.pagesPerSec))),
    slotUtilization: round(limits > 0 ? sum(loads.map((l) => l.slotsInUse)) / limits : 0),
    saturatedShare: round(saturatedShare),
    taskPagesPerSecond: round(taskPagesPerSecond),
    tasksNeeded: tasksNeeded(loads, backlog, saturatedShare, taskPagesPerSecond, wanted),
  };
}

function tasksNeeded(
  loads: readonly CrawlerLoad[],
  backlog: number,
  saturatedShare: number,
  taskPagesPerSecond: number,
  wanted: boolean,
): number {
  const n = loads.length;
  if (backlog <= 0) return n === 0 && wanted ? 1 : 0;
  if (n === 0) return 1;
  if (saturatedShare >= SATURATED_FLEET) {
    if (taskPagesPerSecond <= 0) return n;
    return Math.max(n, Math.ceil(backlog / (taskPagesPerSecond * DRAIN_TARGET_S)));
  }
  const load = sum(loads.map((l) => l.load));
  return Math.min(n, Math.max(1, Math.ceil(load / TARGET_LOAD - 1e-9)));
}

/** The reports that are fresh at `nowMs` (one from a clock ahead of the reader's counts as fresh). */
export function freshLoads(loads: readonly CrawlerLoad[], nowMs: number): CrawlerLoad[] {
  return loads.filter((l) => nowMs - l.at < REPORT_FRESH_MS);
}
