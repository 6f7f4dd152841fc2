/**
 * Reading one CDK context value and checking it: the primitives ./settings.ts and the constructs' own context keys
 * (./cache-settings.ts, ./constructs/sink.ts) validate with, each failing with the key's name.
 */

/** A context value that is not valid; names the key. */
export class SettingsError extends Error {
  constructor(key: string, message: string) {
    super(`context "${key}": ${message}`);
    this.name = 'SettingsError';
  }
}

/** Reads one context key. */
export type Get = (key: string) => unknown;

/** An integer key in [min, max]; a string (as `-c key=value` passes it) is parsed. */
export function int(get: Get, key: string, fallback: number, min: number, max: number): number {
  const v = get(key);
  if (v === undefined) return fallback;
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max)
    throw new SettingsError(key, `must be an integer in [${min}, ${max}] (got ${JSON.stringify(v)})`);
  return n;
}

/** A boolean key: `true`/`false`, as booleans or strings. */
export function bool(get: Get, key: string, fallback: boolean): boolean {
  const v = get(key);
  if (v === undefined) return fallback;
  if (v === true || v === 'true') return true;
  if (v === false || v === 'false') return false;
  throw new SettingsError(key, `must be true or false (got ${JSON.stringify(v)})`);
}

/** A string key matching a pattern. */
export function str(get: Get, key: string, fallback: string, pattern: RegExp): string {
  const v = get(key);
  if (v === undefined) return fallback;
  if (typeof v !== 'string' || !pattern.test(v))
    throw new SettingsError(key, `must match ${pattern} (got ${JSON.stringify(v)})`);
  return v;
}
