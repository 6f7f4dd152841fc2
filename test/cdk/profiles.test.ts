import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { PROFILES } from '../../cdk/profiles.ts';
import { readSettings } from '../../cdk/settings.ts';
import { resourceOf, type Synthesized, synthStack, validationFindings } from './synth.ts';

function count(s: Synthesized, type: string): number {
  return Object.keys(s.template.findResources(type)).length;
}

function nagClean(context: Record<string, unknown>): void {
  const { app, stack } = synthStack(context, { nag: true });
  const assembly = app.synth();
  expect(validationFindings(assembly.directory)).toEqual([]);
  Annotations.fromStack(stack).hasNoError('*', Match.anyValue());
}

describe('profile=small', () => {
  const s = synthStack({ profile: 'small' });

  it('has no MSK Serverless cluster but two kafka.t3.small brokers at the free monitoring level', () => {
    expect(count(s, 'AWS::MSK::ServerlessCluster')).toBe(0);
    s.template.hasResourceProperties('AWS::MSK::Cluster', {
      NumberOfBrokerNodes: 2,
      BrokerNodeGroupInfo: Match.objectLike({ InstanceType: 'kafka.t3.small' }),
      EnhancedMonitoring: 'DEFAULT',
    });
  });

  it('has no NAT gateway and runs crawlers in public subnets with a public IP', () => {
    expect(count(s, 'AWS::EC2::NatGateway')).toBe(0);
    s.template.hasResourceProperties('AWS::ECS::Service', {
      NetworkConfiguration: { AwsvpcConfiguration: Match.objectLike({ AssignPublicIp: 'ENABLED' }) },
    });
  });

  it('has one cache node, without Multi-AZ or failover', () => {
    s.template.hasResourceProperties('AWS::ElastiCache::ReplicationGroup', {
      NumCacheClusters: 1,
      MultiAZEnabled: false,
      AutomaticFailoverEnabled: false,
    });
    expect(s.stack.cache.nodeIds).toHaveLength(1);
  });

  it('has on-demand event sources, and Lambda and STS endpoints for their pollers only, in one zone', () => {
    for (const esm of Object.values(s.template.findResources('AWS::Lambda::EventSourceMapping'))) {
      expect(esm.Properties.ProvisionedPollerConfig).toBeUndefined();
      expect(esm.Properties.FunctionResponseTypes).toBeUndefined();
      expect(esm.Properties.DestinationConfig).toBeDefined();
    }
    const interfaces = Object.values(s.template.findResources('AWS::EC2::VPCEndpoint')).filter(
      (r) => r.Properties.VpcEndpointType === 'Interface',
    );
    const services = interfaces.map((r) => JSON.stringify(r.Properties.ServiceName));
    // No Secrets Manager endpoint: the functions get the Redis AUTH token in their environment.
    expect(services.map((x) => /\.(secretsmanager|lambda|sts)"/.exec(x)?.[1]).sort()).toEqual(['lambda', 'sts']);
    for (const r of interfaces) expect(r.Properties.SubnetIds).toHaveLength(1);
  });

  it('tells the monitors to throw on a failed record instead of answering partial batch failures', () => {
    for (const fn of [s.stack.functions.kafkaMonitor, s.stack.functions.redisMonitor]) {
      const id = s.stack.getLogicalId(fn.function.node.defaultChild as never);
      const env = s.template.toJSON().Resources[id].Properties.Environment.Variables;
      expect(env.MSK_EVENT_SOURCE_MODE).toBe('on-demand');
    }
  });

  it('gives the functions the Redis AUTH token in their environment, not the secret to read', () => {
    for (const { name, fn } of s.stack.functions.all) {
      const env = resourceOf(s, fn.function).Properties.Environment.Variables;
      expect(JSON.stringify(env.REDIS_PASSWORD), name).toContain('{{resolve:secretsmanager:');
      expect(env, name).not.toHaveProperty('REDIS_PASSWORD_SECRET_ARN');
    }
  });

  it('has no dashboard, and the alarms still', () => {
    expect(count(s, 'AWS::CloudWatch::Dashboard')).toBe(0);
    expect(count(s, 'AWS::CloudWatch::Alarm')).toBeGreaterThan(10);
  });

  it('has Container Insights off and no URL Frontier service', () => {
    s.template.hasResourceProperties('AWS::ECS::Cluster', {
      ClusterSettings: [{ Name: 'containerInsights', Value: 'disabled' }],
    });
    expect(count(s, 'AWS::ECS::Service')).toBe(1);
    expect(count(s, 'AWS::ElasticLoadBalancingV2::LoadBalancer')).toBe(0);
  });

  it('lets a key given explicitly win over the profile', () => {
    const t = readSettings({
      profile: 'small',
      urlFrontier: 'true',
      cacheReplicas: '1',
      eventSourceMode: 'provisioned',
    });
    expect([t.urlFrontier, t.cacheReplicas, t.eventSourceMode, t.kafka]).toEqual([
      true,
      1,
      'provisioned',
      'provisioned',
    ]);
  });

  it('sets only keys that readSettings knows', () => {
    const standard = readSettings({});
    for (const key of Object.keys(PROFILES.small)) expect(standard).toHaveProperty(key);
  });

  it('stays clean under cdk-nag', () => nagClean({ profile: 'small' }));
  it('stays clean under cdk-nag with the URL Frontier asked for', () =>
    nagClean({ profile: 'small', urlFrontier: true }));
});

describe('profile=standard', () => {
  it('is the default stack: MSK Serverless, NAT gateways, a primary and a replica, provisioned pollers', () => {
    const s = synthStack({ profile: 'standard' });
    expect(JSON.stringify(s.template.toJSON())).toBe(JSON.stringify(synthStack().template.toJSON()));
    expect(count(s, 'AWS::MSK::ServerlessCluster')).toBe(1);
    expect(count(s, 'AWS::EC2::NatGateway')).toBe(2);
    s.template.hasResourceProperties('AWS::ElastiCache::ReplicationGroup', { NumCacheClusters: 2 });
  });

  it('rejects an unknown profile with the key', () => {
    expect(() => readSettings({ profile: 'tiny' })).toThrow(/context "profile"/);
  });
});
