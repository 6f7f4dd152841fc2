/**
 * Option-argument parsers shared by the commands. They throw commander's `InvalidArgumentError`, which
 * commander reports as `error: option '--max <n>' argument 'abc' is invalid. must be an integer >= 1`
 * and main() turns into exit code 2 (invalid usage). Defaults given to `.option()` are not parsed.
 */
import { InvalidArgumentError } from 'commander';

/** The appid of every command that takes `--appid` when none is given: `crawl`, `info`, `stop`, `stats`. */
export const DEFAULT_APPID = 'cli';

/** Inclusive bounds for {@link integerOption}; either may be left out. */
export interface IntegerBounds {
  min?: number;
  max?: number;
}

/** What an integer option accepts, for the error message: `an integer`, `an integer >= 1`, `an integer from 0 to 3`. */
function wanted({ min, max }: IntegerBounds): string {
  if (min !== undefined && max !== undefined) return `an integer from ${min} to ${max}`;
  if (min !== undefined) return `an integer >= ${min}`;
  if (max !== undefined) return `an integer <= ${max}`;
  return 'an integer';
}

/**
 * A commander argument parser for an integer option: `.option('--max <n>', 'stop after n', integerOption({ min: 1 }))`.
 * Accepts only decimal digits with an optional leading minus (no `1e3`, `0x10`, `1.0`, blanks or unsafe
 * integers), within the bounds.
 * @throws InvalidArgumentError `must be an integer >= 1` and the like
 */
export function integerOption(bounds: IntegerBounds = {}): (value: string) => number {
  return (value) => {
    const n = Number(value);
    const ok =
      /^-?\d+$/.test(value) &&
      Number.isSafeInteger(n) &&
      (bounds.min === undefined || n >= bounds.min) &&
      (bounds.max === undefined || n <= bounds.max);
    if (!ok) throw new InvalidArgumentError(`must be ${wanted(bounds)}`);
    return n;
  };
}

/**
 * A commander argument parser for a duration in seconds: any positive finite number (`0.5`, `30`).
 * @throws InvalidArgumentError `must be a positive number of seconds`
 */
export function positiveSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a positive number of seconds');
  return n;
}

/**
 * A commander argument parser for a duration in seconds that may be 0 (`--wait 0`: do not wait).
 * @throws InvalidArgumentError `must be a number of seconds >= 0`
 */
export function positiveOrZeroSeconds(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new InvalidArgumentError('must be a number of seconds >= 0');
  return n;
}
