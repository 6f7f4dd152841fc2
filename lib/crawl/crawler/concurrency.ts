/**
 * Adaptive concurrency of one crawler process (docs/design.md §5): how many fetch slots it runs, chosen from what it
 * measures in itself, tick by tick. It grows while every slot is busy and the process has headroom, and shrinks as
 * soon as one resource is over its budget:
 * - event-loop delay (a loop that lags delays every fetch and timer of the process; counted only while the process
 *   itself uses at least half its CPU budget: a loop starved by other processes holds the limit instead),
 * - CPU share of what the task may use (cgroup quota on Fargate, not the host's cores),
 * - V8 heap against its limit, RSS against the task's memory,
 * - bytes of response bodies being read against the body budget.
 * Growth starts like TCP's slow start: the limit doubles a tick while every slot is busy and every signal is far
 * from its budget, up to the limit it last backed off to; while it does ({@link ConcurrencyController.ramping}) the
 * caller ticks twice as often (lib/crawl/crawler/slots.ts), so a crawl's first seconds (on the web, much of a small
 * crawl) run at the slots they need; past that it grows x1.25 a tick while far from any budget and one slot a tick
 * near one. Back-off multiplies by 0.7 on the first tick over budget. Slots are only ever added when
 * they were (within an eighth) all in use: a crawler waiting for its politeness turns keeps what it has. The floor and ceiling are
 * configuration (CRAWLER_CONCURRENCY_MIN, CRAWLER_CONCURRENCY_MAX); a fixed CRAWLER_CONCURRENCY bypasses all this.
 * Pure: the signals and the clock come from the caller (lib/crawl/crawler/load-signals.ts reads the real ones).
 */

/** What the process measures of itself at one tick; each ratio is of its budget (1 = at the budget). */
export interface LoadSignals {
  /** Event-loop delay (p99 over the last tick, ms). */
  loopDelayMs: number;
  /** CPU used over the last tick as a share of what the task may use (0..1+). */
  cpuShare: number;
  /** V8 heap used / heap limit (0..1). */
  heapShare: number;
  /** Resident set size / the task's memory (0..1). */
  rssShare: number;
  /** Bytes of bodies being read / the body budget (0..1+). */
  bodyShare: number;
}

/** The budgets: a signal at or over its budget is overload. */
export interface LoadBudgets {
  /** @default 100 */
  loopDelayMs: number;
  /** @default 0.9 */
  cpuShare: number;
  /** @default 0.75 */
  heapShare: number;
  /** @default 0.8 */
  rssShare: number;
  /** @default 1 */
  bodyShare: number;
}

const DEFAULT_BUDGETS: LoadBudgets = {
  loopDelayMs: 100,
  cpuShare: 0.9,
  heapShare: 0.75,
  rssShare: 0.8,
  bodyShare: 1,
};

/** Growth per tick while every signal is below this share of its budget; above it, one slot per tick. */
const FAR_FROM_BUDGET = 0.7;
/** Slow start: doubling while every signal is below this share of its budget, up to the last back-off. */
const FAR_FOR_SLOW_START = 0.5;
const SLOW_START_GROWTH = 2;
const GROWTH = 1.25;
const BACK_OFF = 0.7;
/**
 * Slots counted as all busy when no more than this share of them was free at the busiest moment of a tick: a worker
 * between two requests (its next lease call under way) is not holding one, and on a loaded Redis that turnaround
 * is a tenth of a 300 ms fetch.
 */
const BUSY_SLACK = 1 / 8;
/** Loop delay over budget is the process's own overload only while it uses at least this share of its CPU budget. */
const STARVED_BELOW_CPU = 0.5;

/**
 * Slots at start: 128 fetches, of the task's body budget at most (admission waits beyond it), and on a CPU-bound or
 * memory-bound task the first tick over a budget takes them back (x0.7 a tick). A crawl's first second is robots.txt
 * and the first hop, many slow fetches at once: starting low, slow start stops doubling as soon as the process uses
 * half its CPU budget and then grows by a quarter a tick, too late for them.
 */
export const INITIAL_SLOTS = 128;

export interface ConcurrencyOptions {
  /** The fewest slots. @default 4 */
  min: number;
  /** The most slots. @default 500 */
  max: number;
  /** Slots at start. @default min(max, {@link INITIAL_SLOTS}) */
  initial?: number;
  budgets?: Partial<LoadBudgets>;
}

/**
 * What holds a process's slots where they are, tick by tick (its heartbeat reports it, lib/crawl/crawler/load-report.ts): a budget
 * (`loop`, `cpu`, `heap`, `rss`, `body`: over it, or growing one slot at a time near it), the `ceiling` (every slot
 * busy at the most slots), `work` (not every slot was busy: the frontier or politeness gives no more), or nothing yet
 * (`growing`, far from every budget).
 */
export type SlotBound = 'loop' | 'cpu' | 'heap' | 'rss' | 'body' | 'ceiling' | 'work' | 'growing';

/** The bounds that mean the process can do no more by itself: more tasks would add throughput. */
export const SATURATED_BOUNDS: ReadonlySet<SlotBound> = new Set(['loop', 'cpu', 'heap', 'rss', 'body', 'ceiling']);

const SIGNAL_BOUND: Record<keyof LoadSignals, SlotBound> = {
  loopDelayMs: 'loop',
  cpuShare: 'cpu',
  heapShare: 'heap',
  rssShare: 'rss',
  bodyShare: 'body',
};

/** One tick's decision, for logs and the stats. */
export interface ConcurrencyStep {
  limit: number;
  previous: number;
  /**
   * Why: `grow`, `hold` (not all slots busy, or at the ceiling), `hold:starved` (the loop lags while the process
   * itself uses little CPU: other processes take it), or `over:<signal>`.
   */
  reason: string;
  /** What bounds the slots at this tick. */
  bound: SlotBound;
  /** The highest share of its budget any signal is at (1 = at a budget): how loaded the process is. */
  load: number;
}

export class ConcurrencyController {
  readonly min: number;
  readonly max: number;
  readonly #budgets: LoadBudgets;
  #limit: number;
  /** Slow start's end: the limit the controller last backed off to (the ceiling until then). */
  #threshold: number;
  /** In slow start: no tick has yet grown other than by doubling, nor backed off, nor reached the ceiling. */
  #ramping = true;

  constructor(options: ConcurrencyOptions) {
    if (!(options.min >= 1) || !(options.max >= options.min))
      throw new RangeError(`concurrency: need 1 <= min <= max (got min ${options.min}, max ${options.max})`);
    this.min = Math.floor(options.min);
    this.max = Math.floor(options.max);
    this.#budgets = { ...DEFAULT_BUDGETS, ...options.budgets };
    this.#limit = clamp(Math.floor(options.initial ?? Math.min(this.max, INITIAL_SLOTS)), this.min, this.max);
    this.#threshold = this.max;
  }

  /** True while the limit is in slow start (doubling, or holding for work before any other growth or back-off). */
  get ramping(): boolean {
    return this.#ramping;
  }

  /** Slots the process may use now. */
  get limit(): number {
    return this.#limit;
  }

  /**
   * One tick: `busy` is the most slots in use at once during the tick (a process that never came within an eighth
   * of filling its slots has no use for more). Returns the new limit and why.
   */
  tick(signals: LoadSignals, busy: number): ConcurrencyStep {
    const previous = this.#limit;
    const [nearest, load] = this.#nearest(signals);
    const over = this.#overBudget(signals);
    // A lagging loop in a process that itself uses little CPU is starved by its neighbours (a shared host, a
    // noisy sidecar): fewer slots would not give it the CPU back, so it holds instead of backing off.
    if (over === 'loopDelayMs' && signals.cpuShare < this.#budgets.cpuShare * STARVED_BELOW_CPU)
      return { limit: previous, previous, reason: 'hold:starved', bound: 'loop', load };
    if (over !== undefined) {
      this.#ramping = false;
      this.#limit = clamp(Math.floor(previous * BACK_OFF), this.min, this.max);
      this.#threshold = this.#limit;
      return { limit: this.#limit, previous, reason: `over:${over}`, bound: SIGNAL_BOUND[over], load };
    }
    if (busy < previous - Math.floor(previous * BUSY_SLACK))
      return { limit: previous, previous, reason: 'hold', bound: 'work', load };
    if (previous >= this.max) {
      this.#ramping = false;
      return { limit: previous, previous, reason: 'hold', bound: 'ceiling', load };
    }
    const far = load < FAR_FROM_BUDGET;
    const doubling = far && load < FAR_FOR_SLOW_START && previous < this.#threshold;
    const next = !far
      ? previous + 1
      : doubling
        ? Math.min(previous * SLOW_START_GROWTH, this.#threshold)
        : Math.ceil(previous * GROWTH);
    this.#limit = clamp(next, this.min, this.max);
    if (!doubling || this.#limit >= this.#threshold) this.#ramping = false;
    return { limit: this.#limit, previous, reason: 'grow', bound: far ? 'growing' : SIGNAL_BOUND[nearest], load };
  }

  /** The first signal at or over its budget, or undefined. */
  #overBudget(s: LoadSignals): keyof LoadSignals | undefined {
    const b = this.#budgets;
    for (const k of Object.keys(b) as (keyof LoadBudgets)[]) if (s[k] >= b[k]) return k;
    return undefined;
  }

  /** The signal nearest its budget, and its share of that budget (0..1+). */
  #nearest(s: LoadSignals): [keyof LoadSignals, number] {
    const b = this.#budgets;
    let nearest: keyof LoadSignals = 'cpuShare';
    let most = 0;
    for (const k of Object.keys(b) as (keyof LoadBudgets)[]) {
      if (s[k] / b[k] > most) {
        most = s[k] / b[k];
        nearest = k;
      }
    }
    return [nearest, most];
  }
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, n));
}
