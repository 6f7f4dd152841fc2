/**
 * Deploy hardening (issue 16): the AUTH token out of the functions' configuration, no AWS managed policy on the
 * functions' roles, fresh accounts, a first deploy that starts no crawler, the public-subnet mode's networking, unique
 * physical names, portable bundling, and bounded MSK retries with an alarm on what they give up.
 */
import { execSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { afterBundlingCommands } from '../../cdk/constructs/crawl-function.ts';
import { MSK_EXECUTION_POLICY } from '../../cdk/constructs/functions.ts';
import { FAILED_BATCH_METRICS_ID } from '../../cdk/constructs/storage.ts';
import { REPO_ROOT } from '../../cdk/repo-root.ts';
import { readSettings } from '../../cdk/settings.ts';
import { REDIS_PASSWORD_SECRET_ARN } from '../../functions/shared/secrets.ts';
import { DASHBOARD_FILES } from '../../lib/rest/dashboard-page.ts';
import { allStatements, type Cfn, logicalIdOf, resourceOf, type Synthesized, synthStack } from './synth.ts';

let s: Synthesized;
beforeAll(() => {
  s = synthStack();
});

const resources = (syn: Synthesized, type: string): [string, Cfn][] =>
  Object.entries(syn.template.findResources(type)) as [string, Cfn][];

/** The statements of a role, inline in the role or in a policy attached to it. */
function statementsOf(syn: Synthesized, roleId: string) {
  const policies = resources(syn, 'AWS::IAM::Policy')
    .filter(([, r]) => JSON.stringify(r.Properties.Roles).includes(JSON.stringify({ Ref: roleId })))
    .map(([id]) => id);
  return allStatements(syn).filter((st) => st.owner === roleId || policies.includes(st.owner));
}

describe('the Redis AUTH token (secret ARN, read at cold start)', () => {
  it('is in no function’s environment: each Redis user gets the secret’s ARN and may read that secret only', () => {
    const secret = logicalIdOf(s, s.stack.cache.authToken);
    for (const [id, fn] of resources(s, 'AWS::Lambda::Function')) {
      const env = fn.Properties.Environment?.Variables ?? {};
      expect(env, id).not.toHaveProperty('REDIS_PASSWORD');
      expect(JSON.stringify(env), id).not.toContain('resolve:secretsmanager');
    }
    for (const { name, fn } of s.stack.functions.all) {
      const env = resourceOf(s, fn.function).Properties.Environment.Variables;
      expect(env[REDIS_PASSWORD_SECRET_ARN], name).toEqual({ Ref: secret });
      const grants = statementsOf(s, logicalIdOf(s, fn.role)).filter((st) =>
        st.Action.some((a) => a.startsWith('secretsmanager:')),
      );
      expect(grants, name).toHaveLength(1);
      expect(grants[0]?.Action, name).toEqual(['secretsmanager:GetSecretValue']);
      expect(grants[0]?.Resource, name).toEqual([{ Ref: secret }]);
    }
    // The topics custom resource never opens Redis.
    const topics = resourceOf(s, s.stack.kafka.topicsFunction.function).Properties.Environment.Variables;
    expect(topics).not.toHaveProperty(REDIS_PASSWORD_SECRET_ARN);
  });

  it('refuses REDIS_PASSWORD in runtimeEnv: the token stays in Secrets Manager', () => {
    expect(() => readSettings({ runtimeEnv: { REDIS_PASSWORD: 'x' } })).toThrow(/runtimeEnv.*REDIS_PASSWORD/);
  });
});

describe('least privilege for the MSK event sources', () => {
  it('leaves no AWS managed policy on any role of the project’s functions', () => {
    const roles = [...s.stack.functions.all.map((f) => f.fn.role), s.stack.kafka.topicsFunction.role];
    for (const role of roles) {
      const r = resourceOf(s, role);
      expect(r.Properties.ManagedPolicyArns, role.node.path).toBeUndefined();
    }
    for (const [id, r] of resources(s, 'AWS::IAM::Role'))
      expect(JSON.stringify(r.Properties.ManagedPolicyArns ?? []), id).not.toContain(MSK_EXECUTION_POLICY);
  });

  it('grants the monitors what the MSK event source needs, the cluster actions on this cluster only', () => {
    const cluster = { 'Fn::GetAtt': [expect.stringMatching(/^KafkaCluster/), 'Arn'] };
    for (const m of [s.stack.functions.kafkaMonitor, s.stack.functions.redisMonitor]) {
      const st = statementsOf(s, logicalIdOf(s, m.role));
      const kafka = st.filter((x) => x.Action.some((a) => a.startsWith('kafka:')));
      const actions = kafka.flatMap((x) => x.Action).filter((a) => a.startsWith('kafka:'));
      // aws-cdk-lib's ManagedKafkaEventSource adds DescribeCluster and ListScramSecrets, on the cluster too.
      expect(actions).toEqual(expect.arrayContaining(['kafka:DescribeClusterV2', 'kafka:GetBootstrapBrokers']));
      for (const x of kafka) expect(x.Resource).toEqual([cluster]);
      const ec2 = new Set(st.flatMap((x) => x.Action).filter((a) => a.startsWith('ec2:')));
      for (const a of [
        'ec2:CreateNetworkInterface',
        'ec2:DescribeNetworkInterfaces',
        'ec2:DescribeVpcs',
        'ec2:DeleteNetworkInterface',
        'ec2:DescribeSubnets',
        'ec2:DescribeSecurityGroups',
      ])
        expect(ec2.has(a), a).toBe(true);
      // Logs only to the function's own group, never logs:* on every resource.
      const logs = st.filter((x) => x.Action.some((a) => a.startsWith('logs:')));
      for (const x of logs) expect(x.Resource).toEqual([{ 'Fn::GetAtt': [logicalIdOf(s, m.logGroup), 'Arn'] }]);
    }
  });
});

describe('fresh accounts: the ECS service-linked role', () => {
  it('is not created by default', () => {
    s.template.resourceCountIs('AWS::IAM::ServiceLinkedRole', 0);
  });

  it('is created with createEcsServiceLinkedRole, kept on deletion, before the cluster and both services', () => {
    const c = synthStack({ createEcsServiceLinkedRole: true });
    const roles = resources(c, 'AWS::IAM::ServiceLinkedRole');
    expect(roles).toHaveLength(1);
    const [id, role] = roles[0] as [string, Cfn];
    expect(role.Properties.AWSServiceName).toBe('ecs.amazonaws.com');
    expect(role.DeletionPolicy).toBe('Retain');
    const all = c.template.toJSON().Resources;
    for (const construct of [c.stack.fleet.cluster, c.stack.fleet.service, c.stack.urlFrontier?.service]) {
      if (!construct) throw new Error('missing construct');
      expect(all[logicalIdOf(c, construct)].DependsOn, construct.node.path).toContain(id);
    }
  });
});

describe('first deploy', () => {
  it('starts the crawler service at 0 tasks: the backlog policy starts them', () => {
    expect(resourceOf(s, s.stack.fleet.service).Properties.DesiredCount).toBe(0);
    const floor = synthStack({ minTasks: 2 });
    expect(resourceOf(floor, floor.stack.fleet.service).Properties.DesiredCount).toBe(2);
  });
});

describe('public crawler subnets (isolated private subnets, no NAT)', () => {
  it('needs no NAT, Lambda or STS endpoint for the MSK event sources (provisioned pollers), and reaches Secrets Manager', () => {
    const pub = synthStack({ crawlerPublicSubnets: true, urlFrontier: false });
    pub.template.resourceCountIs('AWS::EC2::NatGateway', 0);
    const mappings = resources(pub, 'AWS::Lambda::EventSourceMapping');
    // The monitors' and the sink's.
    expect(mappings).toHaveLength(3);
    for (const [, m] of mappings) expect(m.Properties.ProvisionedPollerConfig.MinimumPollers).toBeGreaterThanOrEqual(1);
    const interfaces = resources(pub, 'AWS::EC2::VPCEndpoint').filter(
      ([, r]) => r.Properties.VpcEndpointType === 'Interface',
    );
    expect(interfaces.map(([, r]) => JSON.stringify(r.Properties.ServiceName))).toEqual([
      expect.stringContaining('.secretsmanager'),
    ]);
    const [, endpoint] = interfaces[0] as [string, Cfn];
    const isolated = pub.stack.network.vpc.isolatedSubnets.map((x) => ({ Ref: logicalIdOf(pub, x) }));
    expect(endpoint.Properties.SubnetIds).toEqual(isolated);
    expect(endpoint.Properties.PrivateDnsEnabled).toBe(true);
    const fnSg = logicalIdOf(pub, pub.stack.network.functionsSecurityGroup);
    const endpointsSg = logicalIdOf(pub, pub.stack.network.endpointsSecurityGroup as never);
    pub.template.hasResourceProperties('AWS::EC2::SecurityGroupEgress', {
      GroupId: { 'Fn::GetAtt': [fnSg, 'GroupId'] },
      DestinationSecurityGroupId: { 'Fn::GetAtt': [endpointsSg, 'GroupId'] },
      FromPort: 443,
    });
  });
});

describe('physical names', () => {
  const long = 'CrawlClusterProductionEuropeWestOneTenantNumber';

  it('differ for two stacks whose names share a long prefix, within each service’s limits', () => {
    const a = synthStack({}, { stackName: `${long}A` });
    const b = synthStack({}, { stackName: `${long}B` });
    expect(a.stack.cache.replicationGroupId).not.toBe(b.stack.cache.replicationGroupId);
    expect(a.stack.kafka.clusterName).not.toBe(b.stack.kafka.clusterName);
    for (const x of [a, b, s]) {
      const id = x.stack.cache.replicationGroupId;
      expect(id.length, id).toBeLessThanOrEqual(40);
      expect(id).toMatch(/^[a-z](?:[a-z0-9]|-(?!-))*[a-z0-9]$/);
      const name = x.stack.kafka.clusterName;
      expect(name.length, name).toBeLessThanOrEqual(64);
      expect(name).toMatch(/^[0-9A-Za-z][0-9A-Za-z-]*$/);
    }
    expect(s.stack.cache.replicationGroupId).toMatch(/^crawlcluster-frontier-[0-9a-f]{8}$/);
    expect(s.stack.kafka.clusterName).toMatch(/^CrawlCluster-kafka-[0-9a-f]{8}$/);
    const group = resources(a, 'AWS::ElastiCache::ReplicationGroup')[0]?.[1];
    expect(group?.Properties.ReplicationGroupId).toBe(a.stack.cache.replicationGroupId);
    expect(resources(a, 'AWS::MSK::ServerlessCluster')[0]?.[1].Properties.ClusterName).toBe(a.stack.kafka.clusterName);
  });

  it('gives every log group a retention and every function, the CDK’s own included, a group of the stack', () => {
    for (const [id, r] of resources(s, 'AWS::Logs::LogGroup')) expect(r.Properties.RetentionInDays, id).toBe(30);
    for (const [id, r] of resources(s, 'AWS::Lambda::Function'))
      expect(r.Properties.LoggingConfig?.LogGroup, id).toEqual({ Ref: expect.any(String) });
  });
});

describe('portable bundling', () => {
  it('copies the Lua scripts and the dashboard page with Node, without cp or mkdir', () => {
    const out = mkdtempSync(join(tmpdir(), 'bundle-'));
    try {
      const commands = afterBundlingCommands(REPO_ROOT, out, { lua: true, dashboard: true });
      expect(commands).toHaveLength(2);
      for (const c of commands) {
        expect(c.startsWith('node "')).toBe(true);
        expect(c).not.toMatch(/(^|\s)(cp|mkdir|xcopy|copy)\s/);
      }
      for (const c of commands) execSync(c, { cwd: out, stdio: 'pipe' });
      expect(readdirSync(join(out, 'scripts')).sort()).toEqual(
        readdirSync(join(REPO_ROOT, 'lib/redis/scripts')).sort(),
      );
      expect(readdirSync(join(out, 'dashboard')).sort()).toEqual([...DASHBOARD_FILES].sort());
      expect(afterBundlingCommands(REPO_ROOT, out, { lua: false, dashboard: false })).toEqual([]);
      expect(existsSync(join(out, 'dashboard', 'tsconfig.json'))).toBe(false);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

describe('MSK retries and the failed-batch bucket', () => {
  it('bounds retries and record age by settings, and splits failing batches', () => {
    const c = synthStack({ eventSourceRetryAttempts: 3, maxRecordAgeSec: 600, bisectBatchOnError: false });
    for (const [, m] of resources(c, 'AWS::Lambda::EventSourceMapping')) {
      expect(m.Properties.MaximumRetryAttempts).toBe(3);
      expect(m.Properties.MaximumRecordAgeInSeconds).toBe(600);
      expect(m.Properties.BisectBatchOnFunctionError).toBe(false);
    }
    for (const [, m] of resources(s, 'AWS::Lambda::EventSourceMapping')) {
      expect(m.Properties.MaximumRetryAttempts).toBe(10);
      expect(m.Properties.MaximumRecordAgeInSeconds).toBe(3600);
      expect(m.Properties.BisectBatchOnFunctionError).toBe(true);
    }
    expect(() => readSettings({ eventSourceRetryAttempts: 10_001 })).toThrow(/eventSourceRetryAttempts/);
    expect(() => readSettings({ maxRecordAgeSec: 59 })).toThrow(/maxRecordAgeSec/);
  });

  it('alarms on the alarm topic when a batch lands in the failed-batch bucket', () => {
    const bucket = logicalIdOf(s, s.stack.storage.failedBatches);
    expect(resourceOf(s, s.stack.storage.failedBatches).Properties.MetricsConfigurations).toEqual([
      { Id: FAILED_BATCH_METRICS_ID },
    ]);
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/S3',
      MetricName: 'PutRequests',
      Dimensions: [
        { Name: 'BucketName', Value: { Ref: bucket } },
        { Name: 'FilterId', Value: FAILED_BATCH_METRICS_ID },
      ],
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [{ Ref: logicalIdOf(s, s.stack.observability.alarmTopic) }],
    });
  });
});
