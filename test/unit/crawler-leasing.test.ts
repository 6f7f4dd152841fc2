/**
 * The crawler's lease pump (lib/crawl/crawler/leasing.ts) on what the lease script says is left (lib/frontier-model.ts
 * LeaseLeft): a type whose work is only in the domains at the cap is not marked quiet, and a lease
 * says "more" (wake more workers) only when more is due now for this process. And the pump reads its crawler's
 * state (LeaseState, an in-memory one here) each time it leases: what it leases ahead, what it sends back, which
 * domains it skips.
 */
import { describe, expect, it } from 'vitest';
import { LeasePump, type LeasePumpOptions, type LeaseState } from '../../lib/crawl/crawler/leasing.ts';
import type { Lease, LeaseMany } from '../../lib/frontier-model.ts';

const NOW = 1_000_000;

function lease(domain: string): Lease {
  return {
    handle: `h-${domain}`,
    partition: { prefix: 't', scope: 'link', partition: 0, spider: 'link' },
    url: `http://${domain}/`,
    domain,
    priority: 1,
    depth: 0,
    retries: 0,
    crawl: { appid: 'a', crawlid: 'c', spiderid: 'link', priority: 1, maxdepth: 0, expires: 0 },
  };
}

/** A frontier that gives the scripted answers in turn (the last one over and over), recording each call. */
class AnswerFrontier {
  readonly calls: { max: number; exclude: readonly string[] }[] = [];
  readonly released: string[] = [];
  /** The first call answers once this settles (so that more workers wait for the next call meanwhile). */
  hold: Promise<void> = Promise.resolve();
  readonly answers: Partial<LeaseMany>[];
  constructor(answers: Partial<LeaseMany>[]) {
    this.answers = answers;
  }
  async leaseMany(_spider: string, max: number, options: { exclude?: readonly string[] } = {}): Promise<LeaseMany> {
    this.calls.push({ max, exclude: options.exclude ?? [] });
    if (this.calls.length === 1) await this.hold;
    const a = this.answers.length > 1 ? this.answers.shift() : this.answers[0];
    return { leases: [], nextDueMs: null, left: 'none', skipped: 0, ...a };
  }
  async release(leases: Lease[]): Promise<number> {
    this.released.push(...leases.map((l) => l.handle));
    return leases.length;
  }
}

/** A frontier with plenty of work: every call leases as many as asked for, each of a domain of its own. */
class PlentyFrontier extends AnswerFrontier {
  #n = 0;
  constructor() {
    super([]);
  }
  override async leaseMany(spider: string, max: number, options: { exclude?: readonly string[] } = {}) {
    const r = await super.leaseMany(spider, max, options);
    const leases = Array.from({ length: max }, () => lease(`d${this.#n++}.example`));
    return { ...r, leases, left: 'more' as const, nextDueMs: NOW };
  }
}

/** The crawler's state as the pump reads it, in memory: each field as a test sets it. */
class FakeState implements LeaseState {
  stopping = false;
  deliveryDown = false;
  slots = 4;
  fullDomains: readonly string[] = [];
  readonly counts = new Map<string, number>();
  inFlight(domain: string): number {
    return this.counts.get(domain) ?? 0;
  }
}

/**
 * A pump over `frontier` and `state`. Its clock stands still, so it leases ahead (at its workers' pace,
 * LEASE_AHEAD_MS) only once its workers have taken many requests back to back.
 */
function pump(frontier: AnswerFrontier, options: Partial<LeasePumpOptions> = {}, state = new FakeState()): LeasePump {
  return new LeasePump({
    frontier,
    spiderTypes: ['link'],
    scoutPollMs: 60_000,
    now: () => NOW,
    state,
    ...options,
  });
}

/** A state whose domains at the cap are `full`. */
function excluding(...full: string[]): FakeState {
  const state = new FakeState();
  state.fullDomains = full;
  return state;
}

/** A state with `n` requests of `domain` in flight. */
function inFlight(domain: string, n: number): FakeState {
  const state = new FakeState();
  state.counts.set(domain, n);
  return state;
}

describe('LeasePump: work only in the domains at the cap', () => {
  it('is idle without a due time, but the type is not quiet: the next look asks again', async () => {
    const frontier = new AnswerFrontier([{ left: 'excluded' }]);
    const p = pump(frontier, {}, excluding('slow.example'));
    expect(await p.next()).toEqual({ nextDueMs: null, excludedOnly: true });
    await p.next();
    expect(frontier.calls).toHaveLength(2);
    expect(frontier.calls[1]?.exclude).toEqual(['slow.example']);
  });

  it('a type with no work at all is quiet for scoutPollMs (the contrast)', async () => {
    const frontier = new AnswerFrontier([{ left: 'none' }]);
    const p = pump(frontier, {}, excluding('slow.example'));
    expect(await p.next()).toEqual({ nextDueMs: null });
    await p.next();
    expect(frontier.calls).toHaveLength(1);
  });

  it('sleeps until the next throttle or retry turn, not a fixed retry after the capped domains', async () => {
    const frontier = new AnswerFrontier([{ left: 'excluded', nextDueMs: NOW + 20 }]);
    const p = pump(frontier, {}, excluding('slow.example'));
    expect(await p.next()).toEqual({ nextDueMs: NOW + 20, excludedOnly: true });
  });

  it('more only of domains this call leased from, now at their cap: idle as for the capped domains', async () => {
    const frontier = new AnswerFrontier([
      { leases: [lease('x.example')], left: 'more', nextDueMs: NOW },
      { leases: [lease('drip.example')], left: 'leased', nextDueMs: NOW },
    ]);
    let answer!: () => void;
    frontier.hold = new Promise((resolve) => {
      answer = resolve;
    });
    const p = pump(frontier, { perDomain: 4 }, inFlight('drip.example', 3));
    const first = p.next();
    // Two workers wait for the next call, which leases one request of a domain that is then at its cap.
    const [a, b] = [p.next(), p.next()];
    answer();
    expect(await first).toMatchObject({ lease: { domain: 'x.example' }, more: true });
    expect(frontier.calls.map((c) => c.max)).toEqual([1, 2]);
    expect(await a).toMatchObject({ lease: { domain: 'drip.example' }, more: false });
    expect(await b).toEqual({ nextDueMs: null, excludedOnly: true });
  });
});

describe('LeasePump: a lease says whether more is due now', () => {
  it('more in another domain: more', async () => {
    const p = pump(new AnswerFrontier([{ leases: [lease('a.example')], left: 'more', nextDueMs: NOW }]));
    expect(await p.next()).toMatchObject({ lease: { domain: 'a.example' }, more: true });
  });

  it('the last due request: no more', async () => {
    const p = pump(new AnswerFrontier([{ leases: [lease('a.example')], left: 'none', nextDueMs: NOW + 1000 }]));
    expect(await p.next()).toMatchObject({ lease: { domain: 'a.example' }, more: false });
  });

  it('only the capped domains left: no more', async () => {
    const p = pump(
      new AnswerFrontier([{ leases: [lease('a.example')], left: 'excluded' }]),
      {},
      excluding('slow.example'),
    );
    expect(await p.next()).toMatchObject({ lease: { domain: 'a.example' }, more: false });
  });

  it('more of the domain just leased from, which has room under its cap: more', async () => {
    const p = pump(
      new AnswerFrontier([{ leases: [lease('a.example')], left: 'leased', nextDueMs: NOW }]),
      { perDomain: 4 },
      inFlight('a.example', 2),
    );
    expect(await p.next()).toMatchObject({ lease: { domain: 'a.example' }, more: true });
  });
});

describe('LeasePump: it reads the crawler state each time it leases', () => {
  /** A pump whose workers took `n` requests back to back: busy enough to lease ahead. */
  async function busy(frontier: AnswerFrontier, state: FakeState, n = 80): Promise<LeasePump> {
    const p = pump(frontier, {}, state);
    for (let i = 0; i < n; i++) await p.next();
    return p;
  }

  /** Lets a lease call leasing ahead in the background end, then empties the buffer and the record of calls. */
  async function reset(p: LeasePump, frontier: AnswerFrontier): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    p.drain();
    frontier.calls.length = 0;
  }

  it('leases ahead at most the slots it has now', async () => {
    const frontier = new PlentyFrontier();
    const state = new FakeState();
    const p = await busy(frontier, state);
    const asked = frontier.calls.map((c) => c.max);
    expect(Math.max(...asked)).toBeGreaterThan(1);
    expect(Math.max(...asked)).toBeLessThanOrEqual(state.slots + 1);
    state.slots = 16;
    await reset(p, frontier);
    for (let i = 0; i < 40; i++) await p.next();
    expect(Math.max(...frontier.calls.map((c) => c.max))).toBeGreaterThan(5);
    expect(Math.max(...frontier.calls.map((c) => c.max))).toBeLessThanOrEqual(17);
  });

  it('leases nothing ahead while delivery is down, and again once it works', async () => {
    const frontier = new PlentyFrontier();
    const state = new FakeState();
    const p = await busy(frontier, state);
    state.deliveryDown = true;
    await reset(p, frontier);
    for (let i = 0; i < 10; i++) await p.next();
    expect(frontier.calls.map((c) => c.max)).toEqual(Array(10).fill(1));
    expect(p.drain()).toEqual([]);
    state.deliveryDown = false;
    await p.next();
    expect(frontier.calls.at(-1)?.max).toBeGreaterThan(1);
  });

  it('once stopping, leases nothing ahead and sends back what a call brought beyond the waiting workers', async () => {
    const frontier = new AnswerFrontier([{ leases: [lease('a.example'), lease('b.example')], left: 'more' }]);
    const state = new FakeState();
    state.stopping = true;
    const p = pump(frontier, {}, state);
    expect(await p.next()).toMatchObject({ lease: { domain: 'a.example' }, more: true });
    await Promise.resolve();
    expect(frontier.calls.map((c) => c.max)).toEqual([1]);
    expect(frontier.released).toEqual(['h-b.example']);
    expect(p.drain()).toEqual([]);
  });

  it('skips the domains at their cap as they are at each call', async () => {
    const frontier = new AnswerFrontier([{ left: 'excluded' }]);
    const state = excluding('a.example');
    const p = pump(frontier, {}, state);
    await p.next();
    state.fullDomains = ['b.example', 'c.example'];
    await p.next();
    state.fullDomains = [];
    await p.next();
    expect(frontier.calls.map((c) => c.exclude)).toEqual([['a.example'], ['b.example', 'c.example'], []]);
  });
});
