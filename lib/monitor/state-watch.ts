/**
 * Watching for lost crawl state (docs/design.md §12): a process remembers the epoch of every state marker it has read
 * (lib/redis/state-marker.ts) and, on each check, compares. A marker it knew that is gone, or holds another epoch, is
 * a slot emptied since it looked: the frontier partition's crawls (or the stats slot's counters and heartbeats) are
 * gone. That is logged as an ERROR with the reason and noted in the loss record, which turns health RED until an
 * operator acknowledges it and makes `info` answer "frontier state lost" for crawls that are no longer there.
 *
 * A marker the process never saw proves nothing either way (a brand-new Redis, a process that just started): it is
 * learnt, never reported. So the watchers are the processes that live across a replacement: the crawler tasks (their
 * heartbeat checks), the stats function and the redis-monitor (while their Lambda containers are warm; `local` keeps
 * them for its lifetime).
 */
import type { Log, SlotLoss, StateLossRecord, StateStore } from '../ports.ts';
import type { RedisClient } from '../redis/client.ts';
import { partitionTag, spiderPartitions, statsTag } from '../redis/keys.ts';
import { redisStateStore } from '../redis/state-marker.ts';

/** The error `info` answers for a crawl whose partition lost its state, and the CLI looks for. */
export const FRONTIER_STATE_LOST = 'frontier state lost';

export interface StateWatchOptions {
  store: StateStore;
  log: Log;
  /** The hash tags of a spider type's frontier partitions (keys.ts `partitionTag` of each partition). */
  tagsOf: (spider: string) => string[];
  /** The stats slot's hash tag (keys.ts `statsTag`), checked on every call. */
  statsTag: string;
  /** Who is watching, in the log line (e.g. `crawler`, `stats`). */
  who: string;
  /** Epoch ms. @default Date.now */
  now?: () => number;
}

/** Why a tag's state is known to be lost, for a person. */
function lossReason(tag: string, statsTag: string, epoch: string, found: string | undefined): string {
  const what =
    tag === statsTag
      ? `stats slot ${tag} was emptied: its counters, heartbeats and failure logs from before are gone`
      : `frontier partition ${tag} was emptied: the crawls queued there, their counters and dupefilters are gone and will not complete`;
  const how =
    found === undefined
      ? `its state marker ${epoch} vanished`
      : `its state marker ${epoch} was replaced by ${found} (the slot was emptied, then used again)`;
  return `${what}; ${how}; the Redis node holding it was replaced or flushed. Feed the lost crawls again, then acknowledge with: crawl-cluster ack-lost`;
}

export class StateWatch {
  readonly #o: Required<StateWatchOptions>;
  /** Tag → the epoch last read. */
  readonly #known = new Map<string, string>();

  constructor(options: StateWatchOptions) {
    this.#o = { now: Date.now, ...options };
  }

  /** The hash tags of `spider`'s partitions. */
  tagsOf(spider: string): string[] {
    return this.#o.tagsOf(spider);
  }

  /**
   * Reads the markers of `spiders`' partitions, of the stats slot and of every tag seen before, and reports the
   * ones lost since the last check (logged as ERROR and noted in the store; a loss another process noted first is
   * logged here too, each process's log being the one its operator may read).
   * @returns the losses detected by this call
   */
  async check(spiders: Iterable<string> = []): Promise<SlotLoss[]> {
    const tags = new Set<string>([this.#o.statsTag, ...this.#known.keys()]);
    for (const spider of spiders) for (const tag of this.#o.tagsOf(spider)) tags.add(tag);
    const list = [...tags];
    const found = await this.#o.store.markers(list);
    const now = this.#o.now();
    const losses: SlotLoss[] = [];
    list.forEach((tag, i) => {
      const marker = found[i];
      const known = this.#known.get(tag);
      if (marker === undefined) this.#known.delete(tag);
      else this.#known.set(tag, marker);
      if (known === undefined || known === marker) return;
      const loss: SlotLoss = { tag, epoch: known, at: now, reason: lossReason(tag, this.#o.statsTag, known, marker) };
      if (marker !== undefined) loss.found = marker;
      losses.push(loss);
    });
    for (const loss of losses) {
      const first = await this.#o.store.note(loss);
      this.#o.log.error(`${FRONTIER_STATE_LOST}: ${loss.reason}`, {
        who: this.#o.who,
        tag: loss.tag,
        epoch: loss.epoch,
        found: loss.found ?? null,
        firstToNote: first,
      });
    }
    return losses;
  }

  /** The noted losses of `spider`'s partitions (acknowledged or not, while the record is kept). */
  async lostFor(spider: string): Promise<SlotLoss[]> {
    const record = await this.#o.store.record();
    if (record === undefined) return [];
    const tags = new Set(this.#o.tagsOf(spider));
    return record.losses.filter((l) => tags.has(l.tag));
  }

  /** The loss record (for health). */
  record(): Promise<StateLossRecord | undefined> {
    return this.#o.store.record();
  }
}

/**
 * A watch over the Redis of a key prefix: the partitions as the frontier lays them out (`typeEnabled`:
 * `SCHEDULER_TYPE_ENABLED`, `partitions`: `FRONTIER_PARTITIONS`), the stats slot, the markers and loss record in that Redis.
 */
export function redisStateWatch(
  redis: RedisClient,
  options: { prefix: string; typeEnabled: boolean; partitions?: number; log: Log; who: string; now?: () => number },
): StateWatch {
  const { prefix, typeEnabled, partitions = 1, ...rest } = options;
  return new StateWatch({
    ...rest,
    store: redisStateStore(redis, prefix),
    tagsOf: (spider) => spiderPartitions(prefix, spider, typeEnabled, partitions).map(partitionTag),
    statsTag: statsTag(prefix),
  });
}
