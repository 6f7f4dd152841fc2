/**
 * Loads the Lua scripts in ./scripts once (at module load) and runs them as ioredis commands
 * (`defineCommand`: by SHA, with EVAL when the server has not seen them, after a restart or a failover). One typed wrapper per script, in the
 * module of its data structure, is each script's only caller (docs/style.md §2).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import type { RedisClient } from './client.ts';

const DIR = join(import.meta.dirname, 'scripts');

export interface LuaScript {
  name: string;
  source: string;
  sha: string;
}

const INCLUDE = /^--- @include "([a-z0-9-]+)"$/gm;

/** Inlines `--- @include "name"` lines with scripts/includes/name.lua (Redis has no modules for scripts). */
function resolveIncludes(source: string): string {
  return source.replace(INCLUDE, (_line, name: string) => readFileSync(join(DIR, 'includes', `${name}.lua`), 'utf8'));
}

const SCRIPTS: ReadonlyMap<string, LuaScript> = new Map(
  readdirSync(DIR)
    .filter((f) => f.endsWith('.lua'))
    .map((f) => {
      const source = resolveIncludes(readFileSync(join(DIR, f), 'utf8'));
      const name = f.slice(0, -4);
      return [name, { name, source, sha: createHash('sha1').update(source).digest('hex') }];
    }),
);

/** The script called `name` (the file name without `.lua`). */
export function script(name: string): LuaScript {
  const s = SCRIPTS.get(name);
  if (!s) throw new Error(`no Lua script ${name}.lua in ${DIR}`);
  return s;
}

/** Every script, for tests that check their headers and key declarations. */
export function allScripts(): LuaScript[] {
  return [...SCRIPTS.values()];
}

type Arg = string | number | Buffer;

/** A script registered with ioredis's `defineCommand`: `numkeys, ...keys, ...args`. */
type ScriptCommand = (numkeys: number, ...keysAndArgs: Arg[]) => Promise<unknown>;

/** Clients the scripts are defined on (ioredis keeps commands per client instance). */
const defined = new WeakSet<RedisClient>();

/** The ioredis command of a script: `cc_` and its name with `_` for `-` (`sweep-finished` → `cc_sweep_finished`). */
function commandOf(redis: RedisClient, s: LuaScript, buffer: boolean): ScriptCommand {
  if (!defined.has(redis)) {
    // defineCommand runs EVALSHA and falls back to EVAL on NOSCRIPT (after a restart or a failover), with
    // the keys routed by slot in cluster mode; numberOfKeys is left out so each call passes its own.
    const names = [...SCRIPTS.values()].map((each) => `cc_${each.name.replaceAll('-', '_')}`);
    for (const each of SCRIPTS.values())
      redis.defineCommand(`cc_${each.name.replaceAll('-', '_')}`, { lua: each.source });
    // ioredis's auto-pipelining groups a custom command by its first argument, here numkeys, not by its first key:
    // scripts of partitions on two shards would share a pipeline and fail ("All keys in the pipeline should belong
    // to the same slots allocation group"). In cluster mode each script is sent on its own, routed by its keys.
    if (redis instanceof Cluster) {
      redis.options.autoPipeliningIgnoredCommands = [...(redis.options.autoPipeliningIgnoredCommands ?? []), ...names];
    }
    defined.add(redis);
  }
  const name = `cc_${s.name.replaceAll('-', '_')}${buffer ? 'Buffer' : ''}`;
  const command = (redis as unknown as Record<string, ScriptCommand>)[name] as ScriptCommand;
  return command.bind(redis);
}

/**
 * Runs a script with its declared keys (ioredis `defineCommand`: EVALSHA, EVAL when the server lacks it). In
 * cluster mode the client routes by the keys, which all share one slot by construction (keys.ts).
 */
export async function runScript<T = unknown>(
  redis: RedisClient,
  s: LuaScript,
  keys: string[],
  args: Arg[],
): Promise<T> {
  return (await commandOf(redis, s, false)(keys.length, ...keys, ...args)) as T;
}

/** {@link runScript}, but bulk replies come back as Buffers (for replies holding binary data, e.g. members). */
export async function runScriptBuffer<T = unknown>(
  redis: RedisClient,
  s: LuaScript,
  keys: string[],
  args: Arg[],
): Promise<T> {
  return (await commandOf(redis, s, true)(keys.length, ...keys, ...args)) as T;
}
