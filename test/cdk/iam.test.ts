import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { allStatements, logicalIdOf, type Synthesized, synthStack } from './synth.ts';

let s: Synthesized;
beforeAll(() => {
  s = synthStack();
});

/** The Kafka data-plane statements of a principal's role policy, with their resources as JSON text. */
function kafkaGrants(syn: Synthesized, role: IConstruct): { action: string; resource: string }[] {
  const roleId = logicalIdOf(syn, role);
  const policyIds = Object.entries(syn.template.findResources('AWS::IAM::Policy'))
    .filter(([, r]) =>
      (r.Properties.Roles as unknown[]).some((x) => JSON.stringify(x) === JSON.stringify({ Ref: roleId })),
    )
    .map(([id]) => id);
  return allStatements(syn)
    .filter((st) => policyIds.includes(st.owner) || st.owner === roleId)
    .flatMap((st) =>
      st.Action.filter((a) => a.startsWith('kafka-cluster:')).flatMap((action) =>
        st.Resource.map((r) => ({ action, resource: JSON.stringify(r) })),
      ),
    );
}

const onTopic = (name: string) => (g: { resource: string }) =>
  g.resource.includes(`:topic/`) && g.resource.endsWith(`/${name}"]]}`);
const onGroup = (name: string) => (g: { resource: string }) =>
  g.resource.includes(`:group/`) && g.resource.endsWith(`/${name}"]]}`);
const onCluster = (g: { resource: string }) => /^\{"Fn::GetAtt":\["KafkaCluster\w+","Arn"\]\}$/.test(g.resource);

describe('IAM', () => {
  it('never grants a kafka-cluster wildcard action, nor any kafka-cluster action on every resource', () => {
    for (const st of allStatements(s)) {
      const kafka = st.Action.filter((a) => a.startsWith('kafka-cluster:'));
      for (const a of kafka) expect(a, st.owner).not.toContain('*');
      if (kafka.length > 0) expect(st.Resource, st.owner).not.toContain('*');
    }
  });

  it('lets kafka-monitor read only <prefix>.incoming as its own group, and write only where it routes', () => {
    const g = kafkaGrants(s, s.stack.functions.kafkaMonitor.role);
    const reads = g.filter((x) => x.action === 'kafka-cluster:ReadData');
    expect(reads).toHaveLength(1);
    expect(reads.every(onTopic('demo.incoming'))).toBe(true);
    const groups = g.filter((x) => x.action === 'kafka-cluster:AlterGroup');
    expect(groups).toHaveLength(1);
    expect(groups.every(onGroup('demo.kafka-monitor'))).toBe(true);
    const writes = g.filter((x) => x.action === 'kafka-cluster:WriteData');
    for (const t of ['demo.actions', 'demo.rejected', 'demo.outbound_firehose'])
      expect(writes.some(onTopic(t)), t).toBe(true);
    expect(writes).toHaveLength(3);
    expect(g.filter((x) => x.action === 'kafka-cluster:Connect').every(onCluster)).toBe(true);
  });

  it('lets redis-monitor read <prefix>.actions as its own group and write replies only', () => {
    const g = kafkaGrants(s, s.stack.functions.redisMonitor.role);
    expect(g.filter((x) => x.action === 'kafka-cluster:ReadData').every(onTopic('demo.actions'))).toBe(true);
    expect(g.filter((x) => x.action === 'kafka-cluster:DescribeGroup').every(onGroup('demo.redis-monitor'))).toBe(true);
    const writes = g.filter((x) => x.action === 'kafka-cluster:WriteData');
    expect(writes).toHaveLength(1);
    expect(writes.every(onTopic('demo.outbound_firehose'))).toBe(true);
  });

  it('gives stats and reclaim no Kafka rights at all: they use Redis only', () => {
    for (const fn of [s.stack.functions.scheduled.stats, s.stack.functions.scheduled.reclaim]) {
      expect(kafkaGrants(s, fn.role)).toEqual([]);
    }
    // expire still produces its notices.
    const expire = kafkaGrants(s, s.stack.functions.scheduled.expire.role).map((x) => x.action);
    expect(expire).toContain('kafka-cluster:WriteData');
  });

  it('lets the crawlers write pages and completion notices, and read nothing', () => {
    const g = kafkaGrants(s, s.stack.fleet.taskDefinition.taskRole);
    expect(g.some((x) => x.action === 'kafka-cluster:ReadData')).toBe(false);
    const writes = g.filter((x) => x.action === 'kafka-cluster:WriteData');
    expect(writes.some(onTopic('demo.crawled_firehose'))).toBe(true);
    expect(writes.some(onTopic('demo.outbound_firehose'))).toBe(true);
    expect(writes).toHaveLength(2);
  });

  it('lets the topics custom resource create the contract topics and nothing else', () => {
    const g = kafkaGrants(s, s.stack.kafka.topicsFunction.role);
    const creates = g.filter((x) => x.action === 'kafka-cluster:CreateTopic');
    expect(creates).toHaveLength(5);
    expect(g.some((x) => x.action === 'kafka-cluster:WriteData' || x.action === 'kafka-cluster:ReadData')).toBe(false);
  });

  it('widens producers to the per-app topic pattern only when KAFKA_APPID_TOPICS is on', () => {
    const on = synthStack({ runtimeEnv: { KAFKA_APPID_TOPICS: 'true' } });
    const crawler = kafkaGrants(on, on.stack.fleet.taskDefinition.taskRole).filter(
      (x) => x.action === 'kafka-cluster:WriteData',
    );
    expect(crawler.some(onTopic('demo.crawled_*'))).toBe(true);
    const monitor = kafkaGrants(on, on.stack.functions.redisMonitor.role).filter(
      (x) => x.action === 'kafka-cluster:WriteData',
    );
    expect(monitor.some(onTopic('demo.outbound_*'))).toBe(true);
    const off = kafkaGrants(s, s.stack.fleet.taskDefinition.taskRole);
    expect(off.some((x) => x.resource.includes('*'))).toBe(false);
    expect(off.some((x) => x.action === 'kafka-cluster:CreateTopic')).toBe(false);
  });

  it('lets every writer of per-app copies create (and describe) both per-app topics of a new app', () => {
    const on = synthStack({ runtimeEnv: { KAFKA_APPID_TOPICS: 'true' } });
    const roles = {
      crawler: on.stack.fleet.taskDefinition.taskRole,
      kafkaMonitor: on.stack.functions.kafkaMonitor.role,
      redisMonitor: on.stack.functions.redisMonitor.role,
      expire: on.stack.functions.scheduled.expire.role,
    };
    for (const [name, role] of Object.entries(roles)) {
      const g = kafkaGrants(on, role);
      for (const action of ['kafka-cluster:CreateTopic', 'kafka-cluster:DescribeTopic']) {
        const granted = g.filter((x) => x.action === action);
        expect(granted.some(onTopic('demo.crawled_*')), `${name} ${action} crawled_*`).toBe(true);
        expect(granted.some(onTopic('demo.outbound_*')), `${name} ${action} outbound_*`).toBe(true);
      }
    }
  });

  it('scopes function logs to each function’s own log group (no AWS managed execution policy)', () => {
    for (const { name, fn } of s.stack.functions.all) {
      const role = s.template.toJSON().Resources[logicalIdOf(s, fn.role)];
      const managed = JSON.stringify(role.Properties.ManagedPolicyArns ?? []);
      expect(managed, name).not.toContain('AWSLambdaBasicExecutionRole');
      expect(managed, name).not.toContain('AWSLambdaVPCAccessExecutionRole');
      const logs = allStatements(s).filter(
        (st) => st.owner === logicalIdOf(s, fn.role) && st.Action.includes('logs:PutLogEvents'),
      );
      expect(logs, name).toHaveLength(1);
      expect(logs[0]?.Resource, name).toEqual([{ 'Fn::GetAtt': [logicalIdOf(s, fn.logGroup), 'Arn'] }]);
    }
  });
});
