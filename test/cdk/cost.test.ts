/**
 * `npm run cost` (cdk/cost.ts, cdk/cost-model.ts): every resource type of every stack variant is priced or listed
 * free in cdk/prices.ts, so a new billable resource fails here until the table prices it; the profiles' floors and the
 * per-page cost follow the template (compression, NAT, MSK flavour).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cacheLine, parseContext } from '../../cdk/cost.ts';
import { priceTemplate, UnpricedResourceError, unpricedTypes } from '../../cdk/cost-model.ts';
import { ASSUMPTIONS, COMPRESSION_RATIO, hourlyPrice, MSK_BROKER_HOUR, VALKEY_NODE_HOUR } from '../../cdk/prices.ts';
import { REPO_ROOT } from '../../cdk/repo-root.ts';
import { type Cfn, synthStack } from './synth.ts';

const VARIANTS: Record<string, Record<string, unknown>> = {
  standard: {},
  small: { profile: 'small' },
  'small with the URL Frontier and provisioned pollers': {
    profile: 'small',
    urlFrontier: true,
    eventSourceMode: 'provisioned',
  },
  'provisioned MSK, cluster-mode cache, TLS URL Frontier, service-linked roles, prebuilt image': {
    kafka: 'provisioned',
    cacheClusterMode: true,
    cacheShards: 2,
    alarmEmail: 'ops@example.com',
    urlFrontierCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/0f0e2f2a-1111-2222-3333-444455556666',
    createEcsServiceLinkedRole: true,
    createAutoScalingServiceLinkedRole: true,
    crawlerImage: '123456789012.dkr.ecr.us-east-1.amazonaws.com/crawler:1',
  },
};

/** Cluster-mode caches of the shard counts docs/cost.md prices, on both profiles. */
const SHARDS = [1, 3, 6] as const;
for (const profile of ['standard', 'small'])
  for (const shards of SHARDS)
    VARIANTS[`${profile}, cluster mode, ${shards} shard(s)`] = {
      ...(profile === 'small' ? { profile } : {}),
      cacheClusterMode: 'true',
      cacheShards: String(shards),
    };

const synthesized = Object.fromEntries(
  Object.entries(VARIANTS).map(([name, context]) => [name, synthStack(context).template.toJSON()]),
);
/** The template of a variant (synthesized once per file). */
function tpl(name: string): Cfn {
  const t = synthesized[name];
  if (!t) throw new Error(`no variant ${name}`);
  return t;
}

describe('npm run cost', () => {
  for (const name of Object.keys(VARIANTS)) {
    it(`prices every resource type of the stack: ${name}`, () => {
      expect(unpricedTypes(tpl(name))).toEqual([]);
    });
  }

  it('fails on a billable resource type the table does not price', () => {
    const t = structuredClone(tpl('standard'));
    t.Resources.Extra = { Type: 'AWS::RDS::DBInstance', Properties: {} };
    expect(unpricedTypes(t)).toEqual(['AWS::RDS::DBInstance']);
    expect(() => priceTemplate(t)).toThrow(UnpricedResourceError);
    expect(() => priceTemplate(t)).toThrow(/AWS::RDS::DBInstance/);
  });

  it('prices the standard stack at its MSK Serverless, poller, NAT and cache floor', () => {
    const r = priceTemplate(tpl('standard'));
    const of = (type: string) =>
      r.resources.filter((x) => x.type === type).reduce((n, x) => n + x.idle_usd_per_month, 0);
    expect(of('AWS::MSK::ServerlessCluster')).toBeCloseTo(0.75 * 730, 2);
    expect(of('AWS::Lambda::EventSourceMapping')).toBeCloseTo(0.185 * 730, 2);
    expect(of('AWS::EC2::NatGateway')).toBeCloseTo(2 * 0.045 * 730, 2);
    expect(of('AWS::ElastiCache::ReplicationGroup')).toBeCloseTo(2 * 0.0256 * 730, 2);
    expect(r.idle_usd_per_month).toBeCloseTo(
      r.resources.reduce((n, x) => n + x.idle_usd_per_month, 0),
      1,
    );
  });

  it('prices the small profile without MSK Serverless, pollers or NAT, at a fraction of the standard floor', () => {
    const small = priceTemplate(tpl('small'));
    const standard = priceTemplate(tpl('standard'));
    const types = new Set(small.resources.filter((x) => x.idle_usd_per_month > 0).map((x) => x.type));
    for (const type of ['AWS::MSK::ServerlessCluster', 'AWS::EC2::NatGateway', 'AWS::Lambda::EventSourceMapping'])
      expect(types.has(type), type).toBe(false);
    expect(small.idle_usd_per_month).toBeLessThan(standard.idle_usd_per_month / 8);
    // Brokers, their storage, one cache node, three endpoints in one zone.
    const msk = small.resources.filter((x) => x.type === 'AWS::MSK::Cluster');
    expect(msk.map((x) => x.idle_usd_per_month)).toEqual([66.58, 2]);
    // Neither a Secrets Manager endpoint (the functions' token is in their environment) nor a dashboard.
    expect(small.resources.some((x) => /secretsmanager/.test(x.what))).toBe(false);
    expect(types.has('AWS::CloudWatch::Dashboard')).toBe(false);
  });

  it('prices the small profile at $100 a month or less: npm run cost -- --profile small --json', () => {
    const out = execFileSync(process.execPath, [join(REPO_ROOT, 'cdk/cost.ts'), '--profile', 'small', '--json'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      env: { ...process.env, CDK_DEFAULT_REGION: 'us-east-1' },
    });
    const report = JSON.parse(out) as { idle_usd_per_month: number; usd_per_million_pages: number };
    expect(report.idle_usd_per_month).toBeGreaterThan(50);
    expect(report.idle_usd_per_month).toBeLessThanOrEqual(100);
    expect(report.idle_usd_per_month).toBeCloseTo(priceTemplate(tpl('small')).idle_usd_per_month, 1);
  });

  it("README's cost table and docs/cost.md carry what npm run cost prints for both profiles today", () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const costDoc = readFileSync(join(REPO_ROOT, 'docs/cost.md'), 'utf8');
    for (const [profile, row] of [
      ['standard', '`standard` (the default)'],
      ['small', '`small` (`-c profile=small`)'],
    ] as const) {
      const r = priceTemplate(tpl(profile));
      const usd = (n: number) =>
        `$${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
      expect(readme, profile).toContain(`| ${row} | ${usd(r.idle_usd_per_month)} | ${usd(r.usd_per_million_pages)} |`);
      expect(costDoc, profile).toContain(
        `**profile ${profile}**: idle floor **${usd(r.idle_usd_per_month)} a month**; a million pages add **${usd(r.usd_per_million_pages)}**`,
      );
    }
  });

  it('prices a cluster-mode cache as node type x shards x (1 + replicas) x 730 h, with its partitions', () => {
    const cacheUsd = (r: ReturnType<typeof priceTemplate>) =>
      r.resources
        .filter((x) => x.type === 'AWS::ElastiCache::ReplicationGroup')
        .reduce((n, x) => n + x.idle_usd_per_month, 0);
    for (const shards of SHARDS) {
      const standard = priceTemplate(tpl(`standard, cluster mode, ${shards} shard(s)`));
      // A primary and a replica per shard, cache.t4g.small at $0.0256 an hour.
      expect(cacheUsd(standard), `standard ${shards}`).toBeCloseTo(shards * 2 * 0.0256 * 730, 2);
      expect(standard.cache).toEqual({
        node_type: 'cache.t4g.small',
        cluster_mode: true,
        shards,
        nodes_per_shard: 2,
        frontier_partitions: shards,
      });
      const small = priceTemplate(tpl(`small, cluster mode, ${shards} shard(s)`));
      // No replica (cacheReplicas=0), cache.t4g.micro at $0.0128 an hour.
      expect(cacheUsd(small), `small ${shards}`).toBeCloseTo(shards * 0.0128 * 730, 2);
      expect(small.cache?.nodes_per_shard).toBe(1);
      expect(small.cache?.frontier_partitions).toBe(shards);
    }
    // One shard in cluster mode costs what the same nodes cost without it.
    expect(cacheUsd(priceTemplate(tpl('standard, cluster mode, 1 shard(s)')))).toBe(
      cacheUsd(priceTemplate(tpl('standard'))),
    );
    expect(priceTemplate(tpl('standard')).cache).toEqual({
      node_type: 'cache.t4g.small',
      cluster_mode: false,
      shards: 1,
      nodes_per_shard: 2,
      frontier_partitions: 1,
    });
    // Every node's memory is alarmed on ($0.10 a metric): the floor grows by the nodes and their alarm metrics.
    const floor = (name: string) => priceTemplate(tpl(name)).idle_usd_per_month;
    expect(floor('standard, cluster mode, 6 shard(s)') - floor('standard, cluster mode, 3 shard(s)')).toBeCloseTo(
      6 * (0.0256 * 730 + 0.1),
      1,
    );
  });

  it('prices a size the table lacks from its family (cache.r7g.xlarge, kafka.m7g.4xlarge); an unknown family fails', () => {
    expect(hourlyPrice(VALKEY_NODE_HOUR, 'cache.r7g.large')).toEqual({ usd: VALKEY_NODE_HOUR['cache.r7g.large'] });
    const large = VALKEY_NODE_HOUR['cache.r7g.large'] as number;
    expect(hourlyPrice(VALKEY_NODE_HOUR, 'cache.r7g.xlarge')).toEqual({
      usd: 2 * large,
      derivedFrom: 'cache.r7g.large',
    });
    expect(hourlyPrice(VALKEY_NODE_HOUR, 'cache.r7g.12xlarge')?.usd).toBeCloseTo(24 * large, 4);
    expect(hourlyPrice(MSK_BROKER_HOUR, 'kafka.m7g.4xlarge')?.usd).toBeCloseTo(
      8 * (MSK_BROKER_HOUR['kafka.m7g.large'] as number),
      4,
    );
    expect(hourlyPrice(VALKEY_NODE_HOUR, 'cache.t4g.micro')?.usd).toBe(VALKEY_NODE_HOUR['cache.t4g.micro']);
    expect(hourlyPrice(VALKEY_NODE_HOUR, 'cache.x9q.large')).toBeUndefined();
    expect(hourlyPrice(VALKEY_NODE_HOUR, 'cache.r7g.huge')).toBeUndefined();
    // Through the stack: the node line says where its price came from; an unknown family is unpriced.
    const lines = priceTemplate(synthStack({ cacheNodeType: 'cache.r7g.xlarge' }).template.toJSON()).resources.filter(
      (x) => x.type === 'AWS::ElastiCache::ReplicationGroup',
    );
    expect(lines.map((x) => x.what)).toEqual(['2 x cache.r7g.xlarge node-hours (priced from cache.r7g.large by size)']);
    expect(lines[0]?.idle_usd_per_month).toBeCloseTo(2 * 2 * large * 730, 1);
    expect(() => priceTemplate(synthStack({ cacheNodeType: 'cache.x9q.large' }).template.toJSON())).toThrow(
      UnpricedResourceError,
    );
  });

  it('shows the shards and partitions: npm run cost -- -c cacheClusterMode=true -c cacheShards=3 -c frontierPartitions=6', () => {
    const out = execFileSync(
      process.execPath,
      [
        join(REPO_ROOT, 'cdk/cost.ts'),
        ...['-c', 'cacheClusterMode=true', '-c', 'cacheShards=3', '-c', 'frontierPartitions=6'],
      ],
      { cwd: REPO_ROOT, encoding: 'utf8', env: { ...process.env, CDK_DEFAULT_REGION: 'us-east-1' } },
    );
    const lines = out.split('\n');
    expect(lines[1]).toBe(
      'cache: cluster mode, 3 shard(s) x 2 node(s) of cache.t4g.small; frontier partitions (FRONTIER_PARTITIONS): 6, 2 per shard',
    );
    expect(lines.find((l) => l.startsWith('6 x cache.t4g.small node-hours (3 shard(s) x 2 node(s))'))).toMatch(
      /\$0\.0256\/node-hour +\$112\.13$/,
    );
    expect(cacheLine(priceTemplate(tpl('small')))).toBe(
      'cache: cluster mode off, 1 node(s) of cache.t4g.micro (a primary and 0 replica(s)); frontier partitions (FRONTIER_PARTITIONS): 1',
    );
  });

  it("docs/cost.md's shard table carries what npm run cost prints for 1, 3 and 6 shards on both profiles", () => {
    const costDoc = readFileSync(join(REPO_ROOT, 'docs/cost.md'), 'utf8');
    const usd = (n: number) => `$${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
    for (const profile of ['standard', 'small'])
      for (const shards of SHARDS) {
        const r = priceTemplate(tpl(`${profile}, cluster mode, ${shards} shard(s)`));
        const c = r.cache;
        if (!c) throw new Error('no cache');
        const cache = r.resources.find((x) => x.type === 'AWS::ElastiCache::ReplicationGroup')?.idle_usd_per_month ?? 0;
        const nodes = `${c.shards * c.nodes_per_shard} x ${c.node_type}`;
        expect(costDoc).toContain(
          `| ${profile} | ${shards} | ${nodes} | ${c.frontier_partitions} | ${usd(cache)} | ${usd(r.idle_usd_per_month)} |`,
        );
      }
  });

  it('counts the metrics each scheduled function publishes every run as its handler does', () => {
    for (const name of ['expire', 'stats', 'reclaim']) {
      const source = readFileSync(join(REPO_ROOT, 'functions', name, 'handler.ts'), 'utf8');
      // Per-run metrics; per-spider ones (singleMetric) are published only with a backlog, so not at idle.
      const names = new Set([...source.matchAll(/\bmetrics\.addMetric\('(\w+)'/g)].map((m) => m[1]));
      expect(names.size, name).toBe(ASSUMPTIONS.idleMetrics[name]);
    }
  });

  it("prices a million pages from the stack's compression, and the options change it", () => {
    const gzip = priceTemplate(tpl('standard'));
    expect(gzip.compression).toBe('gzip');
    const none = priceTemplate(tpl('standard'), { compression: 'none' });
    const bytesIn = (r: typeof gzip) =>
      r.per_million_pages.find((c) => c.component === 'MSK Serverless bytes in')?.usd_per_million_pages ?? 0;
    // 28 KB pages: 28.7 GB a million uncompressed, $0.10 a GB in.
    expect(bytesIn(none)).toBeCloseTo(2.867, 2);
    expect(bytesIn(gzip)).toBeCloseTo(2.867 / (COMPRESSION_RATIO.gzip as number), 2);
    expect(none.usd_per_million_pages).toBeGreaterThan(gzip.usd_per_million_pages);
    const bigger = priceTemplate(tpl('standard'), { pageKb: 56 });
    expect(bytesIn(bigger)).toBeCloseTo(2 * bytesIn(gzip), 2);
    const longer = priceTemplate(tpl('standard'), { retentionHours: 336 });
    expect(longer.usd_per_million_pages).toBeGreaterThan(gzip.usd_per_million_pages);
    // No NAT and no Serverless bytes on the small profile.
    const small = priceTemplate(tpl('small'));
    expect(small.per_million_pages.some((c) => /NAT|Serverless/.test(c.component))).toBe(false);
    expect(small.usd_per_million_pages).toBeLessThan(gzip.usd_per_million_pages);
  });

  it('reads -c pairs as the CDK CLI does', () => {
    expect(parseContext(['profile=small', 'runtimeEnv={"A":"b=c"}'])).toEqual({
      profile: 'small',
      runtimeEnv: '{"A":"b=c"}',
    });
    expect(() => parseContext(['novalue'])).toThrow(/key=value/);
  });
});
