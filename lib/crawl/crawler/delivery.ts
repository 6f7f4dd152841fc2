/**
 * The crawler's delivery (docs/design.md §5): a processed page is published (a page is never acked before Kafka
 * stored it), then acked together with its children (stored before or atomically with the ack: frontier `ack`),
 * then its crawl's completion notice when the ack completed it, then its counters. Page messages go out in batches
 * (lib/kafka/batching-sink.ts), acks in folded calls: the acks of one turn of the event loop in one `ackMany`.
 * Per-app copies are best effort.
 *
 * It holds the whole of delivery: a worker hands its page over and moves on ({@link Delivery.hand}), waiting only
 * while more than `maxDelivering` deliveries are pending; a failure on infrastructure closes the delivery gate
 * (lib/crawl/crawler/gate.ts) and sends the requests leased ahead back, and the next page stored opens it again.
 *
 * A page message that Kafka does not store (the broker down) and an ack that fails (Redis full, a shard failing over,
 * Redis gone for a while) are kept, the ack with its children, and tried again with a backoff while this process
 * holds the lease (lib/crawl/crawler/lease-keeper.ts extends it): releasing the lease would have the page fetched and published again. Only a process that dies leaves its leases to be reclaimed and fetched again. An ack
 * whose children Redis refuses for good is never stored without them: after {@link ACK_REFUSED_TRIES} tries it fails
 * the request (a visible `success:false` page), so no child is dropped unseen.
 */
import { createHash } from 'node:crypto';
import { failureCause, InfrastructureError, PartialBatchError } from '../../errors.ts';
import { type AckResult, type Lease, partitionId } from '../../frontier-model.ts';
import { batchingSink } from '../../kafka/batching-sink.ts';
import type { PerAppSender } from '../../kafka/per-app.ts';
import { clusterTopics, crawledAppTopic, isTopicSafeAppid, outboundAppTopic } from '../../kafka/topics.ts';
import type { CrawlerFrontier, Log, MessageSink, OutMessage } from '../../ports.ts';
import type { FailureNote } from '../../stats-model.ts';
import type { BodyStore } from '../fetch/body-store.ts';
import type { FetchResult, PageItem } from '../types.ts';
import type { ChildBatch } from './children.ts';
import type { PageCounters } from './counters.ts';
import { type DeliveryGate, watchPublish } from './gate.ts';
import type { IdleWorkers } from './idle.ts';
import type { LeasePump } from './leasing.ts';
import { pageMessage } from './page-message.ts';

/** The default linger of page messages (ms): how long one waits for others to be produced with it. */
export const DEFAULT_PRODUCE_LINGER_MS = 5;

/**
 * Deliveries (publish, then ack) a process lets wait per fetch slot by default (lib/crawl/crawler/options.ts
 * `maxDelivering`). A delivery waits the produce linger, the broker and the ack's Redis call, while a worker
 * processes a page in well under a millisecond of CPU: with one delivery per slot a worker is bound by that wait,
 * not by its CPU. A few per slot keep it busy and make bigger produce requests and acks (less CPU a page); more
 * gain nothing and hold more pages in memory.
 */
export const DELIVERIES_PER_FETCH = 4;

/** The first wait before a kept page or ack is tried again (ms); it doubles up to {@link KEPT_RETRY_MAX_MS}. */
const KEPT_RETRY_FIRST_MS = 100;
/** The longest wait between two tries of a kept page or ack (ms). */
const KEPT_RETRY_MAX_MS = 5000;
/** Tries of an ack refused as poison (a script error, not infrastructure) before its request fails instead. */
const ACK_REFUSED_TRIES = 3;

/** A kept page or ack was abandoned: the process is stopping and its deadline passed (its lease is released). */
class DeliveryAbandonedError extends InfrastructureError {}

/** Room left in a produced batch for the record batch's own header. */
const BATCH_OVERHEAD_BYTES = 1024;

/**
 * Where a crawler's messages go: `inner` itself when `lingerMs` is 0, else a batching sink over it whose batches
 * wait at most `lingerMs` and, like each page message, fit the broker's `maxMessageBytes` (with room for the record
 * batch's own header). Exported for the bench's publish floor (bench/lib/floor.ts), which publishes as a worker does.
 */
export function crawlerSink(inner: MessageSink, lingerMs: number, maxMessageBytes: number): MessageSink {
  if (lingerMs <= 0) return inner;
  return batchingSink(inner, { lingerMs, maxBytes: Math.max(1, maxMessageBytes - BATCH_OVERHEAD_BYTES) });
}

/** A page processed and ready to deliver. */
export interface Processed {
  page: PageItem;
  response: FetchResult;
  children: ChildBatch;
}

/** An ack waiting for the next flush ({@link Delivery}'s folded acks). */
interface PendingAck {
  lease: Lease;
  outcome: 'done' | 'fail';
  children: ChildBatch | undefined;
  resolve: (r: AckResult) => void;
  reject: (e: unknown) => void;
}

export interface DeliveryOptions {
  frontier: Pick<CrawlerFrontier, 'ack' | 'ackMany' | 'release'>;
  /** Where page messages and notices go (already batched: {@link crawlerSink}). */
  sink: MessageSink;
  perApp: PerAppSender;
  counters: PageCounters;
  topicPrefix: string;
  appidTopics: boolean;
  base64: boolean;
  maxMessageBytes: number;
  bodyStore?: BodyStore;
  now: () => number;
  log: Log;
  /** Closed while delivery fails on infrastructure, opened by the next page stored. */
  gate: DeliveryGate;
  /** Where the requests leased ahead wait: sent back when the gate closes, for crawlers that can deliver. */
  leasedAhead: Pick<LeasePump, 'drain'>;
  /** The sleeping workers: all woken when the gate opens again. */
  idle: Pick<IdleWorkers, 'wakeAll'>;
  /** The process's fetch slots now: {@link DELIVERIES_PER_FETCH} deliveries each may be pending. */
  slots: { readonly limit: number };
  /** Deliveries that may be pending before a worker waits, whatever the slots (lib/crawl/crawler/options.ts). */
  maxDelivering?: number;
}

export class Delivery {
  readonly #o: DeliveryOptions;
  /** Acks waiting for the next {@link #flushAcks}. */
  #acks: PendingAck[] = [];
  /** Pages published since start. */
  pages = 0;
  /** Page messages being published: when each send began (this process's clock), in order. */
  readonly #sending = new Set<{ at: number }>();
  /** Set by {@link abandon}: kept acks stop being tried. */
  #abandoned = false;
  /** Wakes the kept acks waiting out their backoff. */
  readonly #wakers = new Set<() => void>();
  /** Deliveries handed over by workers that moved on, until each is stored (or given up). */
  readonly #pending = new Set<Promise<void>>();
  /** Workers waiting for a pending delivery to end (more than `maxDelivering` pending), first come first woken. */
  readonly #waiters: (() => void)[] = [];
  /** Stops the watch on stalled page messages ({@link watch}). */
  #unwatch = () => {};

  constructor(options: DeliveryOptions) {
    this.#o = options;
  }

  /** Deliveries that may be pending before a worker waits. */
  get #maxPending(): number {
    return this.#o.maxDelivering ?? Math.max(1, this.#o.slots.limit * DELIVERIES_PER_FETCH);
  }

  /** Starts watching the oldest page message being published: one stalled closes the gate (lib/crawl/crawler/gate.ts). */
  watch(): void {
    this.#unwatch = watchPublish(
      this.#o.gate,
      () => this.publishWaitMs(this.#o.now()),
      (ms) => this.failed(new InfrastructureError(`Kafka has not stored a page message for ${ms} ms`)),
    );
  }

  /** Stops the watch. */
  unwatch(): void {
    this.#unwatch();
  }

  /**
   * Takes over a request's delivery (`delivering`: its publish and ack, or its failure's handling) once its worker
   * moved on; resolves when the worker may take its next request: at once, or once a pending delivery ends when
   * more than `maxDelivering` are. `probe`: the request was the gate's probe (lib/crawl/crawler/gate.ts).
   */
  async hand(delivering: Promise<void>, url: string, probe: boolean): Promise<void> {
    const done = delivering
      .catch((error: unknown) => {
        // The crawler settles every failure itself; anything escaping it must not end the process.
        this.#o.log.error('delivery failed', { url, error: (error as Error).message });
      })
      .finally(() => {
        this.#pending.delete(done);
        this.#waiters.shift()?.();
        // A probe that never reached the sink (its fetch failed and was retried): the next worker probes instead.
        if (probe) this.#o.gate.probeEnded();
      });
    this.#pending.add(done);
    // Woken one at a time as deliveries end: O(1) per page.
    while (this.#pending.size > this.#maxPending) await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  /** Settles once every delivery pending now has ended (stop). */
  async settled(): Promise<void> {
    await Promise.all(this.#pending);
  }

  /**
   * A delivery failed on infrastructure: the gate closes (or stays closed, longer), and when it just closed the
   * requests leased ahead and not started go back at once for crawlers that can deliver.
   */
  failed(error: unknown): void {
    if (!this.#o.gate.failed()) return;
    this.#o.log.warn('delivery failing; leasing stops until a probe gets through', {
      error: (error as Error)?.message ?? String(error),
    });
    const ahead = this.#o.leasedAhead.drain();
    if (ahead.length > 0) void this.release(ahead);
  }

  /**
   * Gives leases back to their queues: one call per partition, a call that fails on infrastructure tried again (100
   * ms doubling to 5 s) until it is stored or {@link abandon}. A release lost to a Redis outage (a shard failing over)
   * would leave its requests held by no one until reclaimed, a LEASE_TIMEOUT later and a try charged. A call is never
   * sent again for another partition's leases: released already, they may be another crawler's lease by then. Runs as
   * a pending delivery ({@link settled} waits for it). Resolves with how many were released.
   */
  release(leases: readonly Lease[]): Promise<number> {
    const groups = new Map<string, Lease[]>();
    for (const l of leases) {
      const p = l.partition;
      const id = partitionId(p);
      const group = groups.get(id);
      if (group) group.push(l);
      else groups.set(id, [l]);
    }
    const done = Promise.all([...groups.values()].map((group) => this.#releaseKept(group))).then((n) =>
      n.reduce((a, b) => a + b, 0),
    );
    const pending = done.then(() => undefined);
    this.#pending.add(pending);
    void pending.finally(() => {
      this.#pending.delete(pending);
      this.#waiters.shift()?.();
    });
    return done;
  }

  async #releaseKept(leases: Lease[]): Promise<number> {
    let waitMs = KEPT_RETRY_FIRST_MS;
    for (let failures = 0; ; failures++) {
      try {
        return await this.#o.frontier.release(leases);
      } catch (error) {
        if (failureCause(error) !== 'infrastructure' || this.#abandoned) return 0;
        if (failures === 0) {
          this.#o.log.warn('release not stored; tried again', {
            url: leases[0]?.url,
            leases: leases.length,
            error: (error as Error)?.message ?? String(error),
          });
        }
        await this.#pause(waitMs);
        waitMs = Math.min(waitMs * 2, KEPT_RETRY_MAX_MS);
      }
    }
  }

  /** A page message or an ack was stored: the gate opens if it was closed, and the sleeping workers lease again. */
  #worked(): void {
    const downMs = this.#o.gate.worked();
    if (downMs === undefined) return;
    this.#o.log.info('delivery works again; leasing resumes', { downMs });
    this.#o.idle.wakeAll();
  }

  /**
   * How long the oldest page message still being published has waited for Kafka (ms; 0 when none is): the broker's
   * state as this process sees it, long before kafkajs gives up on a send.
   */
  publishWaitMs(now: number): number {
    for (const { at } of this.#sending) return Math.max(0, now - at);
    return 0;
  }

  /**
   * Stops trying kept pages and acks (the crawler's stop, past its deadline): each ends with
   * {@link DeliveryAbandonedError} and the crawler releases its lease.
   */
  abandon(): void {
    this.#abandoned = true;
    for (const wake of this.#wakers) wake();
  }

  /**
   * Publishes the page, then acks it with its children; an ack that fails is kept and tried again (module note).
   */
  async deliver(lease: Lease, page: PageItem, status: string, processed?: Processed): Promise<void> {
    const message = await pageMessage(page, {
      maxBytes: this.#o.maxMessageBytes,
      base64: this.#o.base64,
      bodyStore: this.#o.bodyStore,
      // Lease handles are opaque (binary); a hash of one names the body uniquely and safely.
      bodyKey: () =>
        `${encodeURIComponent(page.appid)}/${encodeURIComponent(page.crawlid)}/${createHash('sha1').update(lease.handle).digest('hex')}`,
      response: processed?.response,
    });
    // The message is built: the body no longer counts in the process's body budget.
    processed?.response.release?.();
    const { appid, crawlid, spiderid, success } = page;
    const failure = success
      ? undefined
      : { url: page.url, status_code: page.status_code, exception: page.exception ?? '', at: this.#o.now() };
    // From here on the page and its response (the body, its text: ~2× the page's size) are no longer referenced:
    // they die now, in the young generation, instead of surviving the scavenges of the store and the ack.
    return this.#store(lease, { appid, crawlid, spiderid }, success, status, message, processed?.children, failure);
  }

  /** {@link deliver}'s second half: the page message stored, then the ack, the completion notice and the stats. */
  async #store(
    lease: Lease,
    ids: Pick<PageItem, 'appid' | 'crawlid' | 'spiderid'>,
    success: boolean,
    status: string,
    message: OutMessage,
    children: ChildBatch | undefined,
    failure?: FailureNote,
  ): Promise<void> {
    const o = this.#o;
    const topics = clusterTopics(o.topicPrefix);
    await this.#kept('page', lease, 1, async () => {
      const sending = { at: o.now() };
      this.#sending.add(sending);
      try {
        await o.sink.send([{ topic: topics.crawledFirehose, messages: [message] }]);
      } finally {
        this.#sending.delete(sending);
      }
    });
    this.#worked();
    this.pages++;
    // Why it failed, for the dashboard: noted before the ack, so a crawl that completes has its reasons. Best effort.
    if (failure !== undefined) {
      await o.counters
        .noteFailure(ids, failure)
        .catch((e: Error) => o.log.warn('noting a failed page failed', { error: e.message }));
    }
    if (o.appidTopics) await this.#sendPerApp(crawledAppTopic(o.topicPrefix, ids.appid), ids.appid, message);
    const ack = await this.#ackKept(lease, success ? 'done' : 'fail', children);
    // Acks fail alone when Redis fails and Kafka does not (a shard failing over): one stored reopens the gate.
    this.#worked();
    if (ack.complete) {
      const notice: OutMessage = {
        key: ids.appid,
        value: JSON.stringify({
          action: 'complete',
          appid: ids.appid,
          crawlid: ids.crawlid,
          spiderid: ids.spiderid,
          total_pages: ack.done,
          total_failed: ack.failed,
          server_time: Math.floor(o.now() / 1000),
        }),
      };
      await o.sink.send([{ topic: topics.outboundFirehose, messages: [notice] }]);
      if (o.appidTopics) await this.#sendPerApp(outboundAppTopic(o.topicPrefix, ids.appid), ids.appid, notice);
    }
    await o.counters.count(lease.crawl.spiderid, status);
  }

  /**
   * {@link #ack}, tried again after a failure (see {@link #kept}); a refusal (poison) is tried
   * {@link ACK_REFUSED_TRIES} times, then thrown for the crawler to fail the request.
   */
  #ackKept(lease: Lease, outcome: 'done' | 'fail', children: ChildBatch | undefined): Promise<AckResult> {
    return this.#kept('ack', lease, ACK_REFUSED_TRIES, () => this.#ack(lease, outcome, children));
  }

  /**
   * Runs `attempt` until it succeeds, trying again after an infrastructure failure with a doubling backoff (100 ms to
   * 5 s) until {@link abandon}; a refusal (poison) is thrown at the `refusedTries`-th. Each failure on infrastructure
   * closes the delivery gate ({@link failed}); logged when it first fails and when it
   * succeeds after failing.
   */
  async #kept<T>(what: 'ack' | 'page', lease: Lease, refusedTries: number, attempt: () => Promise<T>): Promise<T> {
    const o = this.#o;
    let waitMs = KEPT_RETRY_FIRST_MS;
    let refused = 0;
    let failures = 0;
    for (;;) {
      try {
        const result = await attempt();
        if (failures > 0) o.log.info(`kept ${what} stored`, { url: lease.url, tries: failures + 1 });
        return result;
      } catch (error) {
        const infrastructure = failureCause(error) === 'infrastructure';
        if (!infrastructure && ++refused >= refusedTries) throw error;
        const message = (error as Error)?.message ?? String(error);
        if (this.#abandoned)
          throw new DeliveryAbandonedError(`${what} abandoned at stop: ${message}`, { cause: error });
        if (failures++ === 0) {
          o.log.warn(`${what} not stored; kept and tried again while this process holds the lease`, {
            url: lease.url,
            error: message,
          });
        }
        if (infrastructure) this.failed(error);
        await this.#pause(waitMs);
        waitMs = Math.min(waitMs * 2, KEPT_RETRY_MAX_MS);
      }
    }
  }

  /** Waits `ms`, or less when {@link abandon} is called meanwhile. */
  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#wakers.add(wake);
    });
  }

  /**
   * Acks a lease with its children, together with the other acks of the same turn of the event loop (the pages of
   * one Kafka batch are stored, and acked, at once): one frontier `ackMany`, one script call per partition instead
   * of one per page. A batch refused as poison is acked lease by lease, so only the lease at fault fails.
   */
  #ack(lease: Lease, outcome: 'done' | 'fail', children: ChildBatch | undefined): Promise<AckResult> {
    return new Promise((resolve, reject) => {
      this.#acks.push({
        lease,
        outcome,
        children: children && children.size > 0 ? children : undefined,
        resolve,
        reject,
      });
      if (this.#acks.length === 1) setImmediate(() => void this.#flushAcks());
    });
  }

  async #flushAcks(): Promise<void> {
    const batch = this.#acks;
    this.#acks = [];
    try {
      const results = await this.#o.frontier.ackMany(batch, this.#o.now());
      batch.forEach((a, i) => {
        a.resolve(results[i] as AckResult);
      });
    } catch (error) {
      // Those stored are done; the others failed on infrastructure (rejected: released) or were refused (poison:
      // acked each alone, so only the lease at fault fails).
      const partial = error instanceof PartialBatchError ? (error as PartialBatchError<AckResult>) : undefined;
      for (const [i, a] of batch.entries()) {
        const stored = partial?.results[i];
        if (stored) {
          a.resolve(stored);
          continue;
        }
        const cause = partial ? partial.errors[i] : error;
        if (failureCause(cause) === 'infrastructure' || batch.length === 1) a.reject(cause);
        else await this.#o.frontier.ack(a.lease, a.outcome, this.#o.now(), a.children).then(a.resolve, a.reject);
      }
    }
  }

  /**
   * A per-app copy: best effort (the topic may not exist, auto-create is off), as the monitors treat them. Sent on
   * its own, never in the batching sink: Kafka refuses a whole produce request when one of its topics is missing,
   * so a per-app copy batched with other pages' firehose messages would fail (and release) those pages too.
   */
  async #sendPerApp(topic: string, appid: string, message: OutMessage): Promise<void> {
    if (!isTopicSafeAppid(appid)) return;
    // Never throws; a topic found missing costs microseconds until it is looked up again (lib/kafka/per-app.ts).
    await this.#o.perApp.send([{ topic, messages: [message] }]);
  }
}
