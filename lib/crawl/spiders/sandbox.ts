/**
 * Plugin spiders run where a runaway can be stopped (docs/design.md §10: bounds are enforced from outside the code
 * that could overrun them). A crawler process runs the code of its `CRAWLER_PLUGINS` spiders (`wantsLinks`, `parse`,
 * `attrs`, `open`, `close`) in one worker thread (lib/crawl/spiders/thread.ts), never on its own event loop, and gives
 * each page a time budget:
 * - a parse that runs synchronously past its budget (an endless loop) has its thread terminated and replaced; the page
 *   fails with {@link SpiderBudgetError} and the pages that were waiting on that thread run again on the new one,
 *   uncharged;
 * - a thread blocked outside a page's synchronous call (an async parse that loops after an `await`) is found by its
 *   stale heartbeat and replaced the same way, charging the oldest page waiting on it;
 * - a parse whose promise never settles fails its page at the budget and frees its slot at once; the thread is
 *   replaced after {@link SpiderSandboxOptions.maxAbandoned} such pages, so what they hold cannot grow without end;
 * - the thread's heap is capped (`memoryMb`): a parse that allocates without end kills the thread, not the process.
 *   When a thread dies on its own (out of memory, an uncaught exception, an exit) only the page whose parse was in
 *   progress fails, with that cause in its exception; the pages queued behind it (sent, not yet taken by the thread)
 *   run again on a new thread, uncharged ({@link SpiderSandbox} says how that page is found, and why a thread that
 *   keeps dying cannot hold a page for ever).
 * A {@link SpiderBudgetError} is a failed try (lib/crawl/failure.ts `budget`): retried, then given up with its
 * reason. What a plugin throws stays what it was: a `success:false` page, not retried.
 *
 * Built-in spiders run on the crawler's event loop (their cost per page is a few microseconds; a thread hop is tens);
 * their promises get the same time budget ({@link withBudget}), and the process watchdog (lib/crawl/crawler/stall-watchdog.ts)
 * replaces a process whose event loop stops.
 */
import { Worker } from 'node:worker_threads';
import { CrawlClusterError } from '../../errors.ts';
import { rejectAfter } from '../../timeout.ts';
import type { FetchResult, Link, SpiderRequest } from '../types.ts';
import {
  BEAT_MS,
  type RunMessage,
  type SandboxResult,
  SHARED_SLOTS,
  SLOT_BEAT,
  SLOT_CALL,
  SLOT_CALL_START,
  SLOT_RECEIVED,
  type SpiderThreadData,
  type ThreadMessage,
} from './thread-protocol.ts';

/** A page's processing overran a budget enforced from outside it: a failed try (lib/crawl/failure.ts `budget`). */
export class SpiderBudgetError extends CrawlClusterError {}

/**
 * A page queued on this many threads that died with no page in progress to blame fails: a thread that dies on its
 * own whatever it runs (a plugin's stray timer that throws) still ends every page.
 */
export const MAX_UNBLAMED_DEATHS = 3;

export type { SandboxResult };

export interface SpiderSandboxOptions {
  /** `CRAWLER_PLUGINS` module specifiers. */
  plugins: string[];
  /** Relative plugin paths resolve against this. @default process.cwd() */
  baseDir?: string;
  /** Time budget of one page's spider code, from when it is handed to the thread (ms). @default 30000 */
  budgetMs?: number;
  /** The thread's old-generation heap limit (MiB). @default 256 */
  memoryMb?: number;
  /** Pages abandoned with a pending promise before the thread is replaced. @default 64 */
  maxAbandoned?: number;
  /** A thread whose heartbeat is older than this is blocked (ms). @default 1000 */
  staleBeatMs?: number;
  log: {
    info(message: string, fields?: Record<string, unknown>): void;
    warn(message: string, fields?: Record<string, unknown>): void;
    error(message: string, fields?: Record<string, unknown>): void;
  };
}

interface Call {
  id: number;
  message: RunMessage;
  resolve: (r: SandboxResult) => void;
  reject: (e: Error) => void;
  timer?: NodeJS.Timeout;
  /** Its place in its current thread's send order: below the thread's SLOT_RECEIVED, the thread has taken it. */
  seq: number;
  /** Its parse was in progress, with others', on a thread that died with no page to blame: it runs alone next. */
  suspect: boolean;
  /** Threads that died with no page to blame while this page was queued on them. */
  unblamed: number;
  /** When it was handed to the current thread (epoch ms). */
  sentAt: number;
}

interface Thread {
  worker: Worker;
  shared: Int32Array;
  base: number;
  ready: Promise<void>;
  /** Pages handed to this thread and not settled, in the order they were sent. */
  calls: Map<number, Call>;
  /** Run messages posted to it. */
  sent: number;
  abandoned: number;
  dead: boolean;
}

/** Why a thread died on its own, as its 'error' event or exit code tells it. */
interface Death {
  oom: boolean;
  /** What the thread did, after "the spider thread": `ran out of memory (...)`, `exited with code 7`. */
  what: string;
}

/**
 * The spiders of `CRAWLER_PLUGINS`, run in a worker thread with a time and memory budget (see the module doc).
 *
 * When the thread dies on its own, the page charged (a failed try, with the cause) is, in order: the one whose
 * synchronous plugin code was running (the shared SLOT_CALL); else the only page the thread had taken and not
 * finished (an async parse); else, out of memory with no page in progress, the page the thread was taking (its
 * message is copied onto the thread's heap). When several async parses were in progress, none is charged: each runs
 * again alone on the next thread, other pages held back meanwhile, so the one that kills a thread is then known.
 * Pages the thread had not taken are never charged for its death, unless {@link MAX_UNBLAMED_DEATHS} threads died
 * under them with nothing to blame. So every death charges a page, or makes its suspects run alone (each at most
 * once), or counts towards that bound: a thread that dies on every page ends every page after a bounded number of
 * deaths, and a page that kills its thread is charged each time, so it is retried and then given up.
 */
export class SpiderSandbox {
  readonly #o: Required<Omit<SpiderSandboxOptions, 'baseDir'>> & { baseDir: string };
  #thread: Thread | undefined;
  #nextId = 1;
  #closed = false;
  /** Suspects waiting to run alone, and the one on the thread now. */
  readonly #suspects: Call[] = [];
  #alone: Call | undefined;
  /** Pages held back while suspects run alone, in order. */
  #held: Call[] = [];
  /** Threads replaced since start (for tests and logs). */
  replaced = 0;

  constructor(options: SpiderSandboxOptions) {
    this.#o = {
      baseDir: process.cwd(),
      budgetMs: 30_000,
      memoryMb: 256,
      maxAbandoned: 64,
      staleBeatMs: 1000,
      ...options,
    };
  }

  /** Starts the thread: loads the plugins there and runs their `open()` hooks. Rejects when a hook throws. */
  async start(): Promise<void> {
    await this.#current().ready;
  }

  /**
   * Runs spider `spider`'s code on one page in the thread.
   * @throws SpiderBudgetError when the page overran its time or memory budget, or its thread died under it (a
   *   failed try; the message says which)
   * @throws Error with the spider's own message when its code threw (the page fails, not retried)
   */
  run(spider: string, request: SpiderRequest, response: FetchResult, links: Link[]): Promise<SandboxResult> {
    if (this.#closed) return Promise.reject(new Error('the spider sandbox is closed'));
    // A function cannot cross to the thread: the body budget's release stays here, with the crawler.
    const { release: _release, ...sent } = response;
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      const call: Call = {
        id,
        message: { type: 'run', id, spider, request, response: sent, links },
        resolve,
        reject,
        seq: 0,
        suspect: false,
        unblamed: 0,
        sentAt: 0,
      };
      void this.#send(call);
    });
  }

  /** Runs the plugins' `close()` hooks and ends the thread (bounded: at most 5 s). */
  async close(): Promise<void> {
    this.#closed = true;
    const closed = new Error('the spider sandbox closed');
    for (const call of [...this.#suspects.splice(0), ...this.#held.splice(0)]) call.reject(closed);
    const t = this.#thread;
    this.#thread = undefined;
    if (!t || t.dead) return;
    for (const call of t.calls.values()) this.#settle(t, call, closed);
    // An exit from here on is this close, not a death.
    t.dead = true;
    const exited = new Promise<void>((resolve) => t.worker.once('exit', () => resolve()));
    t.worker.postMessage({ type: 'close' });
    const timer = setTimeout(() => void t.worker.terminate(), 5000);
    await exited;
    clearTimeout(timer);
  }

  async #send(call: Call): Promise<void> {
    const t = this.#current();
    try {
      await t.ready;
    } catch (error) {
      this.#finish(call, new SpiderBudgetError(`the spider thread could not start: ${(error as Error).message}`));
      return;
    }
    if (this.#closed) {
      this.#finish(call, new Error('the spider sandbox is closed'));
      return;
    }
    if (call !== this.#alone && (this.#alone !== undefined || this.#suspects.length > 0)) {
      // A suspect runs alone: nothing else goes to its thread until it is done.
      this.#held.push(call);
      return;
    }
    if (t.dead) {
      // Replaced while starting: go to the new one.
      void this.#send(call);
      return;
    }
    t.calls.set(call.id, call);
    call.seq = t.sent;
    call.sentAt = Date.now();
    call.timer = setTimeout(() => this.#overdue(t, call), this.#o.budgetMs);
    try {
      t.worker.postMessage(call.message);
      t.sent++;
    } catch (error) {
      this.#settle(t, call, new Error(`the page cannot be handed to the spider thread: ${(error as Error).message}`));
    }
  }

  /** The live thread, started when there is none. */
  #current(): Thread {
    if (this.#thread && !this.#thread.dead) return this.#thread;
    const sab = new SharedArrayBuffer(SHARED_SLOTS * Int32Array.BYTES_PER_ELEMENT);
    const shared = new Int32Array(sab);
    const base = Date.now();
    const data: SpiderThreadData = { plugins: this.#o.plugins, baseDir: this.#o.baseDir, shared, base };
    const worker = new Worker(new URL('./thread.ts', import.meta.url), {
      workerData: data,
      // Its stdout and stderr are the process's (worker_threads' default): a plugin's console output reads as before.
      resourceLimits: { maxOldGenerationSizeMb: this.#o.memoryMb },
    });
    worker.unref();
    let ready!: () => void;
    let failed!: (e: Error) => void;
    const t: Thread = {
      worker,
      shared,
      base,
      ready: new Promise<void>((resolve, reject) => {
        ready = resolve;
        failed = reject;
      }),
      calls: new Map(),
      sent: 0,
      abandoned: 0,
      dead: false,
    };
    t.ready.catch(() => undefined);
    worker.on('message', (m: ThreadMessage) => this.#onMessage(t, m, ready, failed));
    worker.on('error', (error: unknown) => {
      failed(error instanceof Error ? error : new Error(String(error)));
      this.#onDeath(t, this.#death(error, undefined));
    });
    worker.on('exit', (code) => {
      failed(new Error(`the spider thread exited with code ${code}`));
      this.#onDeath(t, this.#death(undefined, code));
    });
    this.#thread = t;
    return t;
  }

  #onMessage(t: Thread, m: ThreadMessage, ready: () => void, failed: (e: Error) => void): void {
    switch (m.type) {
      case 'ready':
        ready();
        return;
      case 'open-failed':
        failed(new Error(m.message));
        t.dead = true;
        void t.worker.terminate();
        return;
      case 'log':
        this.#o.log[m.level](m.message, m.fields);
        return;
      case 'result': {
        const call = t.calls.get(m.id);
        if (!call) return;
        const { type: _type, id: _id, ...result } = m;
        this.#settle(t, call, undefined, result);
        return;
      }
      case 'error': {
        const call = t.calls.get(m.id);
        // As thrown in the thread: the page's exception reads as it did when plugins ran on this thread.
        if (call) this.#settle(t, call, Object.assign(new Error(m.message), { name: m.name }));
        return;
      }
    }
  }

  #settle(t: Thread, call: Call, error: Error | undefined, result?: SandboxResult): void {
    clearTimeout(call.timer);
    t.calls.delete(call.id);
    this.#finish(call, error, result);
  }

  /** Settles the page's promise; when it was the suspect running alone, the next one goes. */
  #finish(call: Call, error: Error | undefined, result?: SandboxResult): void {
    if (error) call.reject(error);
    else call.resolve(result as SandboxResult);
    if (call === this.#alone) {
      this.#alone = undefined;
      this.#next();
    }
  }

  /** The next suspect, alone; when none is left, the pages held back meanwhile, in their order. */
  #next(): void {
    if (this.#alone !== undefined || this.#closed) return;
    const suspect = this.#suspects.shift();
    if (suspect) {
      this.#alone = suspect;
      void this.#send(suspect);
      return;
    }
    const held = this.#held;
    this.#held = [];
    for (const call of held) void this.#send(call);
  }

  /** A page's budget ran out: decides whether its thread is stuck, busy with another page, or the page hangs. */
  #overdue(t: Thread, call: Call): void {
    if (t.dead || !t.calls.has(call.id)) return;
    const now = Date.now() - t.base;
    const running = Atomics.load(t.shared, SLOT_CALL);
    if (running !== 0) {
      const ranMs = now - Atomics.load(t.shared, SLOT_CALL_START);
      if (ranMs >= this.#o.budgetMs) {
        this.#replace(t, t.calls.get(running) ?? call, `ran for more than ${this.#o.budgetMs} ms`);
        return;
      }
      // Another page is running (within its budget): this one waits on it, uncharged, until that one's budget ends.
      call.timer = setTimeout(() => this.#overdue(t, call), this.#o.budgetMs - ranMs + BEAT_MS);
      return;
    }
    if (now - Atomics.load(t.shared, SLOT_BEAT) > this.#o.staleBeatMs) {
      // Blocked outside a page's synchronous call: an async parse that runs on after an await. The oldest page is
      // the likeliest; if it was not, the one that was fails on the next thread.
      this.#replace(t, call, `blocked its thread for more than ${this.#o.budgetMs} ms`);
      return;
    }
    // The thread is fine: the page's promise has not settled. Abandoned (what it holds stays in the thread).
    t.abandoned++;
    this.#settle(t, call, new SpiderBudgetError(this.#reason(call, `did not finish within ${this.#o.budgetMs} ms`)));
    if (t.abandoned >= this.#o.maxAbandoned) this.#replace(t, undefined, 'too many pages abandoned');
  }

  #reason(call: Call, what: string): string {
    return `spider "${call.message.spider}": parse ${what} (its time budget, CRAWLER_PARSE_TIMEOUT_MS); the spider thread was stopped`;
  }

  /** Terminates `t`, fails `culprit` (if any) and hands every other page on it to a new thread, uncharged. */
  #replace(t: Thread, culprit: Call | undefined, why: string): void {
    if (t.dead) return;
    t.dead = true;
    this.replaced++;
    this.#o.log.warn('spider thread replaced', {
      reason: why,
      spider: culprit?.message.spider,
      url: culprit?.message.request.url,
      pages: t.calls.size,
    });
    void t.worker.terminate();
    if (culprit) this.#settle(t, culprit, new SpiderBudgetError(this.#reason(culprit, why)));
    this.#requeue(t);
  }

  /** What killed a thread, from its 'error' event (`error`) or, without one, its exit `code`. */
  #death(error: unknown, code: number | undefined): Death {
    if ((error as { code?: string } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
      return {
        oom: true,
        what: `ran out of memory (its heap limit, CRAWLER_PLUGIN_MEMORY_MB=${this.#o.memoryMb}; ERR_WORKER_OUT_OF_MEMORY)`,
      };
    }
    if (error !== undefined) {
      // What a plugin's timer threw reaches here as it was thrown: an Error, or any other value.
      const thrown = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return { oom: false, what: `died of an uncaught exception (${thrown})` };
    }
    return { oom: false, what: `exited with code ${code}` };
  }

  /** The thread died on its own: charges the page that killed it, if known (see the class doc), requeues the rest. */
  #onDeath(t: Thread, death: Death): void {
    if (t.dead) return;
    t.dead = true;
    this.replaced++;
    const received = Atomics.load(t.shared, SLOT_RECEIVED);
    const calls = [...t.calls.values()];
    const started = calls.filter((c) => c.seq < received);
    const culprit =
      t.calls.get(Atomics.load(t.shared, SLOT_CALL)) ??
      (started.length === 1 ? started[0] : undefined) ??
      (started.length === 0 && death.oom ? calls.find((c) => c.seq === received) : undefined);
    this.#o.log.error('spider thread died', {
      reason: death.what,
      spider: culprit?.message.spider,
      url: culprit?.message.request.url,
      pages: calls.length,
      suspects: culprit || started.length < 2 ? undefined : started.map((c) => c.message.request.url).slice(0, 5),
    });
    if (culprit) {
      this.#settle(
        t,
        culprit,
        new SpiderBudgetError(
          `spider "${culprit.message.spider}": the spider thread ${death.what} while this page's parse was in progress; the thread was replaced`,
        ),
      );
    } else if (started.length > 1) {
      for (const call of started) call.suspect = true;
    } else {
      for (const call of calls) {
        call.unblamed++;
        if (call.unblamed < MAX_UNBLAMED_DEATHS) continue;
        this.#settle(
          t,
          call,
          new SpiderBudgetError(
            `spider "${call.message.spider}": ${call.unblamed} spider threads died while this page waited on them, the last one ${death.what}; the page was not parsed`,
          ),
        );
      }
    }
    this.#requeue(t);
  }

  /** Hands the pages left on dead thread `t` to a new one: suspects first, each alone, then the others in order. */
  #requeue(t: Thread): void {
    const left = [...t.calls.values()];
    t.calls.clear();
    for (const call of left) clearTimeout(call.timer);
    if (this.#closed) {
      for (const call of left) call.reject(new Error('the spider sandbox is closed'));
      return;
    }
    if (this.#alone !== undefined && left.includes(this.#alone)) {
      // The suspect running alone died with nothing to blame: it goes first again.
      this.#suspects.unshift(this.#alone);
      this.#alone = undefined;
    }
    for (const call of left) if (call.suspect && !this.#suspects.includes(call)) this.#suspects.push(call);
    for (const call of left) if (!call.suspect) void this.#send(call);
    this.#next();
  }
}

/**
 * `promise`, or a {@link SpiderBudgetError} after `ms` (the promise itself is abandoned): the time budget of a
 * built-in spider's async work, which runs on the crawler's own event loop. A value that is not a promise is
 * returned as it is, with no timer.
 */
export function withBudget<T>(value: T | PromiseLike<T>, ms: number, what: () => string): T | Promise<T> {
  if (typeof (value as Partial<PromiseLike<T>> | undefined)?.then !== 'function') return value as T;
  return rejectAfter(value as PromiseLike<T>, ms, () => new SpiderBudgetError(what()));
}
