/** Benchmark sizes and switches from `BENCH_*` environment variables (bench only: lib/ reads lib/config). */

/** A positive integer from `name`, else `fallback`. */
export function envInt(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return process.env[name] !== undefined && process.env[name] !== '' && Number.isInteger(v) && v > 0 ? v : fallback;
}

/** A non-negative number from `name` (0 allowed), else `fallback`. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  const v = Number(raw);
  return raw !== undefined && raw !== '' && Number.isFinite(v) && v >= 0 ? v : fallback;
}

/** A boolean from `name` (1/true/yes/on, 0/false/no/off), else `fallback`. */
export function envBool(name: string, fallback: boolean): boolean {
  const raw = process.env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new Error(`${name} must be true or false (got ${raw})`);
}

/** A list of positive integers (`1,2`) from `name`, else `fallback`. */
export function envIntList(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (!raw) return fallback;
  const list = raw.split(',').map((s) => Number(s.trim()));
  if (list.some((v) => !Number.isInteger(v) || v <= 0)) throw new Error(`${name} must be a list like 1,2 (got ${raw})`);
  return list;
}
