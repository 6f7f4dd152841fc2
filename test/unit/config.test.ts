/**
 * The configuration module: one schema with defaults, validated once, failing with the variable's name
 * (docs/style.md §5). Also keeps docs/configuration.md's configuration table in step with lib/config/variables.ts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig, VARIABLES, type VariableName } from '../../lib/config/index.ts';
import type { VariableSpec } from '../../lib/config/variables.ts';
import { ConfigError } from '../../lib/errors.ts';

const specs = Object.entries(VARIABLES) as [VariableName, VariableSpec][];

/** Runs loadConfig on `env`, which must fail with a ConfigError, and returns that error. */
function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('fills in every default when the environment is empty', () => {
    const vars = loadConfig({});
    expect(Object.keys(vars).sort()).toEqual(Object.keys(VARIABLES).sort());
    for (const [name, spec] of specs) expect(vars[name], name).toBe(spec.default);
  });

  it('gives the documented defaults for a few well-known variables', () => {
    const vars = loadConfig({});
    expect(vars.KAFKA_BROKERS).toBe('127.0.0.1:9092');
    expect(vars.KAFKA_TOPIC_PREFIX).toBe('demo');
    expect(vars.QUEUE_HITS).toBe(10);
    expect(vars.QUEUE_MODERATED).toBe(true);
    expect(vars.REDIS_PORT).toBe(6379);
  });

  it('CRAWL_KAFKA_PORT alone also points KAFKA_BROKERS at 127.0.0.1 on that port', () => {
    expect(loadConfig({ CRAWL_KAFKA_PORT: '19092' }).KAFKA_BROKERS).toBe('127.0.0.1:19092');
    expect(loadConfig({ CRAWL_KAFKA_PORT: '' }).KAFKA_BROKERS).toBe('127.0.0.1:9092');
  });

  it('KAFKA_BROKERS set wins over the one derived from CRAWL_KAFKA_PORT', () => {
    expect(loadConfig({ CRAWL_KAFKA_PORT: '19092', KAFKA_BROKERS: 'b1:9092' }).KAFKA_BROKERS).toBe('b1:9092');
  });

  it('CRAWL_REDIS_PORT alone also sets REDIS_PORT; REDIS_PORT set wins', () => {
    expect(loadConfig({ CRAWL_REDIS_PORT: '16379' }).REDIS_PORT).toBe(16379);
    expect(loadConfig({ CRAWL_REDIS_PORT: '16379', REDIS_PORT: '6400' }).REDIS_PORT).toBe(6400);
    expect(loadConfig({ CRAWL_REDIS_PORT: '16379', REDIS_PORT: '' }).REDIS_PORT).toBe(16379);
    expect(loadConfig({ REDIS_PORT: '6400' }).CRAWL_REDIS_PORT).toBe(6379);
  });

  it('CRAWLER_MAX_LINKS: 10,000 by default, any whole number from 1 to 100,000, else refused by name', () => {
    expect(loadConfig({}).CRAWLER_MAX_LINKS).toBe(10_000);
    expect(loadConfig({ CRAWLER_MAX_LINKS: '50' }).CRAWLER_MAX_LINKS).toBe(50);
    expect(loadConfig({ CRAWLER_MAX_LINKS: '100000' }).CRAWLER_MAX_LINKS).toBe(100_000);
    for (const bad of ['0', '100001', 'many'])
      expect(configError({ CRAWLER_MAX_LINKS: bad }).variable).toBe('CRAWLER_MAX_LINKS');
  });

  it('coerces integer variables from strings, ignoring surrounding spaces', () => {
    const vars = loadConfig({ QUEUE_HITS: '25', REDIS_PORT: ' 16379 ', KAFKA_TOPIC_PARTITIONS: '12' });
    expect(vars.QUEUE_HITS).toBe(25);
    expect(vars.REDIS_PORT).toBe(16379);
    expect(vars.KAFKA_TOPIC_PARTITIONS).toBe(12);
  });

  it('uses the default for an integer variable set to the empty string', () => {
    expect(loadConfig({ QUEUE_WINDOW: '' }).QUEUE_WINDOW).toBe(60);
  });

  it('rejects an integer variable that is not a number, naming it', () => {
    const error = configError({ QUEUE_WINDOW: 'sixty' });
    expect(error.variable).toBe('QUEUE_WINDOW');
    expect(error.message).toContain('QUEUE_WINDOW');
  });

  it.each([
    ['true', true],
    ['false', false],
    ['1', true],
    ['0', false],
    ['yes', true],
    ['no', false],
    ['TRUE', true],
    [' No ', false],
  ])('reads the boolean %j as %s', (raw, expected) => {
    expect(loadConfig({ KAFKA_APPID_TOPICS: raw }).KAFKA_APPID_TOPICS).toBe(expected);
    expect(loadConfig({ QUEUE_MODERATED: raw }).QUEUE_MODERATED).toBe(expected);
  });

  it('rejects the boolean "maybe" with a ConfigError naming the variable', () => {
    const error = configError({ REDIS_TLS: 'maybe' });
    expect(error.variable).toBe('REDIS_TLS');
    expect(error.message).toContain('REDIS_TLS');
    expect(error.message).toContain('maybe');
  });

  it.each([
    ['QUEUE_HITS', '0'],
    ['CRAWL_KAFKA_PORT', '70000'],
    ['REDIS_PORT', '0'],
    ['LEASE_TIMEOUT', '4'],
  ])('rejects the out-of-range %s=%s, naming the variable', (name, raw) => {
    const error = configError({ [name]: raw });
    expect(error.variable).toBe(name);
    expect(error.message).toContain(name);
  });

  it('rejects a value outside an enum, naming the variable', () => {
    const error = configError({ KAFKA_SASL_MECHANISM: 'plain' });
    expect(error.variable).toBe('KAFKA_SASL_MECHANISM');
    expect(error.message).toContain('KAFKA_SASL_MECHANISM');
  });

  it('rejects a value that does not match the pattern, naming the variable', () => {
    const error = configError({ KAFKA_TOPIC_PREFIX: 'my topics' });
    expect(error.variable).toBe('KAFKA_TOPIC_PREFIX');
    expect(error.message).toContain('KAFKA_TOPIC_PREFIX');
  });

  it('names the invalid variable even when valid ones are set around it', () => {
    const error = configError({ KAFKA_BROKERS: 'b1:9092', CRAWL_KAFKA_HEAP: '1 gig', QUEUE_HITS: '5' });
    expect(error.variable).toBe('CRAWL_KAFKA_HEAP');
  });

  it('ignores variables it does not know', () => {
    const vars = loadConfig({ PATH: '/usr/bin', HOME: '/root', QUEUE_HITS_TYPO: 'x', KAFKA_BROKERS: 'b1:9092' });
    expect(vars.KAFKA_BROKERS).toBe('b1:9092');
    expect(vars).not.toHaveProperty('PATH');
    expect(vars).not.toHaveProperty('QUEUE_HITS_TYPO');
  });

  it('does not change the environment object it reads', () => {
    const env = { QUEUE_HITS: '7', KAFKA_SSL: 'yes', UNRELATED: 'x' };
    const before = structuredClone(env);
    const vars = loadConfig(Object.freeze(env));
    expect(env).toEqual(before);
    expect(vars.QUEUE_HITS).toBe(7);
    expect(vars.KAFKA_SSL).toBe(true);
  });

  it('returns a fresh object on each call', () => {
    const a = loadConfig({});
    const b = loadConfig({});
    expect(a).not.toBe(b);
    a.QUEUE_HITS = 99;
    expect(loadConfig({}).QUEUE_HITS).toBe(10);
  });
});

describe('VARIABLES', () => {
  it.each(specs)('%s has a description and a default', (_name, spec) => {
    expect(spec.description.trim().length).toBeGreaterThan(3);
    expect(spec.default).toBeDefined();
  });

  it.each(specs)('%s accepts its own default written as a string and reads it back unchanged', (name, spec) => {
    expect(loadConfig({ [name]: String(spec.default) })[name]).toBe(spec.default);
  });
});

describe('docs/configuration.md', () => {
  const page = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');

  /** The variable names in the first column of the table under the `# Configuration` heading, up to the next heading. */
  function tableNames(): string[] {
    const start = page.search(/^# Configuration\b/m);
    expect(start, 'docs/configuration.md has a "# Configuration" heading').toBeGreaterThanOrEqual(0);
    const rest = page.slice(start);
    const next = rest.slice(1).search(/^#{1,2} /m);
    const section = next < 0 ? rest : rest.slice(0, next + 1);
    return [...section.matchAll(/^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|/gm)].map((m) => m[1] ?? '');
  }

  it('lists every configuration variable in its configuration table', () => {
    const listed = new Set(tableNames());
    const missing = Object.keys(VARIABLES).filter((name) => !listed.has(name));
    expect(missing, 'variables missing from the configuration table of docs/configuration.md').toEqual([]);
  });

  it('lists no variable that does not exist, and none twice', () => {
    const names = tableNames();
    expect(names.filter((name) => !(name in VARIABLES))).toEqual([]);
    expect(names.length).toBe(new Set(names).size);
  });
});
