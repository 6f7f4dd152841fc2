/**
 * The Docker path (localstack/docker-compose.yml) cannot run in CI, so its contract is checked here by
 * reading the file: ports the CLI's defaults expect, Kafka reachable from host and containers, and the
 * topics kafka-init creates kept equal to lib/kafka/topics.ts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { VARIABLES } from '../../lib/config/variables.ts';
import { clusterTopicList } from '../../lib/kafka/topics.ts';

interface LongPort {
  host_ip?: string;
  published?: string | number;
  target: number;
}

interface Service {
  image?: string;
  command?: string | string[];
  ports?: (string | LongPort)[];
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean };
  restart?: string;
  volumes?: (string | { type?: string; source?: string })[];
}

interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const compose = parse(
  readFileSync(new URL('../../localstack/docker-compose.yml', import.meta.url), 'utf8'),
) as ComposeFile;

function service(name: string): Service {
  const found = compose.services[name];
  if (!found) throw new Error(`compose file has no service ${name}`);
  return found;
}

function env(name: string): Record<string, string> {
  const raw = service(name).environment ?? {};
  if (Array.isArray(raw)) {
    return Object.fromEntries(raw.map((line) => [line.split('=')[0] ?? '', line.slice(line.indexOf('=') + 1)]));
  }
  return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, String(v ?? '')]));
}

/** What compose makes of a value when no variable is set: `${X:-d}` is d, `${X}` is empty, `$$` is `$`. */
function interpolateUnset(text: string): string {
  return text.replace(/\$\$|\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?\}/g, (match, fallback: string | undefined) =>
    match === '$$' ? '$' : (fallback ?? ''),
  );
}

interface Published {
  service: string;
  ip: string;
  host: number;
  container: number;
}

function publishedPorts(): Published[] {
  return Object.entries(compose.services).flatMap(([name, svc]) =>
    (svc.ports ?? []).map((port): Published => {
      if (typeof port !== 'string') {
        return {
          service: name,
          ip: port.host_ip ?? '',
          host: Number(port.published),
          container: port.target,
        };
      }
      const short = /^(?:([\d.]+):)?(\d+):(\d+)(?:\/tcp)?$/.exec(port);
      if (!short) throw new Error(`${name}: cannot read port ${port}`);
      return { service: name, ip: short[1] ?? '', host: Number(short[2]), container: Number(short[3]) };
    }),
  );
}

interface Listener {
  name: string;
  host: string;
  port: number;
}

function listeners(value: string | undefined): Listener[] {
  return (value ?? '').split(',').map((entry) => {
    const parsed = /^([A-Z_]+):\/\/([^:]*):(\d+)$/.exec(entry.trim());
    if (!parsed) throw new Error(`cannot read listener ${entry}`);
    return { name: parsed[1] ?? '', host: parsed[2] ?? '', port: Number(parsed[3]) };
  });
}

function protocolMap(value: string | undefined): Map<string, string> {
  return new Map(
    (value ?? '').split(',').map((pair) => {
      const [name = '', protocol = ''] = pair.trim().split(':');
      return [name, protocol];
    }),
  );
}

/** kafka-init's shell script as written (with compose's `${...}` still in it). */
function initScript(): string {
  const command = service('kafka-init').command ?? [];
  return Array.isArray(command) ? command.join('\n') : command;
}

/** The words of kafka-init's `for topic in ... do` list, after compose fills in the defaults. */
function initTopics(): string[] {
  const loop = /for topic in([\s\S]*?)\n\s*do\b/.exec(interpolateUnset(initScript()));
  if (!loop?.[1]) throw new Error('kafka-init has no `for topic in ... do` loop');
  return loop[1].split(/[\s\\]+/).filter(Boolean);
}

function hasHealthcheck(svc: Service): boolean {
  const test = svc.healthcheck?.test;
  if (svc.healthcheck?.disable || test === undefined) return false;
  const words = Array.isArray(test) ? test : [test];
  return words.length > 0 && words[0] !== 'NONE' && words.join(' ').trim().length > 0;
}

describe('localstack/docker-compose.yml', () => {
  it('defines the redis, kafka, kafka-init and localstack services', () => {
    expect(Object.keys(compose.services)).toEqual(
      expect.arrayContaining(['redis', 'kafka', 'kafka-init', 'localstack']),
    );
  });

  it('publishes only 6379, 9092 and 4566, each on 127.0.0.1', () => {
    const ports = publishedPorts()
      .map((p) => `${p.service} ${p.ip}:${p.host}->${p.container}`)
      .sort();
    expect(ports).toEqual([
      'kafka 127.0.0.1:9092->9092',
      'localstack 127.0.0.1:4566->4566',
      'redis 127.0.0.1:6379->6379',
    ]);
  });

  it("publishes Redis and Kafka on the ports of the CLI's default REDIS_PORT and KAFKA_BROKERS", () => {
    const host = (name: string) => publishedPorts().find((p) => p.service === name)?.host;
    expect(host('redis')).toBe(VARIABLES.REDIS_PORT.default);
    expect(`127.0.0.1:${host('kafka')}`).toBe(VARIABLES.KAFKA_BROKERS.default);
  });

  it('runs Redis with an append-only file and without eviction, like the native Redis', () => {
    const command = service('redis').command;
    const text = Array.isArray(command) ? command.join(' ') : (command ?? '');
    expect(text).toMatch(/--appendonly yes\b/);
    expect(text).toMatch(/--maxmemory-policy noeviction\b/);
  });

  describe('kafka', () => {
    const vars = env('kafka');

    it('runs one KRaft node that is both broker and controller', () => {
      expect(vars.KAFKA_PROCESS_ROLES).toBe('broker,controller');
      expect(vars.KAFKA_CONTROLLER_QUORUM_VOTERS).toMatch(/^1@[^:]+:\d+$/);
      expect(vars.KAFKA_NODE_ID).toBe('1');
      expect(vars.CLUSTER_ID).toMatch(/^[A-Za-z0-9_-]{22}$/);
    });

    it('refuses to create topics on first use, as MSK does', () => {
      expect(vars.KAFKA_AUTO_CREATE_TOPICS_ENABLE).toBe('false');
    });

    it('keeps one replica of its internal topics, which a single broker can hold', () => {
      expect(vars.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR).toBe('1');
      expect(vars.KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR).toBe('1');
      expect(vars.KAFKA_TRANSACTION_STATE_LOG_MIN_ISR).toBe('1');
    });

    it('advertises the published port on loopback to host clients and kafka:<port> to containers', () => {
      const bound = listeners(vars.KAFKA_LISTENERS);
      const advertised = listeners(vars.KAFKA_ADVERTISED_LISTENERS);
      const published = publishedPorts().filter((p) => p.service === 'kafka');

      const forHost = advertised.find((l) => ['127.0.0.1', 'localhost'].includes(l.host));
      expect(forHost?.port).toBe(9092);
      expect(published.map((p) => p.container)).toEqual([forHost?.port]);

      const forContainers = advertised.find((l) => l.host === 'kafka');
      expect(forContainers).toBeDefined();
      expect(forContainers?.name).not.toBe(forHost?.name);

      // An advertised address is only reachable when the broker listens under that name on that port.
      for (const a of advertised) expect(bound).toContainEqual({ name: a.name, host: '', port: a.port });
    });

    it('maps every listener to a security protocol and keeps the controller listener internal', () => {
      const bound = listeners(vars.KAFKA_LISTENERS);
      const map = protocolMap(vars.KAFKA_LISTENER_SECURITY_PROTOCOL_MAP);
      for (const l of bound) expect(map.get(l.name), l.name).toBe('PLAINTEXT');

      const controller = bound.find((l) => l.name === vars.KAFKA_CONTROLLER_LISTENER_NAMES);
      expect(controller).toBeDefined();
      expect(vars.KAFKA_CONTROLLER_QUORUM_VOTERS?.endsWith(`:${controller?.port}`)).toBe(true);
      expect(listeners(vars.KAFKA_ADVERTISED_LISTENERS).map((l) => l.name)).not.toContain(controller?.name);
      expect(publishedPorts().map((p) => p.container)).not.toContain(controller?.port);
      expect(bound.map((l) => l.name)).toContain(vars.KAFKA_INTER_BROKER_LISTENER_NAME);
    });
  });

  describe('kafka-init', () => {
    it('starts only once kafka is healthy and is not restarted after it exits', () => {
      expect(service('kafka-init').depends_on).toEqual({ kafka: { condition: 'service_healthy' } });
      expect(service('kafka-init').restart).toBe('no');
    });

    it('creates exactly clusterTopicList() of the default prefix, so a new contract topic needs a compose change', () => {
      expect(initTopics()).toEqual(clusterTopicList(VARIABLES.KAFKA_TOPIC_PREFIX.default));
    });

    it('defaults the prefix and partition count to the defaults of lib/config/variables.ts', () => {
      const script = initScript();
      const prefixes = [...script.matchAll(/\$\{KAFKA_TOPIC_PREFIX:-([^}]*)\}/g)].map((m) => m[1]);
      expect(prefixes.length).toBe(initTopics().length);
      expect(new Set(prefixes)).toEqual(new Set([VARIABLES.KAFKA_TOPIC_PREFIX.default]));
      expect(script).toContain(`--partitions \${KAFKA_TOPIC_PARTITIONS:-${VARIABLES.KAFKA_TOPIC_PARTITIONS.default}}`);
    });

    it('creates each topic idempotently through the listener kafka advertises to containers', () => {
      const script = interpolateUnset(initScript());
      expect(script).toMatch(/kafka-topics\.sh [^\n]*--create --if-not-exists --topic "\$topic"/);
      const bootstrap = /^.*--create.*$/m.exec(script)?.[0].match(/--bootstrap-server (\S+)/)?.[1];
      const forContainers = listeners(env('kafka').KAFKA_ADVERTISED_LISTENERS).find((l) => l.host === 'kafka');
      expect(bootstrap).toBe(`kafka:${forContainers?.port}`);
    });
  });

  it('runs LocalStack with S3 and CloudWatch and hands it LOCALSTACK_AUTH_TOKEN from the host', () => {
    const vars = env('localstack');
    expect(vars.SERVICES?.split(',')).toEqual(expect.arrayContaining(['s3', 'cloudwatch']));
    expect(vars.LOCALSTACK_AUTH_TOKEN).toMatch(/^\$\{LOCALSTACK_AUTH_TOKEN\b/);
  });

  it('gives every long-running service a healthcheck', () => {
    const longRunning = Object.entries(compose.services).filter(([, svc]) => svc.restart !== 'no');
    expect(longRunning.map(([name]) => name).sort()).toEqual(['kafka', 'localstack', 'redis']);
    for (const [name, svc] of longRunning) expect(hasHealthcheck(svc), name).toBe(true);
  });

  it('declares every named volume a service mounts', () => {
    const declared = Object.keys(compose.volumes ?? {});
    const mounted = Object.values(compose.services).flatMap((svc) =>
      (svc.volumes ?? []).map((v) => (typeof v === 'string' ? v.split(':')[0] : v.source) ?? ''),
    );
    const named = mounted.filter((source) => !/^[./~]/.test(source));
    expect(named.length).toBeGreaterThan(0);
    for (const source of named) expect(declared).toContain(source);
  });
});
