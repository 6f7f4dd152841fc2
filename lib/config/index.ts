/**
 * Configuration is read once, validated against one schema ({@link VARIABLES}) with defaults, and
 * fails at start with the variable's name (docs/style.md §5). This is the only module that reads
 * `process.env`; everything else receives a {@link Config} (or a part of it) from its entry point.
 */
import { Ajv } from 'ajv';
import { ConfigError } from '../errors.ts';
import { VARIABLES, type VariableSpec, type Variables } from './variables.ts';

export { VARIABLES, type VariableName, type Variables } from './variables.ts';

const ajv = new Ajv({ coerceTypes: true, useDefaults: true, allErrors: true, strict: true });
const validate = ajv.compile<Variables>({
  type: 'object',
  properties: Object.fromEntries(
    Object.entries(VARIABLES).map(([name, spec]) => {
      const { description: _description, ...schema } = spec as Record<string, unknown>;
      return [name, schema];
    }),
  ),
});

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off', '']);

/**
 * Reads and validates every known variable from `env`.
 * @param env the environment to read; @default process.env
 * @throws ConfigError naming the first invalid variable
 */
export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): Variables {
  const input: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(VARIABLES) as [string, VariableSpec][]) {
    const raw = env[name];
    if (raw === undefined) continue;
    if (spec.type === 'boolean') {
      const lower = raw.trim().toLowerCase();
      // Set but empty (`VAR=`) means "not set": the default applies.
      if (lower === '') continue;
      if (TRUE.has(lower)) input[name] = true;
      else if (FALSE.has(lower)) input[name] = false;
      else throw new ConfigError(name, `must be true or false (got ${JSON.stringify(raw)})`);
    } else if (spec.type === 'integer' || spec.type === 'number') {
      if (raw.trim() === '') continue;
      input[name] = raw.trim();
    } else {
      input[name] = raw;
    }
  }
  // Which ports were given, before the schema fills in the defaults.
  const kafkaPortGiven = 'CRAWL_KAFKA_PORT' in input;
  const redisPortGiven = 'CRAWL_REDIS_PORT' in input;
  if (!validate(input)) {
    const first = validate.errors?.[0];
    const name = first?.instancePath.slice(1) || 'environment';
    throw new ConfigError(name, `${first?.message ?? 'is invalid'} (got ${JSON.stringify(env[name])})`);
  }
  return withDerivedDefaults(input as Variables, { kafkaPortGiven, redisPortGiven, env });
}

/**
 * One knob per port: moving the local Kafka or Redis with CRAWL_KAFKA_PORT / CRAWL_REDIS_PORT also points the clients
 * at it, unless KAFKA_BROKERS / REDIS_PORT are set themselves (those always win). KAFKA_BROKERS then defaults to
 * `127.0.0.1:<CRAWL_KAFKA_PORT>` and REDIS_PORT to CRAWL_REDIS_PORT.
 */
function withDerivedDefaults(
  vars: Variables,
  given: { kafkaPortGiven: boolean; redisPortGiven: boolean; env: Readonly<Record<string, string | undefined>> },
): Variables {
  if (given.kafkaPortGiven && given.env.KAFKA_BROKERS === undefined) {
    vars.KAFKA_BROKERS = `127.0.0.1:${vars.CRAWL_KAFKA_PORT}`;
  }
  if (given.redisPortGiven && (given.env.REDIS_PORT ?? '').trim() === '') vars.REDIS_PORT = vars.CRAWL_REDIS_PORT;
  return vars;
}

let cached: Variables | undefined;

/** The process-wide configuration, read from `process.env` on first use. */
export function config(): Variables {
  cached ??= loadConfig();
  return cached;
}

/**
 * Local runs only: Powertools would print an Embedded Metric Format JSON document to stdout on every
 * invocation, which is noise on a terminal. Turn metrics output off unless the user set it explicitly.
 * Must run before the handler modules are imported (Powertools reads it when a Metrics is built).
 */
export function quietLocalMetrics(env: Record<string, string | undefined> = process.env): void {
  env.POWERTOOLS_METRICS_DISABLED ??= 'true';
}

/** The process environment, for entry points that start child processes with it as the base. */
export function processEnvironment(): NodeJS.ProcessEnv {
  return process.env;
}
