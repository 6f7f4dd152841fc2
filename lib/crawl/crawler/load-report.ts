/**
 * What a crawler process sustains, as its heartbeat reports it (docs/design.md §8 "Fleet sizing"): pages per second
 * over the last minute, the fetch slots it used and may use, and what bounds them (lib/crawl/crawler/concurrency.ts {@link SlotBound}).
 * The stats function reads the reports of the live tasks and sizes the fleet from them (lib/monitor/fleet-sizing.ts).
 * The window is fed by the slot ticks (lib/crawl/crawler/slots.ts, every 500 ms) and read at each heartbeat (every 10 s).
 */
import { SATURATED_BOUNDS, type SlotBound } from './concurrency.ts';

/** One crawler process's report, as stored with its heartbeat (JSON). */
export interface CrawlerLoad {
  /** When it was measured (epoch ms). */
  at: number;
  /** Pages published per second over the window. */
  pagesPerSec: number;
  /** Mean fetch slots in use over the window. */
  slotsInUse: number;
  /** Its slot limit at the time of the report. */
  slotLimit: number;
  /** What bounded its slots in most ticks of the window. */
  bound: SlotBound;
  /** Share of the window's ticks bound by a budget or the ceiling (0..1): 1 = it can do no more by itself. */
  saturated: number;
  /**
   * Mean over the window of its highest budget share (lib/crawl/crawler/concurrency.ts `load`; 1 = at a budget). With fixed slots, which
   * measure no budget, the share of its slots in use.
   */
  load: number;
  /**
   * The spider types the process leases for (absent in reports of images older than this field): the stats function
   * sizes each fleet from its own tasks' reports (lib/monitor/fleet-metrics.ts).
   */
  spiders?: string[];
}

/** One slot tick as the window records it. */
export interface SlotSample {
  /** Slots in use at the tick. */
  inUse: number;
  limit: number;
  bound: SlotBound;
  load: number;
}

/** The heartbeat kind of a crawler process (id host:pid), whose beat carries its {@link CrawlerLoad} as JSON. */
export const CRAWLER_TASK_KIND = 'crawler-task';

/**
 * How long a heartbeat stays live, for every kind (the crawler's, the monitors', the REST API's): the stats replies,
 * the dashboard and the fleet metrics count a process live this long after its last beat. Defined here, the lowest
 * layer that beats, so lib/monitor and lib/rest take it from the crawler and never the reverse.
 */
export const HEARTBEAT_TTL_MS = 300_000;

/** How far back a report looks. */
const LOAD_WINDOW_MS = 60_000;

const BOUNDS: readonly SlotBound[] = ['loop', 'cpu', 'heap', 'rss', 'body', 'ceiling', 'work', 'growing'];

/** The slot ticks and page counts of the last {@link LOAD_WINDOW_MS}, in a list of at most window / tick entries. */
export class LoadWindow {
  readonly #windowMs: number;
  readonly #samples: (SlotSample & { at: number; pages: number })[] = [];
  /** When counting began and the pages then: the base of the rate until the window is a full one. */
  #origin: { at: number; pages: number } | undefined;

  constructor(windowMs = LOAD_WINDOW_MS) {
    this.#windowMs = windowMs;
  }

  /** Counting begins at `at` with `pages` published (the crawler's start). */
  begin(at: number, pages = 0): void {
    this.#origin = { at, pages };
  }

  /** Records one tick at `at` (ms), with the pages published so far. */
  sample(at: number, slots: SlotSample, pages: number): void {
    this.#samples.push({ ...slots, at, pages });
    while ((this.#samples[0]?.at ?? at) <= at - this.#windowMs) this.#samples.shift();
  }

  /** The report at `at` with the pages published so far; before any tick, zeros bound by `work`. */
  report(at: number, pages: number, slotLimit: number): CrawlerLoad {
    const inWindow = this.#samples.filter((s) => s.at > at - this.#windowMs);
    const origin = this.#origin;
    const first = origin && origin.at > at - this.#windowMs ? origin : inWindow[0];
    const seconds = first ? (at - first.at) / 1000 : 0;
    const n = inWindow.length;
    const counts = new Map<SlotBound, number>();
    for (const s of inWindow) counts.set(s.bound, (counts.get(s.bound) ?? 0) + 1);
    // The most frequent bound; on a tie the first in BOUNDS order (budgets before `work`).
    let bound: SlotBound = 'work';
    let most = 0;
    for (const b of BOUNDS) {
      const c = counts.get(b) ?? 0;
      if (c > most) [bound, most] = [b, c];
    }
    let saturated = 0;
    for (const [b, c] of counts) if (SATURATED_BOUNDS.has(b)) saturated += c;
    return {
      at,
      pagesPerSec: first && seconds > 0 ? round((pages - first.pages) / seconds) : 0,
      slotsInUse: n > 0 ? round(inWindow.reduce((sum, s) => sum + s.inUse, 0) / n) : 0,
      slotLimit,
      bound,
      saturated: n > 0 ? round(saturated / n) : 0,
      load: n > 0 ? round(inWindow.reduce((sum, s) => sum + s.load, 0) / n) : 0,
    };
  }
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/** A stored report read back; undefined when it is not one (another version's, or garbage). */
export function parseCrawlerLoad(text: string): CrawlerLoad | undefined {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const { at, pagesPerSec, slotsInUse, slotLimit, bound, saturated, load } = v;
  if (![at, pagesPerSec, slotsInUse, slotLimit, saturated, load].every(isCount)) return undefined;
  if (!BOUNDS.includes(bound as SlotBound)) return undefined;
  const out = { at, pagesPerSec, slotsInUse, slotLimit, bound, saturated, load } as CrawlerLoad;
  const { spiders } = v;
  if (Array.isArray(spiders) && spiders.every((s) => typeof s === 'string')) out.spiders = spiders;
  return out;
}
