/**
 * A scenario context outside bench/run.ts (a test running a scenario or drill at a small size, bench/profile.ts):
 * progress to `progress`, the inputs kept, the bench's private Redis opened on first use and closed by `close`.
 */
import { type BenchRedis, openBenchRedis } from './redis.ts';
import type { ScenarioContext } from './scenario.ts';

export interface StandaloneContext {
  ctx: ScenarioContext;
  /** What the scenario recorded with `input`. */
  inputs: Record<string, number | string | boolean>;
  /** Closes the bench Redis, when one was opened. */
  close(): Promise<void>;
}

export function standaloneContext(name: string, progress: (message: string) => void): StandaloneContext {
  let redis: Promise<BenchRedis> | undefined;
  const inputs: StandaloneContext['inputs'] = {};
  const ctx: ScenarioContext = {
    name,
    progress,
    redis: () => {
      redis ??= openBenchRedis(progress);
      return redis;
    },
    input: (key, value) => {
      inputs[key] = value;
    },
    note: () => {},
  };
  return { ctx, inputs, close: async () => (await redis?.catch(() => undefined))?.close() };
}
