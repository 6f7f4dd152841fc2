/**
 * What this process knows is in each crawl's dupefilter, so a page's children that are surely duplicates are not
 * sent to Redis again (docs/design.md §5). On a link-dense site most children are duplicates: 19 of 20 in the crawl
 * bench, each seven script arguments and a dupefilter lookup in Redis.
 *
 * Knowledge is held per dupefilter generation. ack-enqueue.lua gives each dupefilter HASH a token when it is created
 * (a sequence number of its partition, never reused) and returns it with every call. The fingerprints a call sent
 * and Redis answered queued or duplicate are in the HASH holding that token, and stay there for the HASH's
 * lifetime: a dupefilter only grows. A stop, a TTL expiry or a crawl fed again after a stop deletes the HASH; the
 * next one gets another token.
 *
 * A call claims the token it knows and leaves out the children cached under it. The script checks each claim before
 * it writes anything; when one is stale, the call is answered `stale` and the caller forgets that crawl and sends
 * again in full. So the cache can only save work, never skip a child that must be queued.
 *
 * Memory is bounded: at most `maxEntries` fingerprints in all (16 bytes a slot, at most half the slots full), and
 * {@link MAX_CRAWLS} crawls. Past either, what is held is dropped; that costs only resends.
 */

/** At most this many crawls' sets are held; the oldest goes first. */
export const MAX_CRAWLS = 1024;

/** An exact set of 8-byte fingerprints: open addressing with linear probing over two 32-bit words per slot. */
export class FingerprintSet {
  #lo: Uint32Array;
  #hi: Uint32Array;
  #mask: number;
  #size = 0;

  constructor(initialSlots = 256) {
    const slots = 2 ** Math.ceil(Math.log2(Math.max(16, initialSlots)));
    this.#lo = new Uint32Array(slots);
    this.#hi = new Uint32Array(slots);
    this.#mask = slots - 1;
  }

  get size(): number {
    return this.#size;
  }

  /** Bytes held by the table. */
  get bytes(): number {
    return this.#lo.byteLength + this.#hi.byteLength;
  }

  has(fp: Buffer): boolean {
    const lo = fp.readUInt32LE(0);
    const hi = fp.readUInt32LE(4);
    if ((lo | hi) === 0) return false;
    const mask = this.#mask;
    // A fingerprint is already a hash (SHA-1 bytes): its low word picks the slot.
    for (let i = lo & mask; ; i = (i + 1) & mask) {
      const l = this.#lo[i] as number;
      const h = this.#hi[i] as number;
      if (l === lo && h === hi) return true;
      if ((l | h) === 0) return false;
    }
  }

  /** Adds `fp`; the all-zero fingerprint marks a free slot, so it is never held (it is only ever a miss). */
  add(fp: Buffer): void {
    const lo = fp.readUInt32LE(0);
    const hi = fp.readUInt32LE(4);
    if ((lo | hi) === 0) return;
    if ((this.#size + 1) * 2 > this.#lo.length) this.#grow();
    if (this.#put(lo, hi)) this.#size++;
  }

  #put(lo: number, hi: number): boolean {
    const mask = this.#mask;
    for (let i = lo & mask; ; i = (i + 1) & mask) {
      const l = this.#lo[i] as number;
      const h = this.#hi[i] as number;
      if (l === lo && h === hi) return false;
      if ((l | h) === 0) {
        this.#lo[i] = lo;
        this.#hi[i] = hi;
        return true;
      }
    }
  }

  #grow(): void {
    const lo = this.#lo;
    const hi = this.#hi;
    this.#lo = new Uint32Array(lo.length * 2);
    this.#hi = new Uint32Array(lo.length * 2);
    this.#mask = this.#lo.length - 1;
    for (let i = 0; i < lo.length; i++)
      if (((lo[i] as number) | (hi[i] as number)) !== 0) this.#put(lo[i] as number, hi[i] as number);
  }
}

/** The fingerprints known to be in each crawl's dupefilter, by dupefilter key, under that dupefilter's token. */
export class DupeCache {
  readonly #maxEntries: number;
  readonly #crawls = new Map<string, { token: string; set: FingerprintSet }>();
  #entries = 0;

  /** @param maxEntries fingerprints held in all (0: the cache is off and claims nothing) */
  constructor(maxEntries: number) {
    this.#maxEntries = Math.max(0, Math.floor(maxEntries));
  }

  /** Fingerprints held in all. */
  get entries(): number {
    return this.#entries;
  }

  /** The token claimed for a crawl's dupefilter: '' when nothing is known. */
  claim(dupeKey: string): string {
    return this.#crawls.get(dupeKey)?.token ?? '';
  }

  /** Whether `fp` is known to be in the dupefilter `dupeKey` holding `token`. */
  has(dupeKey: string, token: string, fp: Buffer): boolean {
    const c = this.#crawls.get(dupeKey);
    return c !== undefined && c.token === token && c.set.has(fp);
  }

  /**
   * Records that the dupefilter `dupeKey` holding `token` (as the script that stored or found them answered)
   * holds `fps`. A token other than the one held means another generation: what was held for it goes.
   */
  add(dupeKey: string, token: string, fps: readonly Buffer[]): void {
    if (this.#maxEntries === 0 || token === '' || fps.length === 0) return;
    let c = this.#crawls.get(dupeKey);
    if (c !== undefined && c.token !== token) {
      this.forget(dupeKey);
      c = undefined;
    }
    if (c === undefined) {
      if (this.#crawls.size >= MAX_CRAWLS) {
        const oldest = this.#crawls.keys().next().value as string;
        this.forget(oldest);
      }
      c = { token, set: new FingerprintSet() };
      this.#crawls.set(dupeKey, c);
    }
    if (this.#entries + fps.length > this.#maxEntries) {
      // Full: start over (cheaper to keep than an eviction order, and a miss only costs a resend).
      this.clear();
      if (fps.length > this.#maxEntries) return;
      c = { token, set: new FingerprintSet() };
      this.#crawls.set(dupeKey, c);
    }
    const before = c.set.size;
    for (const fp of fps) c.set.add(fp);
    this.#entries += c.set.size - before;
  }

  /** Forgets a crawl's dupefilter (its claim was stale). */
  forget(dupeKey: string): void {
    const c = this.#crawls.get(dupeKey);
    if (c === undefined) return;
    this.#entries -= c.set.size;
    this.#crawls.delete(dupeKey);
  }

  clear(): void {
    this.#crawls.clear();
    this.#entries = 0;
  }
}
