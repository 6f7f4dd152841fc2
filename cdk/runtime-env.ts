/**
 * The environment of each deployable, built from the variable names of lib/config/variables.ts (docs/design.md §7:
 * cdk/ and the runtime share one list of names, so they cannot drift).
 */
import type { VariableName } from '../lib/config/variables.ts';
import { SettingsError } from './context-values.ts';

/** Values by variable name; undefined entries are left out. */
export type RuntimeEnv = Partial<Record<VariableName, string>>;

/**
 * What every deployable that uses the frontier needs to find it and agree on its layout (the cache construct's
 * `clientEnvironment`): a process with another FRONTIER_PARTITIONS than the others looks for domains in the wrong
 * partitions.
 */
const FRONTIER = [
  'REDIS_HOST',
  'REDIS_PORT',
  'REDIS_TLS',
  'REDIS_CLUSTER',
  'FRONTIER_PARTITIONS',
] as const satisfies readonly VariableName[];

/** Kafka and Redis connection settings: every deployable that talks to both needs them. */
const CONNECTIONS = [
  'KAFKA_BROKERS',
  'KAFKA_TOPIC_PREFIX',
  'KAFKA_SASL_MECHANISM',
  'KAFKA_CLIENT_ID',
  ...FRONTIER,
] as const satisfies readonly VariableName[];

/**
 * Variables each deployable must get on AWS, because their defaults are only right for a local run
 * (127.0.0.1 brokers and Redis, plaintext, no auth). REDIS_PASSWORD reaches the crawler and the URL Frontier
 * service as an ECS secret; the functions get the secret's ARN instead (REDIS_PASSWORD_SECRET_ARN, not a variable of
 * lib/config: functions/shared/secrets.ts reads it) and read the token at cold start, or with
 * `redisTokenInEnvironment` REDIS_PASSWORD itself, resolved by CloudFormation at deploy (docs/cost.md).
 */
export const REQUIRED_VARIABLES = {
  monitor: CONNECTIONS,
  /** stats and reclaim: Redis only (no Kafka producer, so an MSK fault does not stop them). */
  redisOnly: FRONTIER,
  crawler: [...CONNECTIONS, 'REDIS_PASSWORD', 'BODY_STORE_BUCKET', 'SHUTDOWN_DEADLINE_MS', 'AWS_REGION'],
  rest: [...CONNECTIONS, 'WAIT_FOR_RESPONSE_TIME'],
  urlFrontier: [...FRONTIER, 'REDIS_PASSWORD'],
  topics: ['KAFKA_BROKERS', 'KAFKA_SASL_MECHANISM', 'KAFKA_CLIENT_ID'],
} as const satisfies Record<string, readonly VariableName[]>;

/**
 * Runtime defaults of the crawler fleet on AWS that differ from the local ones, and that context `runtimeEnv` may
 * still override (unlike the values the stack owns). Page messages are gzip-compressed: MSK bills every byte in
 * (Serverless) or stores it (provisioned), and the crawl's article pages shrink several times over (cdk/prices.ts
 * COMPRESSION_RATIO, docs/cost.md). gzip rather than zstd (smaller still) because every Scrapy Cluster client reads gzip,
 * while its Python clients read zstd only with the `zstandard` package installed;
 * `runtimeEnv={"KAFKA_COMPRESSION":"zstd"}` when yours do.
 */
export const AWS_FLEET_DEFAULTS: RuntimeEnv = { KAFKA_COMPRESSION: 'gzip' };

/**
 * Merges the user's overrides (context `runtimeEnv`) under the values the stack owns. An override of a value the
 * stack owns (an endpoint, a bucket name) would break the deployment, so it fails synth instead.
 */
export function environment(owned: RuntimeEnv, overrides: RuntimeEnv): Record<string, string> {
  for (const name of Object.keys(overrides)) {
    if (owned[name as VariableName] !== undefined)
      throw new SettingsError('runtimeEnv', `${name} is set by the stack and cannot be overridden`);
  }
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries({ ...overrides, ...owned })) {
    if (value !== undefined) out[name] = value;
  }
  return out;
}
