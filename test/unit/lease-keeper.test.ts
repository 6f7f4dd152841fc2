import { describe, expect, it } from 'vitest';
import { LeaseKeeper } from '../../lib/crawl/crawler/lease-keeper.ts';
import type { Lease } from '../../lib/frontier-model.ts';
import { RecordingLog } from '../helpers/fake-stores.ts';

const LEASE_MS = 12_000;

function lease(handle: string): Lease {
  return { handle } as Lease;
}

/** A frontier that records each extend call, or fails while `down` is set. */
class ExtendingFrontier {
  readonly calls: string[][] = [];
  down: Error | undefined;
  async extend(leases: Pick<Lease, 'handle'>[]): Promise<number> {
    if (this.down) throw this.down;
    this.calls.push(leases.map((l) => l.handle));
    return leases.length;
  }
}

function keeper() {
  let now = 0;
  const frontier = new ExtendingFrontier();
  const log = new RecordingLog();
  const k = new LeaseKeeper({ frontier, leaseMs: LEASE_MS, now: () => now, log });
  return { k, frontier, log, at: (ms: number) => (now = ms) };
}

describe('LeaseKeeper', () => {
  it('extends a lease once a third of its duration has passed, then a third after each extension', async () => {
    const { k, frontier, at } = keeper();
    const a = lease('a');
    k.hold(a, 0);
    at(3_999);
    await k.tick();
    expect(frontier.calls).toEqual([]);
    at(4_000);
    await k.tick();
    expect(frontier.calls).toEqual([['a']]);
    at(7_999);
    await k.tick();
    expect(frontier.calls).toEqual([['a']]);
    at(8_000);
    await k.tick();
    expect(frontier.calls).toEqual([['a'], ['a']]);
    expect(k.extended).toBe(2);
  });

  it('extends only the leases still held, all due ones in one call', async () => {
    const { k, frontier, at } = keeper();
    const [a, b, c] = [lease('a'), lease('b'), lease('c')];
    k.hold(a, 0);
    k.hold(b, 0);
    k.hold(c, 3_000);
    k.drop(b);
    at(5_000);
    await k.tick();
    expect(frontier.calls).toEqual([['a']]);
  });

  it('a failed extension is logged and tried again at the next tick', async () => {
    const { k, frontier, log, at } = keeper();
    k.hold(lease('a'), 0);
    frontier.down = new Error('OOM command not allowed when used memory > maxmemory');
    at(5_000);
    await k.tick();
    expect(log.at('warn').map((l) => l.message)).toEqual(['extending leases failed']);
    frontier.down = undefined;
    at(6_000);
    await k.tick();
    expect(frontier.calls).toEqual([['a']]);
  });
});
