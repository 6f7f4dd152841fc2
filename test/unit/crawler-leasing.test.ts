/**
 * The crawler's lease pump (lib/crawl/crawler/leasing.ts) on what the lease script says is left
 * (lib/frontier-model.ts LeaseLeft): a type whose work is only in the domains at the cap is not marked quiet, and a lease
 * says "more" (wake more workers) only when more is due now for this process.
 */
import { describe, expect, it } from 'vitest';
import { LeasePump, type LeasePumpOptions } from '../../lib/crawl/crawler/leasing.ts';
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
  async release(): Promise<number> {
    return 0;
  }
}

function pump(frontier: AnswerFrontier, options: Partial<LeasePumpOptions> = {}): LeasePump {
  return new LeasePump({
    frontier,
    spiderTypes: ['link'],
    slots: () => 4,
    scoutPollMs: 60_000,
    now: () => NOW,
    leaseAhead: () => false,
    stopping: () => false,
    ...options,
  });
}

describe('LeasePump: work only in the domains at the cap', () => {
  it('is idle without a due time, but the type is not quiet: the next look asks again', async () => {
    const frontier = new AnswerFrontier([{ left: 'excluded' }]);
    const p = pump(frontier, { exclude: () => ['slow.example'] });
    expect(await p.next()).toEqual({ nextDueMs: null, excludedOnly: true });
    await p.next();
    expect(frontier.calls).toHaveLength(2);
    expect(frontier.calls[1]?.exclude).toEqual(['slow.example']);
  });

  it('a type with no work at all is quiet for scoutPollMs (the contrast)', async () => {
    const frontier = new AnswerFrontier([{ left: 'none' }]);
    const p = pump(frontier, { exclude: () => ['slow.example'] });
    expect(await p.next()).toEqual({ nextDueMs: null });
    await p.next();
    expect(frontier.calls).toHaveLength(1);
  });

  it('sleeps until the next throttle or retry turn, not a fixed retry after the capped domains', async () => {
    const frontier = new AnswerFrontier([{ left: 'excluded', nextDueMs: NOW + 20 }]);
    const p = pump(frontier, { exclude: () => ['slow.example'] });
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
    const p = pump(frontier, { perDomain: 4, inFlight: () => 3 });
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
    const p = pump(new AnswerFrontier([{ leases: [lease('a.example')], left: 'excluded' }]), {
      exclude: () => ['slow.example'],
    });
    expect(await p.next()).toMatchObject({ lease: { domain: 'a.example' }, more: false });
  });

  it('more of the domain just leased from, which has room under its cap: more', async () => {
    const p = pump(new AnswerFrontier([{ leases: [lease('a.example')], left: 'leased', nextDueMs: NOW }]), {
      perDomain: 4,
      inFlight: () => 2,
    });
    expect(await p.next()).toMatchObject({ lease: { domain: 'a.example' }, more: true });
  });
});
