/**
 * The bill at a volume (cdk/cost-volume.ts) on hand-made templates: Fargate bills allocated task time (one task all
 * month while crawling, more when the pages/s pass what a task sustains), Spot and its on-demand base, broker
 * storage against the retention, NAT at the compressed transfer size, the body bucket, the archive sink as the template
 * deploys it (its formats, its batching window, the outputs bucket's lifecycle; a second reader of the firehose), and
 * the warnings.
 */
import { describe, expect, it } from 'vitest';
import { CPU_MS_PER_PAGE, FETCHED_TRANSFER_RATIO, GZIP_PAGE_RATIO } from '../../cdk/cost-model.ts';
import { SINK_MEASURED } from '../../cdk/cost-sink.ts';
import { priceVolume } from '../../cdk/cost-volume.ts';
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
  /** SINK_FORMATS of a sink function; none without. */
  sink?: string;
  /** The outputs bucket's ArchiveAging rule (IA and Glacier IR days); none: the sink writes to a bucket of yours. */
  lifecycle?: [number, number];
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
  if (s.sink) {
    resources.Sink = {
      Type: 'AWS::Lambda::Function',
      Properties: { MemorySize: 1024, Environment: { Variables: { SINK_FORMATS: s.sink } } },
    };
    resources.SinkSource = {
      Type: 'AWS::Lambda::EventSourceMapping',
      Properties: { FunctionName: { Ref: 'Sink' }, MaximumBatchingWindowInSeconds: 60 },
    };
  }
  if (s.lifecycle)
    resources.Outputs = {
      Type: 'AWS::S3::Bucket',
      Properties: {
        LifecycleConfiguration: {
          Rules: [
            {
              Id: 'ArchiveAging',
              Status: 'Enabled',
              Transitions: [
                { StorageClass: 'STANDARD_IA', TransitionInDays: s.lifecycle[0] },
                { StorageClass: 'GLACIER_IR', TransitionInDays: s.lifecycle[1] },
              ],
            },
          ],
        },
      },
    };
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

  it('prices large bodies in the body bucket', () => {
    const r = priceVolume(template(), { pagesPerMonth: 1e8 });
    expect(line(r, /S3 PUT of bodies over 1000000 bytes/)?.units_per_month).toBe(500);
    expect(line(r, /S3 storage of those bodies \(30 days kept\)/)?.units_per_month).toBeGreaterThan(500);
  });

  it('prices the sink the template deploys, in its format, as a second reader of the firehose', () => {
    const gb = (1e8 * 28 * 1024) / 3.5 / 1e9;
    const none = priceVolume(template(), { pagesPerMonth: 1e8 });
    expect(line(none, /archive sink/)).toBeUndefined();
    expect(line(none, /bytes out/)).toBeUndefined();
    const jsonl = priceVolume(template({ sink: 'jsonl', lifecycle: [30, 90] }), { pagesPerMonth: 1e8 });
    expect(line(jsonl, /bytes out \(1 reader\(s\) of the firehose: the archive sink\)/)?.units_per_month).toBeCloseTo(
      gb,
      0,
    );
    const yours = priceVolume(template({ sink: 'jsonl' }), { pagesPerMonth: 1e8, consumers: 2 });
    expect(line(yours, /bytes out \(3 reader\(s\).*and 2 of yours/)?.units_per_month).toBeCloseTo(3 * gb, 0);
    // JSONL: the page as it gzips alone; one PUT a batch of what a 6 MB event holds (base64: 4 bytes for 3).
    const perBatch = Math.floor((6 * 2 ** 20) / ((28 * 1024 * 4) / 3));
    expect(line(jsonl, /archive sink \(jsonl\): the month's output/)?.units_per_month).toBeCloseTo(
      (1e8 * 28 * 1024) / GZIP_PAGE_RATIO / 1e9,
      0,
    );
    expect(line(jsonl, /archive sink \(jsonl\): S3 PUT, 1 a batch of ~164 pages/)?.units_per_month).toBeCloseTo(
      1e8 / perBatch / 1000,
      1,
    );
    expect(line(jsonl, /Lambda time/)?.units_per_month).toBe(
      (1e8 * (SINK_MEASURED.lambdaMsPerPage.jsonl as number)) / 1000,
    );
    expect(line(jsonl, /LIST|GET/)).toBeUndefined();
    expect(jsonl.monthly_usd).toBeGreaterThan(none.monthly_usd);
  });

  it('prices WARC at the measured bytes scaled to the page, with the large bodies it reads and stores', () => {
    const warc = priceVolume(template({ sink: 'warc' }), { pagesPerMonth: 1e8 });
    const stored = line(warc, /archive sink \(warc\): the month's output/)?.units_per_month as number;
    const measured = (1e8 * SINK_MEASURED.warcBytes * ((28 * 1024) / SINK_MEASURED.messageBytes)) / 1e9;
    expect(stored).toBeGreaterThan(measured);
    expect(stored).toBeLessThan(measured * 1.3);
    expect(line(warc, /S3 PUT, 2 a batch/)).toBeDefined();
    expect(line(warc, /S3 LIST, 1 a batch/)).toBeDefined();
    expect(line(warc, /S3 GET of large bodies/)?.units_per_month).toBe(500);
    const both = priceVolume(template({ sink: 'warc,jsonl' }), { pagesPerMonth: 1e8 });
    const bothStored = line(both, /archive sink \(warc,jsonl\): the month's output/)?.units_per_month as number;
    // JSON lines beside WARC files carry no body: a few hundred bytes a page more, not a second copy.
    expect(bothStored - stored).toBeGreaterThan(0);
    expect(bothStored - stored).toBeLessThan(stored / 20);
  });

  it('writes smaller batches when the crawl is slower than the batching window fills them', () => {
    // 1M pages in 730 h: 0.38 pages a second, 23 in the 60 s window.
    const slow = priceVolume(template({ sink: 'jsonl' }), { pagesPerMonth: 1e6 });
    expect(line(slow, /S3 PUT, 1 a batch of ~23 pages/)?.units_per_month).toBeCloseTo(
      1e6 / ((1e6 / (730 * 3600)) * 60) / 1000,
      1,
    );
  });

  it("prices earlier months' output in the classes the lifecycle moved them to, Standard without the bucket", () => {
    const r = priceVolume(template({ sink: 'jsonl', lifecycle: [30, 90] }), { pagesPerMonth: 1e8, archiveMonths: 12 });
    const month = line(r, /the month's output/)?.units_per_month as number;
    expect(line(r, /12 earlier month\(s\) held, 2 in Standard-IA/)?.units_per_month).toBeCloseTo(2 * month, 0);
    expect(line(r, /10 in Glacier Instant Retrieval/)?.units_per_month).toBeCloseTo(10 * month, 0);
    expect(line(r, /moved to Standard-IA/)).toBeDefined();
    expect(line(r, /moved to Glacier/)).toBeDefined();
    const yours = priceVolume(template({ sink: 'jsonl' }), { pagesPerMonth: 1e8, archiveMonths: 12 });
    expect(line(yours, /12 in S3 Standard/)?.units_per_month).toBeCloseTo(12 * month, 0);
    expect(line(yours, /Standard-IA|Glacier/)).toBeUndefined();
    const first = priceVolume(template({ sink: 'jsonl', lifecycle: [30, 90] }), { pagesPerMonth: 1e8 });
    expect(line(first, /earlier month/)).toBeUndefined();
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
