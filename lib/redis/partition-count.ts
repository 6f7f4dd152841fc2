/**
 * The partitions per scope a frontier is laid out in, kept in Redis ({@link partitionCountKey}), so that a process
 * started with another `FRONTIER_PARTITIONS` refuses the frontier instead of using it: the key names of two counts are
 * disjoint, so such a process would queue work no other process sees and see none of the work queued. The first
 * process to use a prefix records its count; `crawl-cluster frontier reshard` records the new one when a move ends,
 * and while a move is unfinished every process refuses.
 */
import { CrawlClusterError } from '../errors.ts';
import type { RedisClient } from './client.ts';
import { partitionCountKey, reshardKey } from './keys.ts';

/**
 * A process's `FRONTIER_PARTITIONS` is not the frontier's, or a move between counts is unfinished. Retryable: the
 * work that met it is not at fault and succeeds once the operator has set the count (nothing is charged or dropped).
 */
export class PartitionCountError extends CrawlClusterError {
  override readonly retryable = true;
}

/** How often a process reads the recorded count again (ms): a reshard is done with the processes stopped. */
const PARTITION_COUNT_RECHECK_MS = 60_000;

/** The recorded count of the frontier under `prefix`, or undefined when none is recorded. */
export async function recordedPartitionCount(redis: RedisClient, prefix: string): Promise<number | undefined> {
  const stored = await redis.get(partitionCountKey(prefix));
  return stored === null ? undefined : Number(stored);
}

/**
 * Why a process with `partitions` per scope may not use the frontier under `prefix`, or undefined when it may. Records
 * `partitions` when no count is recorded yet.
 */
async function partitionCountProblem(
  redis: RedisClient,
  prefix: string,
  partitions: number,
): Promise<PartitionCountError | undefined> {
  const [from, to] = await redis.hmget(reshardKey(prefix), 'from', 'to');
  if (from !== null && to !== null)
    return new PartitionCountError(
      `a frontier move from ${from} to ${to} partitions (prefix "${prefix}") is unfinished: finish it with ` +
        `\`crawl-cluster frontier reshard --from ${from} --to ${to}\`, then start with FRONTIER_PARTITIONS=${to}`,
    );
  const key = partitionCountKey(prefix);
  if ((await redis.set(key, String(partitions), 'NX')) === 'OK') return undefined;
  const stored = await redis.get(key);
  if (stored === null || stored === String(partitions)) return undefined;
  return new PartitionCountError(
    `the frontier under prefix "${prefix}" has ${stored} partitions per scope, but FRONTIER_PARTITIONS is ` +
      `${partitions}: set FRONTIER_PARTITIONS=${stored}, or move the frontier with ` +
      `\`crawl-cluster frontier reshard --to ${partitions}\``,
  );
}

/**
 * {@link partitionCountProblem} for one process, read at first use and again every
 * {@link PARTITION_COUNT_RECHECK_MS}; in between, the last answer is given without a round trip.
 */
export class PartitionCountGuard {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #partitions: number;
  readonly #now: () => number;
  #checkedAt = Number.NEGATIVE_INFINITY;
  #problem: PartitionCountError | undefined;
  #reading: Promise<void> | undefined;

  constructor(redis: RedisClient, prefix: string, partitions: number, now: () => number = Date.now) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#partitions = partitions;
    this.#now = now;
  }

  /** Resolves when this process's count is the frontier's; rejects with a {@link PartitionCountError} when not. */
  async check(): Promise<void> {
    if (this.#now() - this.#checkedAt >= PARTITION_COUNT_RECHECK_MS) {
      // One read for every caller waiting at once; a read that fails (Redis) is not remembered.
      this.#reading ??= this.#read().finally(() => {
        this.#reading = undefined;
      });
      await this.#reading;
    }
    if (this.#problem !== undefined) throw this.#problem;
  }

  async #read(): Promise<void> {
    this.#problem = await partitionCountProblem(this.#redis, this.#prefix, this.#partitions);
    this.#checkedAt = this.#now();
  }
}
