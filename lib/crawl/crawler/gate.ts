/**
 * The crawler's delivery gate (docs/design.md §5): while delivery (Kafka, or the ack's Redis) fails on
 * infrastructure, leasing stops, so a crawler whose sink is down does not fetch pages it cannot publish (each would
 * be fetched again elsewhere). One probe request at a time goes through once the backoff has passed; its delivery
 * reopens the gate, or closes it for twice as long (at most {@link MAX_DELIVERY_BACKOFF_MS}). Any page message or
 * ack stored meanwhile (a kept one tried again) reopens it too: delivery works again.
 */

/**
 * A page message still unstored after this long (ms) closes the gate as a failure would: a broker that went away
 * is noticed in seconds, not after kafkajs's own retries give up, and the workers stop fetching pages they cannot
 * publish. Well above a healthy publish (a linger and one acks=all round trip).
 */
export const PUBLISH_STALL_MS = 2000;
/** How often the crawler looks at its oldest unstored page message (ms). */
const PUBLISH_STALL_CHECK_MS = 250;

/** How long leasing stops after a first delivery failure on infrastructure, before one probe request (ms). */
const MIN_DELIVERY_BACKOFF_MS = 500;
/** The longest leasing stops between two probes while delivery stays down (ms). */
const MAX_DELIVERY_BACKOFF_MS = 5000;

export class DeliveryGate {
  readonly #now: () => number;
  readonly #idlePollMs: number;
  /** Set while delivery is down: since when, when the next probe may go, the current backoff. */
  #down: { since: number; retryAt: number; backoffMs: number } | undefined;
  /** A probe request is under way while delivery is down. */
  #probing = false;
  /** Times delivery went down and leasing stopped, since start. */
  closings = 0;

  constructor(now: () => number, idlePollMs: number) {
    this.#now = now;
    this.#idlePollMs = idlePollMs;
  }

  /** Delivery is failing: nothing is leased but the probe. */
  get closed(): boolean {
    return this.#down !== undefined;
  }

  /**
   * How long a worker waits before leasing: 0 means lease now. While the gate is closed, the first worker to ask
   * after the backoff gets 0 and becomes the probe ({@link probeEnded} when it ends without reaching the sink).
   */
  wait(): number {
    const down = this.#down;
    if (down === undefined) return 0;
    const now = this.#now();
    if (this.#probing || now < down.retryAt) return Math.max(5, Math.min(this.#idlePollMs, down.retryAt - now));
    this.#probing = true;
    return 0;
  }

  /** The probe ended without a delivery (nothing leased, or its fetch failed): the next worker probes instead. */
  probeEnded(): void {
    this.#probing = false;
  }

  /**
   * A delivery failed on infrastructure: closes the gate, or keeps it closed twice as long once the wait for a probe
   * is over (the probe, or another delivery, failed again). Failures during the wait (the retries of deliveries kept
   * from before it closed) do not lengthen it: each would double the wait, and a short outage (a Redis shard failing
   * over) would stop leasing for the longest backoff after it ended. True when it just closed.
   */
  failed(): boolean {
    const now = this.#now();
    const was = this.#down;
    if (was && now < was.retryAt) return false;
    const backoffMs = was ? Math.min(was.backoffMs * 2, MAX_DELIVERY_BACKOFF_MS) : MIN_DELIVERY_BACKOFF_MS;
    this.#down = { since: was?.since ?? now, retryAt: now + backoffMs, backoffMs };
    this.#probing = false;
    if (was) return false;
    this.closings++;
    return true;
  }

  /**
   * A page message or an ack was stored: the gate opens. Returns how long it was closed (ms), or undefined when it
   * was open.
   */
  worked(): number | undefined {
    const was = this.#down;
    if (was === undefined) return undefined;
    this.#down = undefined;
    this.#probing = false;
    return this.#now() - was.since;
  }
}

/**
 * Watches the oldest page message still being published (`waitMs`, 0 when none is) every
 * {@link PUBLISH_STALL_CHECK_MS}: past {@link PUBLISH_STALL_MS}, while the gate is open, `stalled` is called with the
 * wait (the crawler closes the gate as on a failure). Returns the function that stops the watch.
 */
export function watchPublish(gate: DeliveryGate, waitMs: () => number, stalled: (waitMs: number) => void): () => void {
  const timer = setInterval(() => {
    const ms = waitMs();
    if (ms >= PUBLISH_STALL_MS && !gate.closed) stalled(ms);
  }, PUBLISH_STALL_CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}
