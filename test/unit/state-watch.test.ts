/**
 * The watcher of lost state (lib/monitor/state-watch.ts) over an in-memory store: a marker it saw that vanishes or
 * changes is a loss (logged as ERROR, noted once), a marker it never saw is learnt silently.
 */
import { describe, expect, test } from 'vitest';
import { StateWatch } from '../../lib/monitor/state-watch.ts';
import type { Log, SlotLoss, StateLossRecord, StateStore } from '../../lib/ports.ts';

class MemoryStateStore implements StateStore {
  readonly marks = new Map<string, string>();
  readonly noted = new Map<string, SlotLoss>();
  ackedAt: number | undefined;

  async markers(tags: readonly string[]) {
    return tags.map((t) => this.marks.get(t));
  }
  async note(loss: SlotLoss) {
    if (this.noted.get(loss.tag)?.epoch === loss.epoch) return false;
    this.noted.set(loss.tag, loss);
    return true;
  }
  async record(): Promise<StateLossRecord | undefined> {
    const losses = [...this.noted.values()];
    if (losses.length === 0) return undefined;
    const open = losses.filter((l) => this.ackedAt === undefined || l.at > this.ackedAt);
    return { losses, open, ...(this.ackedAt === undefined ? {} : { ackedAt: this.ackedAt }) };
  }
  async ack(nowMs: number) {
    this.ackedAt = nowMs;
    return this.record();
  }
}

function recordingLog(): Log & { errors: string[] } {
  const errors: string[] = [];
  return { errors, info() {}, warn() {}, error: (m) => errors.push(m) };
}

const STATS = '{p:stats}';
const tagsOf = (spider: string) => [`{p:f:${spider}:0}`];

function watch(store: MemoryStateStore, log: Log, now = () => 1000) {
  return new StateWatch({ store, log, tagsOf, statsTag: STATS, who: 'test', now });
}

describe('StateWatch', () => {
  test('a brand-new Redis (no marker yet), then markers created: nothing is reported', async () => {
    const store = new MemoryStateStore();
    const log = recordingLog();
    const w = watch(store, log);
    expect(await w.check(['link'])).toEqual([]);
    store.marks.set('{p:f:link:0}', 'e1');
    store.marks.set(STATS, 's1');
    expect(await w.check(['link'])).toEqual([]);
    expect(await w.check(['link'])).toEqual([]);
    expect(log.errors).toEqual([]);
    expect(await store.record()).toBeUndefined();
  });

  test('a partition marker it saw vanishes: one loss, logged as ERROR with the reason, noted once', async () => {
    const store = new MemoryStateStore();
    const log = recordingLog();
    const w = watch(store, log);
    store.marks.set('{p:f:link:0}', 'e1');
    await w.check(['link']);
    store.marks.delete('{p:f:link:0}');

    const losses = await w.check(['link']);

    expect(losses).toMatchObject([{ tag: '{p:f:link:0}', epoch: 'e1', at: 1000 }]);
    expect(losses[0]?.found).toBeUndefined();
    expect(losses[0]?.reason).toContain('frontier partition {p:f:link:0} was emptied');
    expect(log.errors).toHaveLength(1);
    expect(log.errors[0]).toMatch(/^frontier state lost: frontier partition \{p:f:link:0\} was emptied/);
    // Checked again, the same absence is not a second loss.
    expect(await w.check(['link'])).toEqual([]);
    expect((await store.record())?.open).toHaveLength(1);
  });

  test('a marker replaced by another epoch (emptied, then used again) is a loss; the new epoch is then known', async () => {
    const store = new MemoryStateStore();
    const w = watch(store, recordingLog());
    store.marks.set(STATS, 's1');
    await w.check();
    store.marks.set(STATS, 's2');

    const [loss] = await w.check();

    expect(loss).toMatchObject({ tag: STATS, epoch: 's1', found: 's2' });
    expect(loss?.reason).toContain('stats slot {p:stats} was emptied');
    expect(await w.check()).toEqual([]);
  });

  test('a tag seen once is watched even when the caller no longer names its spider type (the registry was emptied too)', async () => {
    const store = new MemoryStateStore();
    const w = watch(store, recordingLog());
    store.marks.set('{p:f:link:0}', 'e1');
    await w.check(['link']);
    store.marks.clear();
    expect((await w.check([])).map((l) => l.tag)).toEqual(['{p:f:link:0}']);
  });

  test('two processes detect the same loss: both log it, it is noted once; after an acknowledgement it stays closed', async () => {
    const store = new MemoryStateStore();
    const a = recordingLog();
    const b = recordingLog();
    let now = 1000;
    const wa = watch(store, a, () => now);
    const wb = watch(store, b, () => now);
    store.marks.set('{p:f:link:0}', 'e1');
    await wa.check(['link']);
    await wb.check(['link']);
    store.marks.delete('{p:f:link:0}');

    await wa.check(['link']);
    now = 2000;
    await store.ack(1500);
    now = 3000;
    await wb.check(['link']);

    expect(a.errors).toHaveLength(1);
    expect(b.errors).toHaveLength(1);
    const record = await store.record();
    expect(record?.losses).toHaveLength(1);
    expect(record?.open).toEqual([]);
    expect(await wa.lostFor('link')).toHaveLength(1);
    expect(await wa.lostFor('other')).toEqual([]);
  });
});
