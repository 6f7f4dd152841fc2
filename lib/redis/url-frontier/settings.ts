/**
 * The URL Frontier store's frontier-wide settings: the active flag, the default politeness delay, and the Kafka API's
 * domain throttle overrides and blacklist. The scripts of a partition read them from that partition's own keys
 * (uf-serve.lua: the state's `delay`, `dcfg`, `black`), so every partition has a copy, and every change is written to
 * all of them (scripts/uf-settings.lua, which refuses while a move fences the frontier): each partition reads the same
 * once a change has returned (a change that failed part way is written again by its retry; each write sets the
 * value, so a retry is safe). The active flag is read from the first partition.
 */
import type { DomainAction } from '../../frontier-model.ts';
import type { RedisClient } from '../client.ts';
import { runScript, script } from '../scripts.ts';
import { type UrlFrontierPartitions, urlFrontierGlobalKeys, urlFrontierScriptGlobals } from './keys.ts';

export class FrontierSettings {
  readonly #redis: RedisClient;
  readonly #partitions: UrlFrontierPartitions;

  constructor(redis: RedisClient, partitions: UrlFrontierPartitions) {
    this.#redis = redis;
    this.#partitions = partitions;
  }

  /** One setting (scripts/uf-settings.lua: `what`, `name`, `value`) in every partition at once (one call in each slot). */
  async #everywhere(what: 'state' | 'dcfg' | 'black', name: string, value: string | number): Promise<void> {
    const s = script('uf-settings');
    await Promise.all(
      this.#partitions.map((p) => runScript(this.#redis, s, urlFrontierScriptGlobals(p), [what, name, value])),
    );
  }

  /**
   * A domain throttle override or blacklist change for the queues of `domain` (a queue's domain is its key's
   * registrable domain): `domain-update` sets `hits`/`window`/`scale`, `domain-remove` clears it,
   * `blacklist-update`/`-remove` stop and resume serving them.
   */
  async configureDomain(
    action: DomainAction,
    domain: string,
    limits: { hits?: number; window?: number; scale?: number },
  ): Promise<void> {
    switch (action) {
      case 'domain-update':
        await this.#everywhere('dcfg', domain, `${limits.hits ?? 0},${limits.window ?? 0},${limits.scale ?? 1}`);
        return;
      case 'domain-remove':
        await this.#everywhere('dcfg', domain, '');
        return;
      case 'blacklist-update':
        await this.#everywhere('black', domain, 1);
        return;
      case 'blacklist-remove':
        await this.#everywhere('black', domain, 0);
        return;
    }
  }

  /** The default politeness delay of queues without their own (SetDelay without a key), seconds. */
  async setDefaultDelay(seconds: number): Promise<void> {
    await this.#everywhere('state', 'delay', seconds);
  }

  async setActive(state: boolean): Promise<void> {
    await this.#everywhere('state', 'active', state ? 1 : 0);
  }

  async active(): Promise<boolean> {
    return (await this.#redis.hget(urlFrontierGlobalKeys(this.#partitions[0]).state, 'active')) !== '0';
  }
}
