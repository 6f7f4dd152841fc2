/**
 * Names the fleet tells the monitors (spider types: lib/monitor/spider-types.ts; proxy groups:
 * lib/monitor/proxy-groups.ts). What the crawlers can do lives in their image and their configuration, which the
 * monitors cannot see, so every crawler registers its names in a Redis HASH with its heartbeat
 * ({@link FleetRegistryStore.register}), and the monitors accept the fixed names plus every name ever registered. A
 * name no live crawler has right now is still accepted (its requests wait in the queue for one that has it); a name
 * never registered is rejected.
 *
 * The monitors read a registry through {@link FleetNames}: one Redis read per `ttlMs` at most, never one per record,
 * plus one forced read per batch that names what the cached set does not know (a crawler registered it since).
 */
import type { RedisClient } from '../redis/client.ts';

/** One of the fleet's registries. */
export interface FleetRegistryStore {
  /** Records that a crawler has these names at `nowMs`. */
  register(names: readonly string[], nowMs: number): Promise<void>;
  /** Every name ever registered, with the epoch ms of its last registration. */
  registered(): Promise<Map<string, number>>;
}

/** A registry in the Redis HASH `key` (name → epoch ms of its last registration). */
export function redisRegistryStore(redis: RedisClient, key: string): FleetRegistryStore {
  return {
    async register(names, nowMs) {
      if (names.length === 0) return;
      await redis.hset(key, Object.fromEntries(names.map((n) => [n, String(nowMs)])));
    },
    async registered() {
      const all = await redis.hgetall(key);
      return new Map(Object.entries(all).map(([name, ms]) => [name, Number(ms)]));
    },
  };
}

/** How the monitors see the accepted names of one registry. */
export interface FleetNameSource {
  /**
   * The accepted names: the fixed ones and every registered one, read from Redis at most once per TTL, or at once
   * with `force` (still at most once per {@link FleetNamesOptions.minForceMs}).
   * @throws when the registry cannot be read and nothing was read before (infrastructure: the batch is retried)
   */
  known(options?: { force?: boolean }): Promise<ReadonlySet<string>>;
}

export interface FleetNamesOptions {
  /** How long a read of the registry is used. @default 5000 */
  ttlMs?: number;
  /** Least time between two forced reads. @default 250 */
  minForceMs?: number;
  /** @default Date.now */
  now?: () => number;
  /** Told when a refresh fails and the last known set is used instead. */
  onStale?: (error: unknown) => void;
}

/** The fixed names plus a registry's, cached (see the module doc). */
export class FleetNames implements FleetNameSource {
  readonly #fixed: ReadonlySet<string>;
  readonly #store: Pick<FleetRegistryStore, 'registered'>;
  readonly #ttlMs: number;
  readonly #minForceMs: number;
  readonly #now: () => number;
  readonly #onStale: (error: unknown) => void;
  #known: ReadonlySet<string> | undefined;
  #readAt = Number.NEGATIVE_INFINITY;
  #pending: Promise<ReadonlySet<string>> | undefined;

  constructor(
    fixed: ReadonlySet<string>,
    store: Pick<FleetRegistryStore, 'registered'>,
    options: FleetNamesOptions = {},
  ) {
    this.#fixed = fixed;
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
      this.#known = new Set([...this.#fixed, ...registered.keys()]);
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
