import { beforeAll, describe, expect, it } from 'vitest';
import { type Cfn, logicalIdOf, resourceOf, type Synthesized, synthStack } from './synth.ts';

let s: Synthesized;
beforeAll(() => {
  s = synthStack();
});

function replicationGroup(syn: Synthesized) {
  const groups = Object.values(syn.template.findResources('AWS::ElastiCache::ReplicationGroup'));
  expect(groups).toHaveLength(1);
  return groups[0] as { Properties: Cfn; DeletionPolicy?: string };
}

describe('ElastiCache Valkey', () => {
  it('requires TLS, encrypts at rest and demands the AUTH token from Secrets Manager', () => {
    const p = replicationGroup(s).Properties;
    expect(p.Engine).toBe('valkey');
    expect(p.TransitEncryptionEnabled).toBe(true);
    expect(p.TransitEncryptionMode).toBe('required');
    expect(p.AtRestEncryptionEnabled).toBe(true);
    const secret = logicalIdOf(s, s.stack.cache.authToken);
    expect(p.AuthToken).toEqual({
      'Fn::Join': ['', ['{{resolve:secretsmanager:', { Ref: secret }, ':SecretString:::}}']],
    });
  });

  it('fails over automatically across AZs, keeps a week of snapshots and a final one on delete', () => {
    const g = replicationGroup(s);
    expect(g.Properties.MultiAZEnabled).toBe(true);
    expect(g.Properties.AutomaticFailoverEnabled).toBe(true);
    expect(g.Properties.NumCacheClusters).toBe(2);
    expect(g.Properties.SnapshotRetentionLimit).toBe(7);
    expect(g.DeletionPolicy).toBe('Snapshot');
  });

  it('never evicts: a full frontier fails writes instead of silently dropping queued requests', () => {
    s.template.hasResourceProperties('AWS::ElastiCache::ParameterGroup', {
      CacheParameterGroupFamily: 'valkey8',
      Properties: { 'maxmemory-policy': 'noeviction', 'cluster-enabled': 'no' },
    });
    const pg = Object.keys(s.template.findResources('AWS::ElastiCache::ParameterGroup'))[0];
    expect(replicationGroup(s).Properties.CacheParameterGroupName).toEqual({ Ref: pg });
  });

  it('is reachable on its port from the functions, the crawlers and the URL Frontier tasks only', () => {
    expect(s.stack.urlFrontier).toBeDefined();
    const cacheSg = logicalIdOf(s, s.stack.cache.securityGroup);
    const ingress = Object.values(s.template.findResources('AWS::EC2::SecurityGroupIngress')).filter(
      (r) => JSON.stringify(r.Properties.GroupId) === JSON.stringify({ 'Fn::GetAtt': [cacheSg, 'GroupId'] }),
    );
    const sources = ingress.map((r) => r.Properties.SourceSecurityGroupId['Fn::GetAtt'][0]).sort();
    expect(sources).toEqual(
      [
        logicalIdOf(s, s.stack.network.functionsSecurityGroup),
        logicalIdOf(s, s.stack.network.crawlerSecurityGroup),
        ...(s.stack.urlFrontier ? [logicalIdOf(s, s.stack.urlFrontier.securityGroup)] : []),
      ].sort(),
    );
    for (const r of ingress) expect([r.Properties.FromPort, r.Properties.ToPort]).toEqual([6380, 6380]);
    const sg = resourceOf(s, s.stack.cache.securityGroup).Properties;
    expect(sg.SecurityGroupIngress).toBeUndefined();
  });

  it('switches to cluster mode with shards and a configuration endpoint when asked', () => {
    const c = synthStack({ cacheClusterMode: true, cacheShards: 3 });
    const p = replicationGroup(c).Properties;
    expect(p.ClusterMode).toBe('enabled');
    expect(p.NumNodeGroups).toBe(3);
    expect(p.ReplicasPerNodeGroup).toBe(1);
    expect(p.NumCacheClusters).toBeUndefined();
    c.template.hasResourceProperties('AWS::ElastiCache::ParameterGroup', {
      Properties: { 'maxmemory-policy': 'noeviction', 'cluster-enabled': 'yes' },
    });
    const env = resourceOf(c, c.stack.functions.kafkaMonitor.function).Properties.Environment.Variables;
    expect(env.REDIS_CLUSTER).toBe('true');
    expect(env.REDIS_HOST['Fn::GetAtt'][1]).toBe('ConfigurationEndPoint.Address');
  });

  it('alarms on the memory of every node of a cluster of many shards, at most 10 metrics an alarm', () => {
    // 6 shards of a primary and a replica: 12 nodes, more than one alarm's metric math may use.
    const c = synthStack({ cacheClusterMode: true, cacheShards: 6 });
    expect(c.stack.cache.nodeIds).toHaveLength(12);
    const alarms = Object.values(c.template.findResources('AWS::CloudWatch::Alarm')).filter((a) =>
      /^Valkey memory above 80%/.test(a.Properties.AlarmDescription),
    );
    expect(alarms).toHaveLength(2);
    const watched: string[] = [];
    for (const a of alarms) {
      const metrics = (a.Properties.Metrics as Cfn[]).filter((m) => m.MetricStat);
      expect(metrics.length).toBeLessThanOrEqual(10);
      for (const m of metrics) {
        expect(m.MetricStat.Metric.MetricName).toBe('DatabaseMemoryUsagePercentage');
        watched.push(m.MetricStat.Metric.Dimensions[0].Value);
      }
      expect(a.Properties.Threshold).toBe(80);
    }
    expect(watched.sort()).toEqual([...c.stack.cache.nodeIds].sort());
    // One alarm, as before, while the nodes fit in one.
    const one = Object.values(s.template.findResources('AWS::CloudWatch::Alarm')).filter((a) =>
      /^Valkey memory above 80%/.test(a.Properties.AlarmDescription),
    );
    expect(one).toHaveLength(1);
  });
});
