/**
 * The crawl loop (docs/design.md §5): N concurrent workers per process lease requests from the frontier, fetch,
 * extract and filter links, publish the page, and only then ack it together with its children. Retryable failures go
 * back with a growing delay; after the last retry, and for failures that retrying cannot fix, a
 * `success:false` page is published (nothing an application asked for disappears without a trace).
 *
 * Waiting: when nothing is due, a worker sleeps until the frontier says the next domain is due (capped,
 * so new work is noticed within a second) — no busy polling.
 *
 * Shutdown: `stop()` stops leasing, lets in-flight work finish until the deadline, then aborts what is
 * left and releases those leases back to the queue, so nothing is lost.
 */
import { failureCause } from '../../errors.ts';
import type { Lease } from '../../frontier-model.ts';
import { perAppSenderFor } from '../../kafka/per-app.ts';
import { settlesWithin } from '../../timeout.ts';
import { DEFAULT_MAX_LINKS } from '../extract/links.ts';
import { type CrawlFailure, decideFailure, type FailurePolicy } from '../failure.ts';
import { failedPage } from '../page.ts';
import { mergeAttrs, splitRequestUrl } from '../spiders/run.ts';
import { SpiderBudgetError } from '../spiders/sandbox.ts';
import type { SpiderRequest } from '../types.ts';
import { PageCounters } from './counters.ts';
import { crawlerSink, DEFAULT_PRODUCE_LINGER_MS, Delivery, type Processed } from './delivery.ts';
import { DomainInFlight } from './domain-inflight.ts';
import { PageFetch } from './fetch-slot.ts';
import { DeliveryGate } from './gate.ts';
import { IdleWorkers } from './idle.ts';
import { LeaseKeeper } from './lease-keeper.ts';
import { LeasePump, type LeaseState } from './leasing.ts';
import { CRAWLER_TASK_KIND, HEARTBEAT_TTL_MS, LoadWindow } from './load-report.ts';
import type { CrawlerOptions } from './options.ts';
import { FetchSlots } from './slots.ts';

interface InFlight {
  lease: Lease;
  /** When this process got the lease (its `now`): how late the fetch starts is measured from here. */
  leasedAt: number;
  abort: AbortController;
  /** Past the fetch (publishing, acking): left to finish at the shutdown deadline rather than released. */
  fetched: boolean;
  /** Called once when the request's page is processed (or it ended before): its worker may take the next one. */
  freed: () => void;
}

/**
 * What the workers and the lease pump share of a crawler's state (the pump reads it as its {@link LeaseState}):
 * whether it stops, whether delivery is down, its fetch slots and its requests in flight per domain.
 */
class CrawlState implements LeaseState {
  stopping = false;
  readonly #gate: DeliveryGate;
  readonly #slots: FetchSlots;
  readonly #domains: DomainInFlight;

  constructor(gate: DeliveryGate, slots: FetchSlots, domains: DomainInFlight) {
    this.#gate = gate;
    this.#slots = slots;
    this.#domains = domains;
  }

  get deliveryDown(): boolean {
    return this.#gate.closed;
  }

  get slots(): number {
    return this.#slots.limit;
  }

  get fullDomains(): readonly string[] {
    return this.#domains.full;
  }

  inFlight(domain: string): number {
    return this.#domains.count(domain);
  }
}

/** The exception of a request given up because crawlers kept stopping while working on it. */
export const RECLAIMED_TOO_OFTEN =
  'given up without fetching: crawlers stopped or stalled while working on this request until its retries ran out (its leases expired and were reclaimed)';

/**
 * The crawl loop over its parts, one concern each: the lease pump (lib/crawl/crawler/leasing.ts), a fetch slot's work
 * (lib/crawl/crawler/fetch-slot.ts), how many slots (lib/crawl/crawler/slots.ts), the delivery gate (lib/crawl/crawler/gate.ts), the delivery
 * (lib/crawl/crawler/delivery.ts) and the page counters (lib/crawl/crawler/counters.ts). This class owns the workers, their turns, the
 * failure decision's actions and shutdown.
 */
export class Crawler {
  readonly #o: Required<
    Omit<CrawlerOptions, 'robots' | 'bodyStore' | 'ip' | 'sandbox' | 'adaptive' | 'maxDelivering'>
  > &
    Pick<CrawlerOptions, 'robots' | 'bodyStore' | 'ip' | 'sandbox' | 'adaptive' | 'maxDelivering'>;
  readonly #inFlight = new Set<InFlight>();
  #workers: Promise<void>[] = [];
  #heartbeat: NodeJS.Timeout | undefined;
  readonly #gate: DeliveryGate;
  readonly #state: CrawlState;
  readonly #pump: LeasePump;
  readonly #fetch: PageFetch;
  readonly #delivery: Delivery;
  readonly #keeper: LeaseKeeper;
  readonly #counters: PageCounters;
  readonly #slots: FetchSlots;
  readonly #domains: DomainInFlight;
  /** Workers with nothing to do, one of them polling (lib/crawl/crawler/idle.ts). */
  readonly #idle: IdleWorkers;
  /** What this process sustains, reported with its heartbeat (lib/crawl/crawler/load-report.ts). */
  readonly #load = new LoadWindow();

  constructor(options: CrawlerOptions) {
    const o = {
      appidTopics: false,
      base64: false,
      maxMessageBytes: 1_000_000,
      concurrency: 16,
      domainConcurrency: 16,
      retryTimes: 3,
      retryBaseDelayMs: 2000,
      parseTimeoutMs: 30_000,
      maxLinks: DEFAULT_MAX_LINKS,
      now: Date.now,
      idlePollMs: 1000,
      scoutPollMs: 50,
      produceLingerMs: DEFAULT_PRODUCE_LINGER_MS,
      statsFlushMs: 1000,
      heartbeatMs: 10_000,
      leaseMs: 120_000,
      ...options,
    };
    this.#o = o;
    this.#slots = new FetchSlots(o.concurrency, o.adaptive, o.now, o.log, (sample) =>
      this.#load.sample(o.now(), sample, this.pages),
    );
    this.#gate = new DeliveryGate(o.now, o.idlePollMs);
    this.#domains = new DomainInFlight(o.domainConcurrency);
    this.#idle = new IdleWorkers(o.idlePollMs, Math.min(o.scoutPollMs, o.idlePollMs));
    this.#state = new CrawlState(this.#gate, this.#slots, this.#domains);
    this.#pump = new LeasePump({
      frontier: o.frontier,
      spiderTypes: o.spiderTypes,
      scoutPollMs: o.scoutPollMs,
      ip: o.ip,
      now: o.now,
      perDomain: o.domainConcurrency,
      state: this.#state,
    });
    this.#fetch = new PageFetch({
      frontier: o.frontier,
      fetcher: o.fetcher,
      robots: o.robots,
      spiders: o.spiders,
      sandbox: o.sandbox,
      parseTimeoutMs: o.parseTimeoutMs,
      maxLinks: o.maxLinks,
      base64: o.base64,
      userAgent: o.userAgent,
      ip: o.ip,
      now: o.now,
      log: o.log,
    });
    this.#counters = new PageCounters({
      stats: o.stats,
      host: o.host,
      flushMs: o.statsFlushMs,
      now: o.now,
      log: o.log,
    });
    this.#keeper = new LeaseKeeper({ frontier: o.frontier, leaseMs: o.leaseMs, now: o.now, log: o.log });
    this.#delivery = new Delivery({
      frontier: o.frontier,
      sink: crawlerSink(o.sink, o.produceLingerMs, o.maxMessageBytes),
      // Per-app copies, best effort: a missing topic is remembered and skipped (lib/kafka/per-app.ts).
      perApp: perAppSenderFor(o.sink, { log: o.log }),
      counters: this.#counters,
      topicPrefix: o.topicPrefix,
      appidTopics: o.appidTopics,
      base64: o.base64,
      maxMessageBytes: o.maxMessageBytes,
      bodyStore: o.bodyStore,
      now: o.now,
      log: o.log,
      gate: this.#gate,
      leasedAhead: this.#pump,
      idle: this.#idle,
      slots: this.#slots,
      maxDelivering: o.maxDelivering,
    });
  }

  /** Pages published since start (for progress and tests). */
  get pages(): number {
    return this.#delivery.pages;
  }

  /** Fetches that started late enough to move their throttle hit (frontier `restamp`) since start. */
  get restamps(): number {
    return this.#fetch.restamps;
  }

  /** Times delivery went down and leasing stopped, since start (for tests and logs). */
  get gateClosings(): number {
    return this.#gate.closings;
  }

  /** Fetch slots in use now (for progress and tests). */
  get slotsInUse(): number {
    return this.#slots.inUse;
  }

  /** The slot limit now. */
  get slots(): number {
    return this.#slots.limit;
  }

  /** Starts the workers (returns at once). */
  start(): void {
    this.#load.begin(this.#o.now(), this.pages);
    // One beat per spider type served (the stats replies count those), and one for the process with its load report.
    const beat = () => {
      const { stats, nodeId } = this.#o;
      const now = this.#o.now();
      const load = JSON.stringify({
        ...this.#load.report(now, this.pages, this.#slots.limit),
        spiders: this.#o.spiderTypes,
      });
      void Promise.all([
        ...this.#o.spiderTypes.map((s) => stats.beat('crawler', `${s}|${nodeId}`, now, HEARTBEAT_TTL_MS)),
        stats.beat(CRAWLER_TASK_KIND, nodeId, now, HEARTBEAT_TTL_MS, load),
      ]).catch((e: Error) => this.#o.log.warn('heartbeat failed', { error: e.message }));
    };
    beat();
    this.#heartbeat = setInterval(beat, this.#o.heartbeatMs);
    this.#heartbeat.unref();
    this.#keeper.start();
    this.#delivery.watch();
    for (let i = 0; i < this.#slots.workers; i++) this.#workers.push(this.#work(i));
    this.#slots.start();
  }

  /**
   * Stops leasing; in-flight requests may finish until `deadlineMs`, then those still being fetched are
   * aborted and released (those already fetched are published and acked). Resolves when every worker has ended.
   */
  async stop(deadlineMs = 25_000): Promise<{ released: number }> {
    this.#state.stopping = true;
    this.#idle.wakeAll();
    this.#slots.stop();
    clearInterval(this.#heartbeat);
    this.#delivery.unwatch();
    // A crawler that stops is no longer live: its heartbeats go now, not at their TTL (the dashboard's fleet).
    await Promise.all(
      this.#o.spiderTypes.map((sp) => this.#o.stats.forget('crawler', `${sp}|${this.#o.nodeId}`)),
    ).catch((e: Error) => this.#o.log.warn('removing the heartbeat failed', { error: e.message }));
    // Leased ahead and never started: back to the queue at once (a lease call under way releases its own).
    const ahead = this.#pump.drain();
    if (ahead.length > 0) await this.#o.frontier.release(ahead).catch(() => 0);
    // Workers end once their request is processed; the deliveries they left run on until stored.
    const all = Promise.all(this.#workers).then(() => this.#delivery.settled());
    const timedOut = !(await settlesWithin(all, deadlineMs));
    let released = 0;
    if (timedOut) {
      // Requests still being fetched go back to the queue; those already fetched are being published and
      // acked, which is quick, and releasing them would have another crawler fetch them a second time.
      const left = [...this.#inFlight].filter((f) => !f.fetched);
      for (const f of left) f.abort.abort();
      released = await this.#o.frontier.release(left.map((f) => f.lease)).catch(() => 0);
      // Pages and acks kept through a Kafka or Redis failure that outlasted the deadline: given up, their leases
      // released (or, with Redis still gone, reclaimed once it is back).
      this.#delivery.abandon();
    }
    // A worker's failure (none is expected: each settles its own) still ends the stop with it.
    await all;
    this.#keeper.stop();
    await this.flushStats();
    return { released };
  }

  /**
   * Counts one request through a proxy (CRAWLER_PROXIES), written with the page counters: the fetcher's
   * `onProxyOutcome`.
   */
  countProxy(proxy: string, outcome: string): void {
    this.#counters.countProxy(proxy, outcome);
  }

  /** Writes the summed page counters to the stats store (stop does it too; lib/crawl/crawler/counters.ts). */
  flushStats(): Promise<void> {
    return this.#counters.flush();
  }

  async #work(index: number): Promise<void> {
    const state = this.#state;
    while (!state.stopping) {
      if (index >= this.#slots.limit) {
        this.#idle.resign(index);
        await this.#slots.park(index);
        continue;
      }
      // After a look that leased nothing: when the next request may be due (ms from now; undefined: not known), or
      // null after an error (then the loop backs off idlePollMs).
      let dueInMs: number | undefined | null;
      const gate = this.#gate.wait();
      if (gate > 0) {
        // Delivery is down: nothing is leased (a page fetched now could not be published) until a probe gets through;
        // one worker waits for the probe's turn, the others until delivery works again (its wakeAll).
        await this.#idle.idle(index, gate);
        continue;
      }
      const probe = this.#gate.closed;
      try {
        const r = await this.#pump.next();
        if (r.lease && state.stopping) {
          // Leased while stop() began: not started, so it goes straight back.
          await this.#o.frontier.release([r.lease]).catch(() => undefined);
          break;
        }
        if (r.lease) {
          this.#idle.leased(index, r.more ?? false);
          this.#slots.taken();
          const domain = r.lease.domain;
          this.#domains.start(domain);
          try {
            await this.#handle(r.lease, r.leasedAt ?? this.#o.now(), probe);
          } finally {
            this.#slots.returned();
            // Back under its cap: a worker that found only this domain's requests due may lease them now.
            if (this.#domains.end(domain)) this.#idle.wake(1);
          }
          continue;
        }
        if (probe) this.#gate.probeEnded();
        // Only domains at their cap are ready: idle, but not for lack of work (lib/crawl/crawler/idle.ts scout).
        if (r.nextDueMs !== null) dueInMs = r.nextDueMs - this.#o.now();
        else dueInMs = r.excludedOnly ? Number.POSITIVE_INFINITY : undefined;
      } catch (error) {
        if (probe) this.#gate.probeEnded();
        if (this.#idle.speaksFor(index))
          this.#o.log.error('crawl loop error; backing off', { error: (error as Error).message });
        dueInMs = null;
      }
      if (state.stopping) break;
      // Only one idle worker looks again on a timer, sooner while work keeps coming (lib/crawl/crawler/idle.ts); the others
      // wait to be woken.
      if (dueInMs === null) await this.#idle.idle(index, this.#o.idlePollMs);
      else await this.#idle.scout(index, dueInMs);
    }
    this.#idle.resign(index);
  }

  /**
   * Crawls one leased request, returning as soon as its page is processed: its delivery (publish, ack) goes on in
   * the background, so the worker fetches its next page meanwhile (or waits while too many are pending: delivery.ts).
   */
  async #handle(lease: Lease, leasedAt: number, probe = false): Promise<void> {
    let freed!: () => void;
    const free = new Promise<void>((resolve) => {
      freed = resolve;
    });
    const whole = this.#handleAll(lease, leasedAt, freed);
    await Promise.race([whole, free]);
    await this.#delivery.hand(whole, lease.url, probe);
  }

  async #handleAll(lease: Lease, leasedAt: number, freed: () => void): Promise<void> {
    const flight: InFlight = { lease, leasedAt, abort: new AbortController(), fetched: false, freed };
    this.#inFlight.add(flight);
    this.#keeper.hold(lease, leasedAt);
    const req = this.#request(lease);
    try {
      await this.#crawl(lease, req, flight);
    } catch (error) {
      if (flight.abort.signal.aborted) return; // released by stop()
      // Publishing or acking failed. Infrastructure: released, uncounted. Poison (the message refused for
      // good, a script error): one small give-up page instead, and if even that fails, released.
      let last = error;
      const decision = decideFailure({ kind: 'error', error, stage: 'deliver' }, this.#policy(lease));
      if (decision.action === 'give_up') {
        try {
          await this.#delivery.deliver(lease, failedPage(req, decision.exception), 'error');
          return;
        } catch (again) {
          last = again;
        }
      }
      this.#o.log.error('request failed on infrastructure; releasing it', {
        url: lease.url,
        error: (last as Error).message,
      });
      if (failureCause(last) === 'infrastructure') this.#delivery.failed(last);
      await this.#delivery.release([lease]);
    } finally {
      this.#inFlight.delete(flight);
      this.#keeper.drop(lease);
      freed();
    }
  }

  #request(lease: Lease): SpiderRequest {
    // The queued URL may carry the attrs its parent gave it (lib/crawl/spiders/run.ts); nothing past here sees the fragment.
    const { url, attrs } = splitRequestUrl(lease.url);
    const req: SpiderRequest = {
      url,
      depth: lease.depth,
      priority: lease.priority,
      retries: lease.retries,
      crawl: lease.crawl,
      spider: lease.partition?.spider ?? lease.crawl.spiderid,
    };
    const merged = mergeAttrs(lease.crawl.attrs, attrs);
    if (merged !== undefined) req.attrs = merged;
    return req;
  }

  #policy(lease: Lease): FailurePolicy {
    return { retries: lease.retries, retryTimes: this.#o.retryTimes, baseDelayMs: this.#o.retryBaseDelayMs };
  }

  /**
   * Processes the page (robots, fetch, extract), then acts: a page is delivered, a failure goes through
   * {@link decideFailure}. Anything thrown while processing is a failure of this page, never of the loop.
   */
  async #crawl(lease: Lease, req: SpiderRequest, flight: InFlight): Promise<void> {
    // Only reclaim takes retries past the limit (retry stops at it): crawlers stopped or stalled while working
    // on this request, again and again. It may be what kills them, so it is given up without fetching it.
    if (lease.retries > this.#o.retryTimes) {
      flight.fetched = true;
      await this.#delivery.deliver(lease, failedPage(req, RECLAIMED_TOO_OFTEN), 'error');
      return;
    }
    let outcome: Processed | CrawlFailure | 'requeued';
    try {
      outcome = await this.#fetch.process(lease, req, flight.leasedAt, flight.abort.signal);
    } catch (error) {
      if (flight.abort.signal.aborted) throw error;
      outcome =
        error instanceof SpiderBudgetError
          ? { kind: 'budget', reason: error.message }
          : { kind: 'error', error, stage: 'process' };
    }
    flight.fetched = true;
    flight.freed();
    // Its domain's next turn was too far off: restamp put the request back in its queue, unfetched and uncounted.
    if (outcome === 'requeued') return;
    // The body's share of the body budget goes back once the page is done with it, whatever happens (delivery gives
    // it back sooner, once the message is built).
    const response = 'response' in outcome ? outcome.response : undefined;
    try {
      if ('kind' in outcome) {
        await this.#fail(lease, req, outcome);
        return;
      }
      await this.#delivery.deliver(lease, outcome.page, String(outcome.response.status), outcome);
    } finally {
      response?.release?.();
    }
  }

  /** Acts on a failure as {@link decideFailure} says. */
  async #fail(lease: Lease, req: SpiderRequest, failure: CrawlFailure): Promise<void> {
    const o = this.#o;
    const decision = decideFailure(failure, this.#policy(lease));
    const response = failure.kind === 'status' ? failure.response : undefined;
    const status = response ? String(response.status) : failure.kind === 'robots' ? 'robots' : 'error';
    switch (decision.action) {
      case 'retry':
        await o.frontier.retry(lease, decision.delayMs, o.now(), decision.holdDomainMs ?? 0);
        await this.#counters.count(lease.crawl.spiderid, response ? status : 'retry');
        return;
      case 'give_up':
        await this.#delivery.deliver(lease, failedPage(req, decision.exception, response, o.base64), status);
        return;
      case 'release':
        o.log.error('request failed on infrastructure; releasing it', { url: lease.url, reason: decision.reason });
        await this.#delivery.release([lease]);
        return;
    }
  }
}
