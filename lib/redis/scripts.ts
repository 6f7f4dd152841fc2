/**
 * Loads the Lua scripts in ./scripts once (at module load) and runs them by SHA with a fallback to EVAL
 * when the server has not seen them (after a restart or a failover). One typed wrapper per script, in the
 * module of its data structure, is each script's only caller (STYLE.md §2).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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

/** ioredis's Buffer variants of EVALSHA/EVAL (generated at runtime for every command, not in its typings). */
interface BufferEval {
  evalshaBuffer(sha: string, numkeys: number, ...args: Arg[]): Promise<unknown>;
  evalBuffer(source: string, numkeys: number, ...args: Arg[]): Promise<unknown>;
}

/**
 * Runs a script with its declared keys. EVALSHA first; on NOSCRIPT, EVAL (which also caches it).
 * In cluster mode the client routes by the keys, which all share one slot by construction (keys.ts).
 */
export async function runScript<T = unknown>(
  redis: RedisClient,
  s: LuaScript,
  keys: string[],
  args: Arg[],
): Promise<T> {
  try {
    return (await redis.evalsha(s.sha, keys.length, ...keys, ...args)) as T;
  } catch (error) {
    if (!(error as Error).message?.startsWith('NOSCRIPT')) throw error;
    return (await redis.eval(s.source, keys.length, ...keys, ...args)) as T;
  }
}

/** {@link runScript}, but bulk replies come back as Buffers (for replies holding binary data, e.g. members). */
export async function runScriptBuffer<T = unknown>(
  redis: RedisClient,
  s: LuaScript,
  keys: string[],
  args: Arg[],
): Promise<T> {
  const r = redis as unknown as BufferEval;
  try {
    return (await r.evalshaBuffer(s.sha, keys.length, ...keys, ...args)) as T;
  } catch (error) {
    if (!(error as Error).message?.startsWith('NOSCRIPT')) throw error;
    return (await r.evalBuffer(s.source, keys.length, ...keys, ...args)) as T;
  }
}
