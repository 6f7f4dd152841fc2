/**
 * The bill at a volume (cdk/cost-volume.ts) on hand-made templates: Fargate bills allocated task time (one task all
 * month while crawling, more when the pages/s pass what a task sustains), Spot and its on-demand base, broker
 * storage against the retention, NAT at the compressed transfer size, the body bucket, the provisional sink, and the
 * warnings.
 */
import { describe, expect, it } from 'vitest';
import { CPU_MS_PER_PAGE, FETCHED_TRANSFER_RATIO } from '../../cdk/cost-model.ts';
import { priceVolume, SINK_PROVISIONAL } from '../../cdk/cost-volume.ts';
import { HOURS_PER_MONTH, PRICES } from '../../cdk/prices.ts';

// biome-ignore lint/suspicious/noExplicitAny: template JSON has no static shape
type Cfn = Record<string, any>;

interface Shape {
  spot?: boolean;
  onDemandBase?: number;
  publicIp?: boolean;
  minTasks?: number;
  maxTasks?: number;
  nat?: boolean;
  brokers?: number;
  volumeGiB?: number;
  env?: Record<string, string>;
}

/** A template with a crawler service, provisioned MSK (or Serverless without brokers) and the topics resource. */
function template(s: Shape = {}): Cfn {
  const strategy = s.spot
    ? [
        { CapacityProvider: 'FARGATE_SPOT', Weight: 1 },
        ...(s.onDemandBase ? [{ CapacityProvider: 'FARGATE', Base: s.onDemandBase, Weight: 0 }] : []),
      ]
    : undefined;
  const resources: Cfn = {
    Task: {
      Type: 'AWS::ECS::TaskDefinition',
      Properties: {
        Cpu: '1024',
        Memory: '2048',
        ContainerDefinitions: [
          {
            Name: 'crawler',
            Environment: [
              { Name: 'KAFKA_COMPRESSION', Value: 'gzip' },
              ...Object.entries(s.env ?? {}).map(([Name, Value]) => ({ Name, Value })),
            ],
          },
        ],
      },
    },
    Service: {
      Type: 'AWS::ECS::Service',
      Properties: {
        TaskDefinition: { Ref: 'Task' },
        DesiredCount: s.minTasks ?? 0,
        ...(strategy ? { CapacityProviderStrategy: strategy } : { LaunchType: 'FARGATE' }),
        NetworkConfiguration: { AwsvpcConfiguration: { AssignPublicIp: s.publicIp ? 'ENABLED' : 'DISABLED' } },
      },
    },
    Target: {
      Type: 'AWS::ApplicationAutoScaling::ScalableTarget',
      Properties: {
        MinCapacity: s.minTasks ?? 0,
        MaxCapacity: s.maxTasks ?? 10,
        ResourceId: { 'Fn::Join': ['', ['service/', { Ref: 'Cluster' }, '/', { 'Fn::GetAtt': ['Service', 'Name'] }]] },
      },
    },
    Topics: {
      Type: 'Custom::KafkaTopics',
      Properties: {
        Topics: ['demo.incoming', 'demo.crawled_firehose'],
        Partitions: 3,
        TopicPartitions: { 'demo.crawled_firehose': 7 },
        RetentionHours: 168,
      },
    },
    Bodies: {
      Type: 'AWS::S3::Bucket',
      Properties: { LifecycleConfiguration: { Rules: [{ ExpirationInDays: 30, Status: 'Enabled' }] } },
    },
  };
  if (s.brokers)
    resources.Kafka = {
      Type: 'AWS::MSK::Cluster',
      Properties: {
        NumberOfBrokerNodes: s.brokers,
        EnhancedMonitoring: 'DEFAULT',
        BrokerNodeGroupInfo: {
          InstanceType: 'kafka.t3.small',
          StorageInfo: { EBSStorageInfo: { VolumeSize: s.volumeGiB ?? 10 } },
        },
      },
    };
  else resources.Kafka = { Type: 'AWS::MSK::ServerlessCluster', Properties: {} };
  if (s.nat) resources.Nat = { Type: 'AWS::EC2::NatGateway', Properties: {} };
  return { Resources: resources };
}

const line = (r: ReturnType<typeof priceVolume>, pattern: RegExp) => r.at_volume.find((l) => pattern.test(l.what));
const ON_DEMAND_HOUR = PRICES.fargateArmVcpuHour.usd + 2 * PRICES.fargateArmGbHour.usd;
const SPOT_HOUR = PRICES.fargateSpotArmVcpuHour.usd + 2 * PRICES.fargateSpotArmGbHour.usd;

describe('the bill at a volume', () => {
  it('keeps one crawler task all month at a small volume: allocated time, not CPU time', () => {
    const r = priceVolume(template(), { pagesPerMonth: 1e6 });
    const tasks = line(r, /crawler tasks on Fargate,/);
    expect(tasks?.units_per_month).toBe(HOURS_PER_MONTH);
    expect(tasks?.usd_per_month).toBeCloseTo(HOURS_PER_MONTH * ON_DEMAND_HOUR, 2);
    // The CPU alone would be a fraction of an hour.
    expect((1e6 * CPU_MS_PER_PAGE) / 3.6e6).toBeLessThan(2);
    expect(r.monthly_usd).toBeCloseTo(r.idle_usd_per_month + r.at_volume.reduce((n, l) => n + l.usd_per_month, 0), 1);
  });

  it('adds tasks when the month needs more pages a second than a task sustains at the fleet load', () => {
    // 1e9 pages in 730 h is 380 pages/s; a 1-vCPU task sustains 1000 / 4.36 = 229, run at 60 %: 3 tasks.
    const r = priceVolume(template(), { pagesPerMonth: 1e9 });
    expect(line(r, /crawler tasks on Fargate,/)?.units_per_month).toBe(3 * HOURS_PER_MONTH);
    expect(line(r, /crawler tasks/)?.what).toMatch(/3 task\(s\) for 730 h at most 229 pages\/s each/);
    // Capped by maxTasks, with a warning.
    const capped = priceVolume(template({ maxTasks: 2 }), { pagesPerMonth: 1e9 });
    expect(line(capped, /crawler tasks/)?.units_per_month).toBe(2 * HOURS_PER_MONTH);
    expect(capped.warnings.join()).toMatch(/maxTasks is 2/);
  });

  it('prices Spot tasks at the Spot rate, the on-demand base at the on-demand rate, and minTasks only once', () => {
    const spot = priceVolume(template({ spot: true, publicIp: true }), { pagesPerMonth: 1e6 });
    expect(line(spot, /Fargate Spot/)?.usd_per_month).toBeCloseTo(HOURS_PER_MONTH * SPOT_HOUR, 2);
    expect(line(spot, /crawler tasks on Fargate,/)).toBeUndefined();
    expect(line(spot, /public IPv4/)?.units_per_month).toBe(HOURS_PER_MONTH);
    const based = priceVolume(template({ spot: true, onDemandBase: 1 }), { pagesPerMonth: 1e9 });
    expect(line(based, /crawler tasks on Fargate,/)?.units_per_month).toBe(HOURS_PER_MONTH);
    expect(line(based, /Fargate Spot/)?.units_per_month).toBe(2 * HOURS_PER_MONTH);
    // A task always on is in the idle floor already.
    const floor = priceVolume(template({ minTasks: 1 }), { pagesPerMonth: 1e6 });
    expect(line(floor, /crawler tasks/)).toBeUndefined();
    expect(floor.floor.resources.some((x) => /1 Fargate task\(s\) always on/.test(x.what))).toBe(true);
  });

  it('warns when the brokers cannot hold the retention at the volume, and not when they can', () => {
    // 100M gzip'd 28 KB pages a month, 168 h, replication factor 2: about 240 GiB a broker at 70 % full.
    const short = priceVolume(template({ brokers: 2, volumeGiB: 10 }), { pagesPerMonth: 1e8 });
    expect(short.warnings.join()).toMatch(/broker storage is short: 2 x 10 GiB.*need 2\d\d GiB a broker/);
    expect(priceVolume(template({ brokers: 2, volumeGiB: 300 }), { pagesPerMonth: 1e8 }).warnings).toEqual([]);
    expect(priceVolume(template({ brokers: 2, volumeGiB: 10 }), { pagesPerMonth: 1e6 }).warnings).toEqual([]);
  });

  it('bills MSK Serverless bytes in, out per reader and stored over the retention', () => {
    const r = priceVolume(template(), { pagesPerMonth: 1e8, consumers: 2 });
    const gb = (1e8 * 28 * 1024) / 3.5 / 1e9;
    expect(line(r, /bytes in/)?.units_per_month).toBeCloseTo(gb, 0);
    expect(line(r, /bytes out \(2 reader/)?.units_per_month).toBeCloseTo(2 * gb, 0);
    expect(line(r, /storage \(168 h/)?.units_per_month).toBeCloseTo((gb * 168) / 730, 0);
  });

  it('charges NAT the compressed transfer size, only where there is NAT', () => {
    const r = priceVolume(template({ nat: true }), { pagesPerMonth: 1e8 });
    expect(FETCHED_TRANSFER_RATIO).toBeGreaterThan(2);
    expect(line(r, /NAT gateway bytes/)?.units_per_month).toBeCloseTo(
      (1e8 * 28 * 1024) / FETCHED_TRANSFER_RATIO / 1e9,
      0,
    );
    expect(line(priceVolume(template(), { pagesPerMonth: 1e8 }), /NAT/)).toBeUndefined();
  });

  it('prices large bodies and the provisional archive sink in S3, and no sink when asked', () => {
    const r = priceVolume(template(), { pagesPerMonth: 1e8 });
    expect(line(r, /S3 PUT of bodies over 1000000 bytes/)?.units_per_month).toBe(500);
    const warc = line(r, /archive sink \(warc, provisional\): the month's output/);
    expect(warc?.units_per_month).toBeCloseTo((1e8 * (SINK_PROVISIONAL.bytesPerPage.warc as number)) / 1e9, 0);
    const none = priceVolume(template(), { pagesPerMonth: 1e8, sink: 'none' });
    expect(line(none, /archive sink/)).toBeUndefined();
    expect(none.monthly_usd).toBeLessThan(r.monthly_usd);
  });

  it('says when politeness cannot let the month through: domains x QUEUE_HITS per QUEUE_WINDOW', () => {
    // 10 fetches a minute a domain: 1,000 domains give 166.7 pages/s, 100M pages in 730 h need 38.
    expect(priceVolume(template(), { pagesPerMonth: 1e8, domains: 1000 }).warnings).toEqual([]);
    const few = priceVolume(template(), { pagesPerMonth: 1e8, domains: 100 });
    expect(few.warnings.join()).toMatch(
      /politeness: 100 domains at 10 fetches per 60 s each allow 16.7 pages a second/,
    );
    const hits = priceVolume(template({ env: { QUEUE_HITS: '60' } }), { pagesPerMonth: 1e8, domains: 100 });
    expect(hits.warnings).toEqual([]);
  });
});
