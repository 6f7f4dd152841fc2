/**
 * Requests of each domain one crawler process is fetching (docs/design.md §5): a slow or dead site cannot take every
 * fetch slot of the process. Once a domain has `cap` requests in flight here, the process leases nothing more of it
 * (the frontier's lease skips the domains it names, which keep their place for every other crawler) until one
 * ends; one lease call takes at most `cap` of a domain, so a domain never has more than 2 x cap - 1 in flight (cap
 * - 1 when the call was made, plus cap; and the few leased ahead), and at most cap once it is listed here. The cap
 * is per process and on top of the cluster-wide politeness throttle, which it never loosens. Counting is O(1) a request; the list handed to each lease call is
 * rebuilt only when a domain reaches or leaves its cap, and holds at most {@link MAX_EXCLUDED} domains.
 */

/** Most domains one lease call is asked to skip (each costs the lease script one more ready domain to read). */
export const MAX_EXCLUDED = 64;

export class DomainInFlight {
  readonly cap: number;
  readonly #counts = new Map<string, number>();
  readonly #full = new Set<string>();
  #list: readonly string[] | undefined = [];

  /** `cap`: the most requests of one domain in flight at once (>= 1). */
  constructor(cap: number) {
    if (!(cap >= 1)) throw new RangeError(`per-domain in-flight cap must be >= 1 (got ${cap})`);
    this.cap = Math.floor(cap);
  }

  /** A request of `domain` starts. */
  start(domain: string): void {
    const n = (this.#counts.get(domain) ?? 0) + 1;
    this.#counts.set(domain, n);
    if (n >= this.cap && !this.#full.has(domain)) {
      this.#full.add(domain);
      this.#list = undefined;
    }
  }

  /** A request of `domain` ended; true when that took the domain back under its cap (more of it may be leased). */
  end(domain: string): boolean {
    const n = (this.#counts.get(domain) ?? 0) - 1;
    if (n <= 0) this.#counts.delete(domain);
    else this.#counts.set(domain, n);
    if (n < this.cap && this.#full.delete(domain)) {
      this.#list = undefined;
      return true;
    }
    return false;
  }

  /** Requests of `domain` in flight now. */
  count(domain: string): number {
    return this.#counts.get(domain) ?? 0;
  }

  /** The domains at their cap (the first {@link MAX_EXCLUDED}), for the next lease call to skip. */
  get full(): readonly string[] {
    this.#list ??= [...this.#full].slice(0, MAX_EXCLUDED);
    return this.#list;
  }
}
