/**
 * Which spider types the cluster accepts in `spiderid` (docs/contract.md "Crawl request"). Plugins live in the
 * crawler image, which the monitors cannot load, so the fleet tells them: every crawler registers the types it
 * serves in Redis with its heartbeat ({@link SpiderTypeStore.register}, `spiderTypesKey`), and the monitors accept
 * the built-in types plus every type ever registered. A type no live crawler serves right now is still accepted
 * (its requests wait in the queue for a crawler that serves it); a type never registered is rejected, naming the
 * known ones.
 *
 * The monitors read the registry through {@link FleetSpiderTypes}: one Redis read per `ttlMs` at most, never one
 * per record, plus one forced read per batch that names a type the cached set does not know (a crawler with a new
 * plugin registered since).
 */
import { BUILT_IN_SPIDERS } from '../crawl/spiders/index.ts';
import type { RedisClient } from '../redis/client.ts';
import { spiderTypesKey } from '../redis/keys.ts';

/** The fleet's registry of spider types. */
export interface SpiderTypeStore {
  /** Records that a crawler serves these types at `nowMs`. */
  register(types: readonly string[], nowMs: number): Promise<void>;
  /** Every type ever registered, with the epoch ms of its last registration. */
  registered(): Promise<Map<string, number>>;
}

export function redisSpiderTypeStore(redis: RedisClient, prefix: string): SpiderTypeStore {
  const key = spiderTypesKey(prefix);
  return {
    async register(types, nowMs) {
      if (types.length === 0) return;
      await redis.hset(key, Object.fromEntries(types.map((t) => [t, String(nowMs)])));
    },
    async registered() {
      const all = await redis.hgetall(key);
      return new Map(Object.entries(all).map(([type, ms]) => [type, Number(ms)]));
    },
  };
}

/** How the monitors see the accepted spider types. */
export interface SpiderTypeSource {
  /**
   * The accepted types: the built-ins and every registered type, read from Redis at most once per TTL, or at once
   * with `force` (still at most once per {@link FleetSpiderTypes} `minForceMs`).
   * @throws when the registry cannot be read and nothing was read before (infrastructure: the batch is retried)
   */
  known(options?: { force?: boolean }): Promise<ReadonlySet<string>>;
}

export interface FleetSpiderTypesOptions {
  /** How long a read of the registry is used. @default 5000 */
  ttlMs?: number;
  /** Least time between two forced reads. @default 250 */
  minForceMs?: number;
  /** @default Date.now */
  now?: () => number;
  /** Told when a refresh fails and the last known set is used instead. */
  onStale?: (error: unknown) => void;
}

/** The built-in types plus the fleet's registry, cached (see the module doc). */
export class FleetSpiderTypes implements SpiderTypeSource {
  readonly #builtIns: ReadonlySet<string>;
  readonly #store: Pick<SpiderTypeStore, 'registered'>;
  readonly #ttlMs: number;
  readonly #minForceMs: number;
  readonly #now: () => number;
  readonly #onStale: (error: unknown) => void;
  #known: ReadonlySet<string> | undefined;
  #readAt = Number.NEGATIVE_INFINITY;
  #pending: Promise<ReadonlySet<string>> | undefined;

  constructor(
    builtIns: ReadonlySet<string>,
    store: Pick<SpiderTypeStore, 'registered'>,
    options: FleetSpiderTypesOptions = {},
  ) {
    this.#builtIns = builtIns;
    this.#store = store;
    this.#ttlMs = options.ttlMs ?? 5000;
    this.#minForceMs = options.minForceMs ?? 250;
    this.#now = options.now ?? Date.now;
    this.#onStale = options.onStale ?? (() => {});
  }

  known(options: { force?: boolean } = {}): Promise<ReadonlySet<string>> {
    const age = this.#now() - this.#readAt;
    const fresh = this.#known !== undefined && (options.force ? age < this.#minForceMs : age < this.#ttlMs);
    if (fresh) return Promise.resolve(this.#known as ReadonlySet<string>);
    this.#pending ??= this.#read().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #read(): Promise<ReadonlySet<string>> {
    try {
      const registered = await this.#store.registered();
      this.#known = new Set([...this.#builtIns, ...registered.keys()]);
      this.#readAt = this.#now();
    } catch (error) {
      if (this.#known === undefined) throw error;
      // A Redis blip: the last known set serves until the next try (one TTL later, not on every batch).
      this.#readAt = this.#now();
      this.#onStale(error);
    }
    return this.#known;
  }
}

/** The monitors' view of the accepted spider types: the built-ins plus the fleet's registry in Redis. */
export function fleetSpiderTypes(
  redis: RedisClient,
  prefix: string,
  log?: { warn(message: string, fields?: Record<string, unknown>): void },
): FleetSpiderTypes {
  return new FleetSpiderTypes(BUILT_IN_SPIDERS, redisSpiderTypeStore(redis, prefix), {
    onStale: (error) =>
      log?.warn('spider type registry not read; using the last known types', { error: (error as Error).message }),
  });
}
