/**
 * FRONTIER_PARTITIONS on AWS (cdk/settings.ts `frontierPartitions`, the cache construct's `clientEnvironment`): the
 * frontier's partitions follow the cache's shards unless `-c frontierPartitions=N` says otherwise, every process that
 * uses the frontier gets the same count, and a count that would leave shards idle or unevenly loaded fails synth.
 */
import { describe, expect, it } from 'vitest';
import { readSettings } from '../../cdk/settings.ts';
import { type Cfn, logicalIdOf, type Synthesized, synthStack } from './synth.ts';

/**
 * Every environment in the template that points at the stack's cache (REDIS_HOST), by the logical id of its function
 * or task definition and container: found from the template, not from the constructs the stack exposes, so a
 * consumer added later without the variable fails here too.
 */
function frontierClients(s: Synthesized): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const [id, r] of Object.entries(s.template.toJSON().Resources as Record<string, Cfn>)) {
    if (r.Type === 'AWS::Lambda::Function') {
      const env = (r.Properties.Environment?.Variables ?? {}) as Record<string, unknown>;
      if ('REDIS_HOST' in env) out.set(id, env);
    } else if (r.Type === 'AWS::ECS::TaskDefinition') {
      for (const c of r.Properties.ContainerDefinitions as Cfn[]) {
        const env = Object.fromEntries(((c.Environment ?? []) as Cfn[]).map((e) => [e.Name, e.Value]));
        if ('REDIS_HOST' in env) out.set(`${id}/${c.Name}`, env);
      }
    }
  }
  return out;
}

/** The FRONTIER_PARTITIONS of every frontier client, and the stack output, checked to be one value. */
function partitionsOf(s: Synthesized): string {
  const values = new Set([...frontierClients(s).values()].map((env) => env.FRONTIER_PARTITIONS));
  expect([...values]).toHaveLength(1);
  const [value] = values;
  expect(s.template.toJSON().Outputs.FrontierPartitions.Value).toBe(value);
  return value as string;
}

describe('frontier partitions follow the cache shards', () => {
  it('reach every function, the crawler and browser fleets and the URL Frontier, with one value', () => {
    const s = synthStack({ cacheClusterMode: true, cacheShards: 3, browserFleet: true });
    const clients = frontierClients(s);
    const container = (taskDefinition: Parameters<typeof logicalIdOf>[1], name: string) =>
      `${logicalIdOf(s, taskDefinition)}/${name}`;
    const { urlFrontier, browserFleet } = s.stack;
    if (!urlFrontier || !browserFleet) throw new Error('the URL Frontier and the browser fleet are deployed here');
    const expected = [
      ...s.stack.functions.all.map(({ fn }) => logicalIdOf(s, fn.function)),
      container(s.stack.fleet.taskDefinition, 'crawler'),
      container(browserFleet.taskDefinition, 'browser'),
      container(urlFrontier.taskDefinition, 'url-frontier'),
    ];
    expect([...clients.keys()].sort()).toEqual(expected.sort());
    expect(s.stack.functions.all.map((f) => f.name).sort()).toEqual(
      ['expire', 'kafka-monitor', 'reclaim', 'redis-monitor', 'rest', 'stats'].sort(),
    );
    for (const [id, env] of clients) expect(env.FRONTIER_PARTITIONS, id).toBe('3');
    expect(partitionsOf(s)).toBe('3');
    // The topics function talks to Kafka only: no frontier, no partitions.
    const topics = s.template.toJSON().Resources[logicalIdOf(s, s.stack.kafka.topicsFunction.function)] as Cfn;
    expect(topics.Properties.Environment.Variables).not.toHaveProperty('FRONTIER_PARTITIONS');
  });

  it('are 1 without cluster mode, with one shard, and where cacheShards is given without cluster mode', () => {
    expect(partitionsOf(synthStack())).toBe('1');
    expect(partitionsOf(synthStack({ profile: 'small' }))).toBe('1');
    expect(readSettings({ cacheClusterMode: 'true', cacheShards: '1' }).frontierPartitions).toBe(1);
    expect(readSettings({ cacheShards: 6 }).frontierPartitions).toBe(1);
  });

  it('are the shard count by default in cluster mode, and -c frontierPartitions overrides it', () => {
    expect(readSettings({ cacheClusterMode: 'true', cacheShards: '6' }).frontierPartitions).toBe(6);
    expect(readSettings({ cacheClusterMode: true, cacheShards: 256 }).frontierPartitions).toBe(256);
    const six = synthStack({ cacheClusterMode: 'true', cacheShards: '3', frontierPartitions: '6' });
    expect(partitionsOf(six)).toBe('6');
    // A multiple of one shard is any count: without cluster mode every partition is on the one node.
    expect(readSettings({ frontierPartitions: '4' }).frontierPartitions).toBe(4);
    expect(readSettings({ cacheClusterMode: true, frontierPartitions: 5 }).frontierPartitions).toBe(5);
  });

  it('fail synth, saying why, unless every shard holds as many partitions as the others', () => {
    const cluster = { cacheClusterMode: 'true', cacheShards: '3' };
    expect(() => synthStack({ ...cluster, frontierPartitions: '4' })).toThrow(
      /context "frontierPartitions": must be a multiple of cacheShards \(3\), so that every shard holds as many frontier partitions as the others; 4 would load some shards more than others/,
    );
    expect(() => readSettings({ cacheClusterMode: true, cacheShards: 6, frontierPartitions: 3 })).toThrow(
      /context "frontierPartitions": must be a multiple of cacheShards \(6\).*3 would leave 3 shard\(s\) without any/,
    );
    expect(() => readSettings({ frontierPartitions: 0 })).toThrow(/context "frontierPartitions": .*\[1, 256\]/);
    expect(() => readSettings({ frontierPartitions: '257' })).toThrow(/context "frontierPartitions": .*\[1, 256\]/);
    expect(() => readSettings({ frontierPartitions: 'many' })).toThrow(/context "frontierPartitions"/);
    // More shards than partitions may be: some shard would hold no frontier, whatever the count.
    for (const frontierPartitions of [undefined, 256])
      expect(() => readSettings({ cacheClusterMode: true, cacheShards: 300, frontierPartitions })).toThrow(
        /context "cacheShards": at most 256 in cluster mode: every shard needs a frontier partition.*\(got 300\)/,
      );
    expect(readSettings({ cacheShards: 300 }).frontierPartitions).toBe(1);
    // runtimeEnv cannot set it behind the stack's back (the clients would disagree with the cache's shape).
    expect(() => readSettings({ runtimeEnv: { FRONTIER_PARTITIONS: '3' } })).toThrow(
      /context "runtimeEnv": FRONTIER_PARTITIONS .*-c frontierPartitions=N/,
    );
  });
});
