/**
 * The stack at a volume (issue 47): broker-disk alarms, broker storage sized from retentionHours and pagesPerMonth
 * (or a synth warning), crawlers on Fargate Spot in the small profile with a stop timeout inside Spot's two-minute
 * warning, the warnings synthesis gives (alarms that notify nobody, us-east-1 zones), and `npm run cost --
 * --pages-per-month` against the issue's targets.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { stopTimeoutSeconds } from '../../cdk/constructs/crawler-service.ts';
import { REPO_ROOT } from '../../cdk/repo-root.ts';
import { type Cfn, resourceOf, type Synthesized, synthStack } from './synth.ts';

const alarms = (s: Synthesized, pattern: RegExp) =>
  Object.values(s.template.findResources('AWS::CloudWatch::Alarm')).filter((a) =>
    pattern.test(String(a.Properties.AlarmDescription)),
  );
const volume = (s: Synthesized) =>
  Object.values(s.template.findResources('AWS::MSK::Cluster'))[0]?.Properties.BrokerNodeGroupInfo.StorageInfo
    .EBSStorageInfo.VolumeSize;
const warnings = (s: Synthesized) =>
  Annotations.fromStack(s.stack)
    .findWarning('*', Match.anyValue())
    .map((w) => String(w.entry.data));

describe('broker disks', () => {
  it('are alarmed on in the small profile: the fullest of its two brokers, over 80 %', () => {
    const s = synthStack({ profile: 'small' });
    const [alarm] = alarms(s, /data disk/);
    const p = alarm?.Properties as Cfn;
    expect(p.Threshold).toBe(80);
    const metrics = p.Metrics.filter((m: Cfn) => m.MetricStat);
    expect(metrics).toHaveLength(2);
    for (const m of metrics) expect(m.MetricStat.Metric.MetricName).toBe('KafkaDataLogsDiskUsed');
    expect(
      metrics.map((m: Cfn) => m.MetricStat.Metric.Dimensions.find((d: Cfn) => d.Name === 'Broker ID').Value),
    ).toEqual(['1', '2']);
    expect(p.AlarmActions).toHaveLength(1);
  });

  it('take one alarm per 10 brokers (CloudWatch metric math limit), and none on MSK Serverless', () => {
    const s = synthStack({ kafka: 'provisioned', kafkaBrokers: 12 });
    const found = alarms(s, /data disk/);
    expect(found).toHaveLength(2);
    expect(found.map((a) => a.Properties.Metrics.filter((m: Cfn) => m.MetricStat).length).sort()).toEqual([10, 2]);
    expect(alarms(synthStack(), /data disk/)).toHaveLength(0);
  });
});

describe('broker storage', () => {
  it('is sized from pagesPerMonth and retentionHours unless kafkaVolumeGiB is given', () => {
    expect(volume(synthStack({ profile: 'small' }))).toBe(10);
    // 100M gzip'd 28 KB pages a month, 168 h, two replicas over two brokers, 70 % full.
    const sized = volume(synthStack({ profile: 'small', pagesPerMonth: 100_000_000 }));
    expect(sized).toBeGreaterThan(200);
    expect(sized).toBeLessThan(300);
    expect(volume(synthStack({ profile: 'small', pagesPerMonth: 100_000_000, retentionHours: 24 }))).toBeLessThan(
      sized / 6,
    );
    // Never below the profile's volume.
    expect(volume(synthStack({ profile: 'small', pagesPerMonth: 1000 }))).toBe(10);
  });

  it('says at synth what it holds without a volume, and when a volume given is too small', () => {
    expect(warnings(synthStack({ profile: 'small' })).join()).toMatch(
      /broker storage: 2 x 10 GiB holds about \d\.\dM pages a month.*-c pagesPerMonth/,
    );
    const short = synthStack({ profile: 'small', pagesPerMonth: 100_000_000, kafkaVolumeGiB: 10 });
    expect(volume(short)).toBe(10);
    expect(warnings(short).join()).toMatch(/kafkaVolumeGiB=10 holds about .* not pagesPerMonth=100M.*give \d+ GiB/);
    expect(warnings(synthStack({ profile: 'small', pagesPerMonth: 1_000_000 })).join()).not.toMatch(/broker storage/);
  });

  it('on MSK Serverless, warns when the retention passes 250 GB a firehose partition', () => {
    expect(warnings(synthStack({ pagesPerMonth: 100_000_000 })).join()).not.toMatch(/250 GB/);
    expect(warnings(synthStack({ pagesPerMonth: 2_000_000_000, retentionHours: 720 })).join()).toMatch(
      /more than MSK Serverless's 250 GB a partition/,
    );
  });
});

describe('crawlers on Fargate Spot', () => {
  const service = (s: Synthesized) => resourceOf(s, s.stack.fleet.service).Properties;

  it('by default in the small profile, through the cluster capacity providers; on-demand in the standard one', () => {
    const small = synthStack({ profile: 'small' });
    expect(service(small).CapacityProviderStrategy).toEqual([{ CapacityProvider: 'FARGATE_SPOT', Weight: 1 }]);
    expect(service(small).LaunchType).toBeUndefined();
    const assoc = Object.values(small.template.findResources('AWS::ECS::ClusterCapacityProviderAssociations'));
    expect(assoc[0]?.Properties.CapacityProviders).toEqual(expect.arrayContaining(['FARGATE', 'FARGATE_SPOT']));
    const standard = synthStack();
    expect(service(standard).CapacityProviderStrategy).toBeUndefined();
    expect(service(standard).LaunchType).toBe('FARGATE');
  });

  it('with an on-demand base when asked, and by choice in the standard profile', () => {
    const s = synthStack({ crawlerCapacity: 'spot', crawlerOnDemandBase: 1 });
    expect(service(s).CapacityProviderStrategy).toEqual([
      { CapacityProvider: 'FARGATE_SPOT', Weight: 1 },
      { CapacityProvider: 'FARGATE', Base: 1, Weight: 0 },
    ]);
    expect(service(synthStack({ profile: 'small', crawlerCapacity: 'on-demand' })).LaunchType).toBe('FARGATE');
  });

  it("drains within Spot's two-minute warning: SIGTERM, then SIGKILL after a stop timeout of at most 120 s", () => {
    const s = synthStack({ profile: 'small' });
    const container = resourceOf(s, s.stack.fleet.taskDefinition).Properties.ContainerDefinitions[0];
    const deadline = Number(container.Environment.find((e: Cfn) => e.Name === 'SHUTDOWN_DEADLINE_MS').Value);
    expect(container.StopTimeout).toBe(stopTimeoutSeconds(deadline));
    expect(container.StopTimeout * 1000).toBeGreaterThan(deadline);
    // The largest deadline the settings accept still fits.
    expect(stopTimeoutSeconds(100_000)).toBeLessThanOrEqual(120);
  });
});

describe('synth warnings', () => {
  it('say when the alarms notify nobody, and not with alarmEmail', () => {
    expect(warnings(synthStack()).join()).toMatch(/alarms notify an SNS topic nobody is subscribed to/);
    expect(warnings(synthStack({ alarmEmail: 'ops@example.com' })).join()).not.toMatch(/nobody/);
  });

  it('ask for pinned zones in us-east-1, naming the zone ID to avoid, and not once they are pinned', () => {
    expect(warnings(synthStack()).join()).toMatch(/us-east-1: pin the VPC's zones.*use1-az3/);
    expect(warnings(synthStack({ availabilityZones: 'us-east-1a,us-east-1b' })).join()).not.toMatch(/use1-az3/);
  });
});

describe('npm run cost -- --pages-per-month', () => {
  const cost = (...args: string[]) =>
    JSON.parse(
      execFileSync(process.execPath, [join(REPO_ROOT, 'cdk/cost.ts'), ...args, '--json'], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        env: { ...process.env, CDK_DEFAULT_REGION: 'us-east-1' },
      }),
    ) as {
      monthly_usd: number;
      idle_usd_per_month: number;
      usd_per_million_pages_beyond_floor: number;
      at_volume: { what: string; unit: string; units_per_month: number; usd_per_month: number }[];
      warnings: string[];
    };

  it('prices the small profile at 100M pages a month, storage and alarms included, at $250 or less', () => {
    const r = cost('--profile', 'small', '--pages-per-month', '100000000');
    expect(Object.keys(r)).toEqual(expect.arrayContaining(['monthly_usd', 'at_volume', 'warnings']));
    expect(r.monthly_usd).toBeLessThanOrEqual(250);
    // The brokers' storage was sized for the volume: no storage warning, and the floor grew past the 10 GiB one.
    expect(r.warnings).toEqual([]);
    expect(r.idle_usd_per_month).toBeGreaterThan(120);
    const spot = r.at_volume.find((l) => /Fargate Spot/.test(l.what));
    expect(spot?.units_per_month).toBe(730);
    for (const l of r.at_volume)
      expect(Object.keys(l).sort()).toEqual(['unit', 'units_per_month', 'usd_per_month', 'what']);
    // The stack's sink (jsonl by default) is priced, and read the firehose as a reader of its own.
    expect(r.at_volume.some((l) => /^archive sink \(jsonl\): S3 PUT/.test(l.what))).toBe(true);
    expect(r.at_volume.find((l) => /cross-zone/.test(l.what))?.what).toMatch(
      /1 reader\(s\) of the firehose: the archive sink/,
    );
  });

  it('prices the sink in the format -c sinkFormats (or --sink) deploys, and none without it', () => {
    const warc = cost('--profile', 'small', '--pages-per-month', '1000000', '--sink', 'warc');
    expect(warc.at_volume.some((l) => /^archive sink \(warc\): S3 LIST/.test(l.what))).toBe(true);
    const none = cost('--profile', 'small', '--pages-per-month', '1000000', '-c', 'sinkFormats=none');
    expect(none.at_volume.some((l) => /archive sink/.test(l.what))).toBe(false);
    expect(none.at_volume.find((l) => /cross-zone/.test(l.what))?.what).toMatch(/0 reader\(s\)/);
    expect(none.idle_usd_per_month).toBeLessThanOrEqual(warc.idle_usd_per_month);
  });

  it('passes the stack warning through when -c pins a volume too small', () => {
    const r = cost('--profile', 'small', '--pages-per-month', '100000000', '-c', 'kafkaVolumeGiB=10');
    expect(r.warnings.join()).toMatch(/broker storage/);
  });
});
