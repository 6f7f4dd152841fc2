/**
 * Keeps this process's leases alive (frontier `extend`): a request whose page waits on a slow site, on Kafka
 * (slow, or down and retried) or on an ack kept through a Redis failure stays this crawler's, so reclaim, which
 * counts a retry against the request, takes back only the leases of crawlers that died or stalled. A lease is
 * extended once a third of its duration has passed since it was taken or last extended; a tick looks every
 * twelfth of the duration, so a lease is renewed with at least half of it left.
 */
import type { Lease } from '../../frontier-model.ts';
import type { CrawlerFrontier, Log } from '../../ports.ts';

export interface LeaseKeeperOptions {
  frontier: Pick<CrawlerFrontier, 'extend'>;
  /** The frontier's lease duration (ms; `LEASE_TIMEOUT` × 1000). */
  leaseMs: number;
  now: () => number;
  log: Log;
}

export class LeaseKeeper {
  readonly #o: LeaseKeeperOptions;
  /** Held leases → when their deadline was last set (leased or extended), by this process's clock. */
  readonly #held = new Map<Lease, number>();
  #timer: NodeJS.Timeout | undefined;
  #ticking = false;
  /** Leases extended since start. */
  extended = 0;

  constructor(options: LeaseKeeperOptions) {
    this.#o = options;
  }

  /** A lease this process works on from `since` (when it was leased). */
  hold(lease: Lease, since: number): void {
    this.#held.set(lease, since);
  }

  /** The lease was acked, released, retried or given up: no longer kept. */
  drop(lease: Lease): void {
    this.#held.delete(lease);
  }

  start(): void {
    this.#timer = setInterval(() => void this.tick(), Math.max(50, Math.floor(this.#o.leaseMs / 12)));
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** Extends every lease held for a third of its duration or more; one frontier call. Failures are logged. */
  async tick(): Promise<void> {
    if (this.#ticking) return;
    const now = this.#o.now();
    const due = [...this.#held].filter(([, at]) => now - at >= this.#o.leaseMs / 3).map(([lease]) => lease);
    if (due.length === 0) return;
    this.#ticking = true;
    try {
      this.extended += await this.#o.frontier.extend(due, now);
      for (const lease of due) if (this.#held.has(lease)) this.#held.set(lease, now);
    } catch (error) {
      // Redis is failing: the deadline stays; the next tick tries again (the lease may lapse if this lasts).
      this.#o.log.warn('extending leases failed', { leases: due.length, error: (error as Error).message });
    } finally {
      this.#ticking = false;
    }
  }
}
