/**
 * State markers: how a process tells "this Redis slot was emptied under us" from "this Redis is new"
 * (docs/design.md §12). Each hash tag that holds crawl state (a frontier partition, the stats slot) gets one STRING,
 * `<tag>:epoch`, holding an epoch id created with `SET NX` when the slot's state is first written (the frontier's
 * enqueue, every heartbeat) and never deleted or expired. The marker lives in its slot, so a shard replaced or
 * flushed loses it together with its data. A process that has read a marker and later finds it gone or different
 * knows the slot was emptied since; one that never saw it (a fresh Redis, a fresh process) knows nothing and says
 * nothing. The watcher is lib/monitor/state-watch.ts; the loss record below is what health, `info` and the operator's
 * acknowledgement read.
 */
import type { SlotLoss, StateLossRecord, StateStore } from '../ports.ts';
import type { RedisClient } from './client.ts';
import { stateLossKey, stateMarkerKey } from './keys.ts';
import { runScript, script } from './scripts.ts';

/**
 * How long the loss record is kept after an operator acknowledged it, so `info` still answers "frontier state lost"
 * for the crawls it names (a client that asks late); a new loss keeps it until acknowledged again.
 */
export const LOSS_KEPT_AFTER_ACK_MS = 7 * 24 * 3600 * 1000;

const LOST_FIELD = 'lost:';

function parseLoss(text: string): SlotLoss | undefined {
  try {
    const loss = JSON.parse(text) as SlotLoss;
    return typeof loss.tag === 'string' && typeof loss.epoch === 'string' ? loss : undefined;
  } catch {
    return undefined;
  }
}

function recordOf(hash: Record<string, string>): StateLossRecord | undefined {
  const losses: SlotLoss[] = [];
  for (const [field, value] of Object.entries(hash)) {
    if (!field.startsWith(LOST_FIELD)) continue;
    const loss = parseLoss(value);
    if (loss) losses.push(loss);
  }
  if (losses.length === 0) return undefined;
  losses.sort((a, b) => a.at - b.at);
  const acked = hash.acked === undefined ? undefined : Number(hash.acked);
  const open = losses.filter((l) => acked === undefined || l.at > acked);
  return acked === undefined ? { losses, open } : { losses, open, ackedAt: acked };
}

/** The state markers and the loss record of a key prefix in Redis. */
export function redisStateStore(redis: RedisClient, prefix: string): StateStore {
  const lossKey = stateLossKey(prefix);
  return {
    async markers(tags) {
      // One GET each: the tags are in different slots (a partition's, the stats slot), so no MGET.
      const values = await Promise.all(tags.map((tag) => redis.get(stateMarkerKey(tag))));
      return values.map((v) => v ?? undefined);
    },
    async note(loss) {
      const noted = await runScript<number>(
        redis,
        script('state-loss'),
        [lossKey],
        [`${LOST_FIELD}${loss.tag}`, loss.epoch, JSON.stringify(loss)],
      );
      return noted === 1;
    },
    async record() {
      return recordOf(await redis.hgetall(lossKey));
    },
    async ack(nowMs) {
      const before = recordOf(await redis.hgetall(lossKey));
      if (before === undefined) return undefined;
      await redis.pipeline().hset(lossKey, 'acked', nowMs).pexpire(lossKey, LOSS_KEPT_AFTER_ACK_MS).exec();
      return { ...before, ackedAt: nowMs, open: before.losses.filter((l) => l.at > nowMs) };
    },
  };
}
