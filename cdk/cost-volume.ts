/**
 * The bill at a volume (`npm run cost -- --pages-per-month N`, docs/cost.md): the idle floor of the template
 * (./cost-model.ts) plus what crawling N pages a month adds, line by line, with warnings where the deployment falls
 * short of the volume. Fargate bills the time a task is allocated, not its CPU: the fleet keeps at least one task all
 * month while it crawls, and more when the pages/s the month needs pass what a task sustains.
 */
import { VARIABLES } from '../lib/config/variables.ts';
import {
  type CostOptions,
  type CostReport,
  CPU_MS_PER_PAGE,
  FETCHED_TRANSFER_RATIO,
  GZIP_PAGE_RATIO,
  priceTemplate,
} from './cost-model.ts';
import { type Add, sinkLines, sinkOfTemplate } from './cost-sink.ts';
import { type Cfn, crawlerFleet } from './cost-template.ts';
import {
  BROKER_STORAGE_FILL,
  brokerVolumeGiBNeeded,
  MSK_SERVERLESS_MAX_PARTITION_BYTES,
  messageBytes,
  replicationFactor,
  retainedBytes,
} from './kafka-sizing.ts';
import { HOURS_PER_MONTH, PRICES } from './prices.ts';

/**
 * Share of a crawler task's capacity the fleet runs it at: the fleet scales in when the tasks' summed load fits in
 * fewer at this share each (lib/monitor/fleet-sizing.ts TARGET_LOAD).
 */
const TASK_TARGET_LOAD = 0.6;

/**
 * Median response time of the simulated internet the task throughput is measured on (bench/results/realweb.json
 * `inputs.medianLatencyMs`), seconds: a task's fetch slots bound its pages/s at CRAWLER_CONCURRENCY_MAX over it.
 */
const MEDIAN_RESPONSE_S = 0.3;

/**
 * Pages over KAFKA_MAX_MESSAGE_BYTES, whose bodies go to the body bucket: the simulated internet's big pages
 * (localstack/site/internet.ts: a `bigShare` of 1 % log-uniform between 500 KB and 2 MB, so half of them over 1 MB)
 * and their mean size above 1 MB (log-uniform from 1 to 2 MB: 1 / ln 2 MB).
 */
const LARGE_BODY_SHARE = 0.005;
const LARGE_BODY_BYTES = 2 ** 20 / Math.LN2;

/**
 * CloudWatch Logs bytes a page adds (an estimate): the crawler logs no line per page at INFO, but a warning for each
 * failed fetch (about one page in twenty on the simulated internet, a few hundred bytes each) and the Lambda
 * functions' per-invocation lines.
 */
const LOG_BYTES_PER_PAGE = 50;

export interface VolumeOptions extends CostOptions {
  /** Pages crawled in a month. */
  pagesPerMonth: number;
  /** Hours of the month the fleet crawls (the crawl is polite, so spread over the month). @default 730 */
  crawlHours: number;
  /** Domains the crawl spreads over, for the politeness check (QUEUE_HITS per QUEUE_WINDOW each). @default none */
  domains?: number;
  /**
   * Earlier months of the sink's output at this volume that the archive already holds, priced in the storage classes
   * the outputs bucket's lifecycle has moved them to. @default 0 (the first month of crawling)
   */
  archiveMonths: number;
}

export const DEFAULT_VOLUME: Omit<VolumeOptions, keyof CostOptions | 'pagesPerMonth'> = {
  crawlHours: HOURS_PER_MONTH,
  archiveMonths: 0,
};

/** One line of the bill at a volume: what, its unit, how many a month, what they cost. */
interface VolumeLine {
  what: string;
  unit: string;
  units_per_month: number;
  usd_per_month: number;
}

export interface VolumeReport {
  pages_per_month: number;
  /** Everything: the idle floor and the lines at volume. */
  monthly_usd: number;
  idle_usd_per_month: number;
  /** What the volume adds to the idle floor, per million pages. */
  usd_per_million_pages_beyond_floor: number;
  at_volume: VolumeLine[];
  warnings: string[];
  /** The idle floor's report, resource by resource. */
  floor: CostReport;
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
const GB = 1e9;

/**
 * Prices a template at a volume: its idle floor plus each line the pages add.
 * @throws UnpricedResourceError when a resource type is neither priced nor listed free
 */
export function priceVolume(
  template: Cfn,
  options: Partial<VolumeOptions> & Pick<VolumeOptions, 'pagesPerMonth'>,
): VolumeReport {
  const floor = priceTemplate(template, options);
  const o: VolumeOptions = {
    pageKb: 28,
    retentionHours: 168,
    consumers: 0,
    cpuMsPerPage: CPU_MS_PER_PAGE,
    ...DEFAULT_VOLUME,
    ...options,
  };
  const pages = o.pagesPerMonth;
  const lines: VolumeLine[] = [];
  const warnings: string[] = [];
  const add = (what: string, unit: string, units: number, unitUsd: number) => {
    if (units > 0) lines.push({ what, unit, units_per_month: round(units, 3), usd_per_month: round(units * unitUsd) });
  };
  const resources = Object.values(template.Resources as Record<string, Cfn>);
  const ofType = (type: string) => resources.filter((r) => r.Type === type);
  const topics = ofType('Custom::KafkaTopics')[0]?.Properties;
  const retentionHours = Number(options.retentionHours ?? topics?.RetentionHours ?? o.retentionHours);
  const msgBytes = messageBytes(o.pageKb, floor.compression_ratio);
  const pageMsgGb = (pages * msgBytes) / GB;
  // The archive sink reads the crawled firehose as any other reader does.
  const sink = sinkOfTemplate(template);
  const readers = o.consumers + (sink ? 1 : 0);
  const readersText = `${readers} reader(s) of the firehose${sink ? ': the archive sink' : ''}${sink && o.consumers > 0 ? ` and ${o.consumers} of yours` : ''}`;

  fargate(template, o, add, warnings);

  // Kafka: bytes in, out and stored on Serverless; on provisioned brokers, the cross-zone bytes and whether their
  // disks hold the retention.
  if (ofType('AWS::MSK::ServerlessCluster').length > 0) {
    add(
      'MSK Serverless bytes in (page messages)',
      PRICES.mskServerlessInGb.unit,
      pageMsgGb,
      PRICES.mskServerlessInGb.usd,
    );
    add(
      `MSK Serverless bytes out (${readersText})`,
      PRICES.mskServerlessOutGb.unit,
      readers * pageMsgGb,
      PRICES.mskServerlessOutGb.usd,
    );
    const stored = retainedBytes({ pagesPerMonth: pages, retentionHours, messageBytes: msgBytes });
    add(
      `MSK Serverless storage (${retentionHours} h retention)`,
      PRICES.mskServerlessStorageGbMonth.unit,
      stored / GB,
      PRICES.mskServerlessStorageGbMonth.usd,
    );
    const firehose = Number(Object.values(topics?.TopicPartitions ?? {})[0] ?? topics?.Partitions ?? 1);
    if (stored / firehose > MSK_SERVERLESS_MAX_PARTITION_BYTES)
      warnings.push(
        `MSK Serverless: the firehose keeps ${round(stored / firehose / GB, 0)} GB a partition over ${retentionHours} h, ` +
          `more than its 250 GB a partition: lower -c retentionHours or raise -c topicPartitions`,
      );
  }
  for (const cluster of ofType('AWS::MSK::Cluster')) {
    add(
      `cross-zone bytes to and from brokers (half of produce and of ${readersText})`,
      PRICES.crossAzGb.unit,
      0.5 * (1 + readers) * pageMsgGb,
      PRICES.crossAzGb.usd,
    );
    const brokers = Number(cluster.Properties.NumberOfBrokerNodes);
    const gib = Number(cluster.Properties.BrokerNodeGroupInfo.StorageInfo?.EBSStorageInfo?.VolumeSize ?? 0);
    const needed = brokerVolumeGiBNeeded({ pagesPerMonth: pages, retentionHours, messageBytes: msgBytes }, brokers);
    if (needed > gib)
      warnings.push(
        `broker storage is short: ${brokers} x ${gib} GiB, and ${retentionHours} h of ${millions(pages)} pages a month ` +
          `need ${needed} GiB a broker (replication factor ${replicationFactor(brokers)}, at most ` +
          `${Math.round(BROKER_STORAGE_FILL * 100)} % full): deploy with -c pagesPerMonth=${pages} (sizes it) or ` +
          `-c kafkaVolumeGiB=${needed}`,
      );
  }

  // NAT carries every fetched page at its compressed transfer size (the crawler asks for gzip and br).
  if (ofType('AWS::EC2::NatGateway').length > 0)
    add(
      `NAT gateway bytes (pages fetched, compressed transfer ÷${FETCHED_TRANSFER_RATIO})`,
      PRICES.natGatewayGb.unit,
      (pages * o.pageKb * 1024) / FETCHED_TRANSFER_RATIO / GB,
      PRICES.natGatewayGb.usd,
    );

  // Bodies over the Kafka message limit go to the body bucket and stay there bodyRetentionDays.
  const fleet = crawlerFleet(template);
  const limit = Number(fleet?.env('KAFKA_MAX_MESSAGE_BYTES') ?? VARIABLES.KAFKA_MAX_MESSAGE_BYTES.default);
  const large = pages * LARGE_BODY_SHARE;
  const bodyDays = bodyRetentionDays(template);
  add(
    `S3 PUT of bodies over ${limit} bytes (${LARGE_BODY_SHARE * 100} % of pages)`,
    PRICES.s3PutThousand.unit,
    large / 1000,
    PRICES.s3PutThousand.usd,
  );
  add(
    `S3 storage of those bodies (${bodyDays} days kept)`,
    PRICES.s3StorageGbMonth.unit,
    ((large * LARGE_BODY_BYTES) / GB) * Math.min(1, bodyDays / 30),
    PRICES.s3StorageGbMonth.usd,
  );

  if (sink)
    sinkLines(
      sink,
      {
        ...o,
        largeBodyShare: LARGE_BODY_SHARE,
        largeBodyBytes: LARGE_BODY_BYTES,
        gzipPageRatio: GZIP_PAGE_RATIO,
      },
      add,
    );

  add(
    `CloudWatch Logs ingestion (~${LOG_BYTES_PER_PAGE} bytes a page, estimate)`,
    PRICES.logsIngestGb.unit,
    (pages * LOG_BYTES_PER_PAGE) / GB,
    PRICES.logsIngestGb.usd,
  );
  // The stats function's per-spider backlog metric exists while something is queued (functions/stats/handler.ts).
  add(
    'CloudWatch metric SpiderBacklog (one spider type)',
    PRICES.customMetricMonth.unit,
    1,
    PRICES.customMetricMonth.usd,
  );

  if (o.domains !== undefined) politeness(o, fleet?.env.bind(fleet), warnings);

  const atVolume = lines.reduce((n, l) => n + l.usd_per_month, 0);
  return {
    pages_per_month: pages,
    monthly_usd: round(floor.idle_usd_per_month + atVolume),
    idle_usd_per_month: floor.idle_usd_per_month,
    usd_per_million_pages_beyond_floor: round(atVolume / (pages / 1e6), 4),
    at_volume: lines,
    warnings,
    floor,
  };
}

/**
 * Crawler task-hours: at least one task for the hours the fleet crawls, and as many as the pages/s those hours need
 * at what a task sustains (its vCPU at the CPU a page costs, or its fetch slots at the median response, whichever is
 * less) and at the load the fleet runs its tasks at. Tasks the idle floor already counts (minTasks) are not counted
 * again; the first crawlerOnDemandBase tasks are on-demand when the rest are on Spot.
 */
function fargate(template: Cfn, o: VolumeOptions, add: Add, warnings: string[]): void {
  const fleet = crawlerFleet(template);
  if (!fleet) return;
  const slots = Number(fleet.env('CRAWLER_CONCURRENCY_MAX') ?? VARIABLES.CRAWLER_CONCURRENCY_MAX.default);
  const perTask = Math.min((1000 / o.cpuMsPerPage) * fleet.vcpu, slots / MEDIAN_RESPONSE_S);
  const rate = o.pagesPerMonth / (o.crawlHours * 3600);
  let tasks = Math.max(1, Math.ceil(rate / (perTask * TASK_TARGET_LOAD)));
  if (tasks > fleet.maxTasks) {
    warnings.push(
      `the fleet: ${millions(o.pagesPerMonth)} pages in ${o.crawlHours} h is ${round(rate, 1)} pages a second, ` +
        `${tasks} tasks at ${Math.round(TASK_TARGET_LOAD * 100)} % of the ${round(perTask, 0)} a task sustains; ` +
        `maxTasks is ${fleet.maxTasks}: raise it, or the crawl takes longer`,
    );
    tasks = fleet.maxTasks;
  }
  const onDemand = Math.min(tasks, fleet.onDemandBase);
  const spot = tasks - onDemand;
  const hours = (n: number, floorTasks: number) => Math.max(0, n * o.crawlHours - floorTasks * HOURS_PER_MONTH);
  const floorOnDemand = Math.min(fleet.minTasks, fleet.onDemandBase);
  const floorSpot = fleet.minTasks - floorOnDemand;
  const shape = `${fleet.vcpu} vCPU / ${fleet.gb} GB arm64`;
  const basis = `${tasks} task(s) for ${o.crawlHours} h at most ${round(perTask, 0)} pages/s each`;
  add(`crawler tasks on Fargate, ${shape} (${basis})`, 'task-hour', hours(onDemand, floorOnDemand), fleet.onDemandHour);
  add(`crawler tasks on Fargate Spot, ${shape} (${basis})`, 'task-hour', hours(spot, floorSpot), fleet.spotHour);
  if (fleet.publicIp)
    add(
      'public IPv4 of the crawler tasks',
      PRICES.publicIpv4Hour.unit,
      hours(tasks, fleet.minTasks),
      PRICES.publicIpv4Hour.usd,
    );
}

/** Whether the domains' throttles (QUEUE_HITS per QUEUE_WINDOW each) let the month's pages through in crawlHours. */
function politeness(o: VolumeOptions, env: ((name: string) => string | undefined) | undefined, warnings: string[]) {
  const hits = Number(env?.('QUEUE_HITS') ?? VARIABLES.QUEUE_HITS.default);
  const window = Number(env?.('QUEUE_WINDOW') ?? VARIABLES.QUEUE_WINDOW.default);
  const polite = ((o.domains ?? 0) * hits) / window;
  const rate = o.pagesPerMonth / (o.crawlHours * 3600);
  if (rate > polite)
    warnings.push(
      `politeness: ${o.domains} domains at ${hits} fetches per ${window} s each allow ${round(polite, 1)} pages a ` +
        `second, the volume needs ${round(rate, 1)}: the crawl takes ${round(o.pagesPerMonth / polite / 3600, 0)} h, ` +
        `not ${o.crawlHours}`,
    );
}

/** Days the body bucket keeps an object (its lifecycle rule), 30 without one. */
function bodyRetentionDays(template: Cfn): number {
  for (const [id, r] of Object.entries(template.Resources as Record<string, Cfn>)) {
    if (r.Type !== 'AWS::S3::Bucket' || !/Bodies/.test(id)) continue;
    const days = (r.Properties.LifecycleConfiguration?.Rules ?? []).find(
      (rule: Cfn) => rule.ExpirationInDays,
    )?.ExpirationInDays;
    if (days !== undefined) return Number(days);
  }
  return 30;
}

/** A page count in millions, for warnings. */
function millions(pages: number): string {
  return pages >= 1e6 ? `${round(pages / 1e6, 1)}M` : String(Math.round(pages));
}
