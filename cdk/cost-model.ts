/**
 * Prices a synthesized CloudFormation template of the stack (`npm run cost`, cdk/cost.ts; docs/cost.md): every
 * billable resource with its unit price and monthly cost when nothing is crawled, the total, and the marginal cost of
 * a million pages. Prices come only from ./prices.ts. A resource type that is neither priced here nor listed free
 * there is an error, so a new billable resource cannot go unpriced. What it reads of the template (the crawler fleet,
 * the cache) is ./cost-template.ts's.
 */

import { sinkOfTemplate } from './cost-sink.ts';
import {
  type CacheLayout,
  type Cfn,
  cacheLayout,
  crawlerFleet,
  serviceShape,
  stackCompression,
  Tmpl,
} from './cost-template.ts';
import {
  ASSUMPTIONS,
  COMPRESSION_RATIO,
  FREE_TYPES,
  HOURS_PER_MONTH,
  hourlyPrice,
  INSTANCE_SOURCES,
  MSK_BROKER_HOUR,
  PRICES,
  type Price,
  VALKEY_NODE_HOUR,
} from './prices.ts';

/** One priced resource of the template. */
export interface ResourceCost {
  /** Logical id in the template. */
  id: string;
  type: string;
  /** What is billed, in words (`2 x kafka.t3.small broker-hours`). */
  what: string;
  /** Price per unit, USD. */
  unit_usd: number;
  unit: string;
  /** The pricing page of the unit price (cdk/prices.ts). */
  source: string;
  /** Units billed in a month when nothing is crawled. */
  idle_units_per_month: number;
  idle_usd_per_month: number;
}

/** What a million pages cost beyond the idle floor, by component. */
interface PageCost {
  component: string;
  usd_per_million_pages: number;
}

export interface CostOptions {
  /** Average page size in KB (the page message before compression). @default 28 */
  pageKb: number;
  /** KAFKA_COMPRESSION of the page messages. @default the crawler task's, else none */
  compression?: string;
  /** Bytes the codec divides a page by. @default COMPRESSION_RATIO[compression] */
  compressionRatio?: number;
  /** Hours the firehose keeps a page (billed storage on MSK Serverless). @default 168 */
  retentionHours: number;
  /**
   * Readers of the crawled firehose of your own, besides the stack's archive sink, which the template says whether it
   * deploys (each read is billed out of MSK Serverless). @default 0
   */
  consumers: number;
  /** Crawler CPU per page, ms. @default {@link CPU_MS_PER_PAGE} */
  cpuMsPerPage: number;
}

/**
 * CPU a page costs on the simulated internet (links, children, gzip page messages): the crawler worker, Redis and
 * Kafka together on one core, as the realweb bench measures them (bench/results/realweb.json
 * `ours_1w_cpu_ms_per_page`; bench/PROFILE.md, "Crawl worker on the simulated internet"), rounded up. Charged to the
 * crawler task as a whole: its vCPU is what it is billed for.
 */
export const CPU_MS_PER_PAGE = 4.36;

/**
 * Bytes a fetched page shrinks by on the wire: the crawler asks for gzip and br, so NAT carries the compressed
 * transfer size. One article page gzip'd alone, as a server compresses one response (bench/results/compression.json
 * `gzip_page_ratio`), for the share of servers that compress; full size for the share that send HTML uncompressed
 * (about 8 % of the 10,000 most popular sites' home pages: Danny van Kooten, "HTML compression on popular websites",
 * https://www.dannyvankooten.com/blog/2023/top-websites-not-using-compression/).
 */
export const GZIP_PAGE_RATIO = 2.88;
const UNCOMPRESSED_HTML_SHARE = 0.08;
export const FETCHED_TRANSFER_RATIO =
  Math.round((1 / ((1 - UNCOMPRESSED_HTML_SHARE) / GZIP_PAGE_RATIO + UNCOMPRESSED_HTML_SHARE)) * 100) / 100;

export const DEFAULT_OPTIONS: CostOptions = {
  pageKb: 28,
  retentionHours: 168,
  consumers: 0,
  cpuMsPerPage: CPU_MS_PER_PAGE,
};

export interface CostReport {
  /** Undefined for a template without an ElastiCache replication group. */
  cache?: CacheLayout;
  idle_usd_per_month: number;
  usd_per_million_pages: number;
  resources: ResourceCost[];
  per_million_pages: PageCost[];
  compression: string;
  compression_ratio: number;
}

/** A resource type neither priced nor listed free. */
export class UnpricedResourceError extends Error {
  readonly types: string[];
  constructor(types: string[]) {
    super(`no price for ${types.join(', ')}: add it to cdk/cost-model.ts PRICERS or cdk/prices.ts FREE_TYPES`);
    this.name = 'UnpricedResourceError';
    this.types = types;
  }
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

function line(id: string, r: Cfn, what: string, price: Price, units: number): ResourceCost {
  return {
    id,
    type: r.Type,
    what,
    unit_usd: price.usd,
    unit: price.unit,
    source: price.source,
    idle_units_per_month: round(units, 3),
    idle_usd_per_month: round(price.usd * units, 2),
  };
}

type Pricer = (id: string, r: Cfn, t: Tmpl) => ResourceCost[];

/** A line's note for a price derived from another size of the family (prices.ts hourlyPrice), else nothing. */
const derived = (price: { derivedFrom?: string }) =>
  price.derivedFrom ? ` (priced from ${price.derivedFrom} by size)` : '';

/** How each billable type is priced when idle (per-use charges are in {@link perMillionPages}). */
const PRICERS: Record<string, Pricer> = {
  'AWS::MSK::ServerlessCluster': (id, r) => [
    line(id, r, 'MSK Serverless cluster-hours', PRICES.mskServerlessClusterHour, HOURS_PER_MONTH),
  ],
  'Custom::KafkaTopics': (id, r, t) => {
    if (t.ofType('AWS::MSK::ServerlessCluster').length === 0) return [];
    const names: string[] = r.Properties.Topics ?? [];
    const partitions = names.reduce(
      (n, name) => n + Number(r.Properties.TopicPartitions?.[name] ?? r.Properties.Partitions ?? 1),
      0,
    );
    return [
      line(
        id,
        r,
        `${partitions} partitions (${r.Properties.Topics?.length} topics)`,
        PRICES.mskServerlessPartitionHour,
        partitions * HOURS_PER_MONTH,
      ),
    ];
  },
  'AWS::MSK::Cluster': (id, r, t) => {
    const p = r.Properties;
    const type = p.BrokerNodeGroupInfo.InstanceType as string;
    const price = hourlyPrice(MSK_BROKER_HOUR, type);
    if (price === undefined)
      throw new UnpricedResourceError([`MSK broker type ${type} (a family not in cdk/prices.ts MSK_BROKER_HOUR)`]);
    const brokers = Number(p.NumberOfBrokerNodes);
    const gib = Number(p.BrokerNodeGroupInfo.StorageInfo?.EBSStorageInfo?.VolumeSize ?? 0);
    return [
      line(
        id,
        r,
        `${brokers} x ${type} broker-hours${derived(price)}`,
        { usd: price.usd, unit: 'broker-hour', source: INSTANCE_SOURCES.msk },
        brokers * HOURS_PER_MONTH,
      ),
      line(id, r, `${brokers} x ${gib} GiB broker storage`, PRICES.mskStorageGbMonth, brokers * gib),
      ...mskMetrics(id, r, t, brokers),
    ];
  },
  'AWS::EC2::NatGateway': (id, r) => [line(id, r, 'NAT gateway-hours', PRICES.natGatewayHour, HOURS_PER_MONTH)],
  'AWS::EC2::EIP': (id, r) => [line(id, r, 'public IPv4 address-hours', PRICES.publicIpv4Hour, HOURS_PER_MONTH)],
  'AWS::EC2::VPCEndpoint': (id, r) => {
    if (r.Properties.VpcEndpointType !== 'Interface') return [];
    const zones = r.Properties.SubnetIds?.length ?? 1;
    const service = JSON.stringify(r.Properties.ServiceName).match(/\.([a-z.]+)"/)?.[1] ?? 'endpoint';
    return [
      line(id, r, `${service} endpoint in ${zones} zone(s)`, PRICES.interfaceEndpointAzHour, zones * HOURS_PER_MONTH),
    ];
  },
  'AWS::ElastiCache::ReplicationGroup': (id, r, t) => {
    const c = cacheLayout(r, t);
    const price = hourlyPrice(VALKEY_NODE_HOUR, c.node_type);
    if (price === undefined) {
      throw new UnpricedResourceError([
        `ElastiCache node type ${c.node_type} (a family not in cdk/prices.ts VALKEY_NODE_HOUR)`,
      ]);
    }
    // Every node is billed alike, primaries and replicas, in cluster mode as without.
    const nodes = c.shards * c.nodes_per_shard;
    const shape = c.cluster_mode ? ` (${c.shards} shard(s) x ${c.nodes_per_shard} node(s))` : '';
    return [
      line(
        id,
        r,
        `${nodes} x ${c.node_type} node-hours${shape}${derived(price)}`,
        { usd: price.usd, unit: 'node-hour', source: INSTANCE_SOURCES.valkey },
        nodes * HOURS_PER_MONTH,
      ),
    ];
  },
  'AWS::Lambda::EventSourceMapping': (id, r, t) => {
    const cfg = r.Properties.ProvisionedPollerConfig;
    if (!cfg) return [];
    // Mappings of one poller group share Event Poller Units: the group is priced once, on its first mapping.
    const group = cfg.PollerGroupName;
    const members = t
      .ofType('AWS::Lambda::EventSourceMapping')
      .filter(([, m]) => group !== undefined && m.Properties.ProvisionedPollerConfig?.PollerGroupName === group);
    if (members.length > 0 && members[0]?.[0] !== id) return [];
    const pollers = (members.length > 0 ? members : [[id, r]]).reduce(
      (n, [, m]) => n + Number((m as Cfn).Properties.ProvisionedPollerConfig.MinimumPollers ?? 1),
      0,
    );
    const epus = Math.max(1, Math.ceil(pollers / ASSUMPTIONS.pollersPerEpu));
    return [
      line(
        id,
        r,
        `${epus} EPU for ${pollers} minimum pollers (${ASSUMPTIONS.pollersPerEpu} per EPU, assumed)`,
        PRICES.eventPollerUnitHour,
        epus * HOURS_PER_MONTH,
      ),
    ];
  },
  'AWS::ECS::Service': (id, r, t) => {
    // The idle floor of a service: its scalable target's minimum, else its desired count.
    const target = t
      .ofType('AWS::ApplicationAutoScaling::ScalableTarget')
      .find(([, s]) => JSON.stringify(s.Properties.ResourceId).includes(`"${id}"`));
    const tasks = Number(target?.[1].Properties.MinCapacity ?? r.Properties.DesiredCount ?? 0);
    if (tasks === 0) return [];
    const f = serviceShape(t, r);
    const onDemand = Math.min(tasks, f.onDemandBase);
    const spot = tasks - onDemand;
    const shape = `${f.vcpu} vCPU / ${f.gb} GB arm64${f.publicIp ? ' + public IPv4' : ''}`;
    const ipv4 = f.publicIp ? PRICES.publicIpv4Hour.usd : 0;
    const out: ResourceCost[] = [];
    if (onDemand > 0)
      out.push(
        line(
          id,
          r,
          `${onDemand} Fargate task(s) always on, ${shape}`,
          { usd: round(f.onDemandHour + ipv4, 5), unit: 'task-hour', source: PRICES.fargateArmVcpuHour.source },
          onDemand * HOURS_PER_MONTH,
        ),
      );
    if (spot > 0)
      out.push(
        line(
          id,
          r,
          `${spot} Fargate Spot task(s) always on, ${shape}`,
          { usd: round(f.spotHour + ipv4, 5), unit: 'task-hour', source: PRICES.fargateSpotArmVcpuHour.source },
          spot * HOURS_PER_MONTH,
        ),
      );
    return out;
  },
  'AWS::ECS::Cluster': (id, r, t) => {
    const insights = (r.Properties.ClusterSettings ?? []).some(
      (s: Cfn) => s.Name === 'containerInsights' && s.Value !== 'disabled',
    );
    const out: ResourceCost[] = [];
    if (insights) {
      const { cluster, perService } = ASSUMPTIONS.containerInsightsMetrics;
      const metrics = cluster + perService * t.ofType('AWS::ECS::Service').length;
      out.push(line(id, r, `Container Insights: ~${metrics} metrics (estimate)`, PRICES.customMetricMonth, metrics));
    }
    const built = t
      .ofType('AWS::ECS::TaskDefinition')
      .some(([, d]) => JSON.stringify(d.Properties.ContainerDefinitions).includes('container-assets'));
    if (built)
      out.push(
        line(id, r, `crawler image in ECR, ~${ASSUMPTIONS.imageGb} GB`, PRICES.ecrStorageGbMonth, ASSUMPTIONS.imageGb),
      );
    return out;
  },
  'AWS::ElasticLoadBalancingV2::LoadBalancer': (id, r) => [
    line(id, r, `${r.Properties.Type ?? 'application'} load balancer-hours`, PRICES.nlbHour, HOURS_PER_MONTH),
  ],
  'AWS::SecretsManager::Secret': (id, r) => [line(id, r, 'secret', PRICES.secretMonth, 1)],
  'AWS::CloudWatch::Alarm': (id, r) => {
    const metrics = r.Properties.Metrics ? r.Properties.Metrics.filter((m: Cfn) => m.MetricStat).length : 1;
    return [line(id, r, `alarm on ${metrics} metric(s)`, PRICES.alarmMetricMonth, metrics)];
  },
  'AWS::CloudWatch::Dashboard': (id, r) => [line(id, r, 'dashboard', PRICES.dashboardMonth, 1)],
  'AWS::Scheduler::Schedule': (id, r, t) => {
    const minutes = Number(/rate\((\d+) minutes?\)/.exec(r.Properties.ScheduleExpression)?.[1] ?? 1);
    const runs = (HOURS_PER_MONTH * 60) / minutes;
    const fn = t.resources[t.target(r.Properties.Target?.Arn) ?? ''];
    const memoryGb = Number(fn?.Properties.MemorySize ?? 128) / 1024;
    const name = /crawl-cluster (\w+)/.exec(r.Properties.Description ?? '')?.[1] ?? id;
    const metrics = ASSUMPTIONS.idleMetrics[name] ?? 0;
    const lambda = runs * memoryGb * ASSUMPTIONS.scheduledRunSeconds * PRICES.lambdaArmGbSecond.usd;
    const requests = (runs / 1e6) * (PRICES.schedulerMillion.usd + PRICES.lambdaRequestsMillion.usd);
    return [
      line(
        id,
        r,
        `${name}: ${runs} scheduled runs (invocation, ${ASSUMPTIONS.scheduledRunSeconds} s each)`,
        {
          usd: round((lambda + requests) / runs, 8),
          unit: 'run',
          source: `${PRICES.schedulerMillion.source}; ${PRICES.lambdaArmGbSecond.source}`,
        },
        runs,
      ),
      ...(metrics > 0
        ? [line(id, r, `${name}: ${metrics} metrics published every run`, PRICES.customMetricMonth, metrics)]
        : []),
    ];
  },
};

/**
 * The CloudWatch metrics a provisioned cluster's monitoring level adds to the free DEFAULT ones (ASSUMPTIONS.mskMetrics),
 * counted on the topics the stack creates (per-app topics add theirs as apps appear).
 */
function mskMetrics(id: string, r: Cfn, t: Tmpl, brokers: number): ResourceCost[] {
  const level = String(r.Properties.EnhancedMonitoring ?? 'DEFAULT');
  if (level === 'DEFAULT') return [];
  const topics = t.ofType('Custom::KafkaTopics')[0]?.[1].Properties;
  const names: string[] = topics?.Topics ?? [];
  const partitions = names.reduce(
    (n, name) => n + Number(topics?.TopicPartitions?.[name] ?? topics?.Partitions ?? 1),
    0,
  );
  const m = ASSUMPTIONS.mskMetrics;
  let metrics = brokers * m.perBroker;
  if (level !== 'PER_BROKER') metrics += brokers * names.length * m.perTopicPerBroker;
  if (level === 'PER_TOPIC_PER_PARTITION') metrics += partitions * m.perPartitionPerGroup;
  return [line(id, r, `MSK ${level} metrics: ~${metrics} (estimate)`, PRICES.customMetricMonth, metrics)];
}

/** Resource types present in a template that are neither priced nor listed free. */
export function unpricedTypes(template: Cfn): string[] {
  const types = new Set(Object.values(template.Resources as Record<string, Cfn>).map((r) => r.Type as string));
  return [...types].filter((type) => !(type in PRICERS) && !FREE_TYPES.includes(type)).sort();
}

/** The marginal cost of a million pages, by component, for this template and these options. */
function perMillionPages(t: Tmpl, o: CostOptions, ratio: number): PageCost[] {
  const pages = 1e6;
  const rawGb = (pages * o.pageKb * 1024) / 1e9;
  const msgGb = rawGb / ratio;
  const out: PageCost[] = [];
  const sink = sinkOfTemplate({ Resources: t.resources }) !== undefined;
  const readers = o.consumers + (sink ? 1 : 0);
  const who = `${readers} reader(s)${sink ? ', the archive sink among them' : ''}`;
  if (t.ofType('AWS::MSK::ServerlessCluster').length > 0) {
    out.push({ component: 'MSK Serverless bytes in', usd_per_million_pages: msgGb * PRICES.mskServerlessInGb.usd });
    out.push({
      component: `MSK Serverless bytes out (${who})`,
      usd_per_million_pages: readers * msgGb * PRICES.mskServerlessOutGb.usd,
    });
    out.push({
      component: `MSK Serverless storage (${o.retentionHours} h retention)`,
      usd_per_million_pages: msgGb * (o.retentionHours / HOURS_PER_MONTH) * PRICES.mskServerlessStorageGbMonth.usd,
    });
  } else if (t.ofType('AWS::MSK::Cluster').length > 0) {
    // Brokers and their EBS are already in the floor; clients reach a leader in another zone half the time.
    out.push({
      component: `cross-zone bytes to and from brokers (half of produce and of ${who})`,
      usd_per_million_pages: 0.5 * (1 + readers) * msgGb * PRICES.crossAzGb.usd,
    });
  }
  if (t.ofType('AWS::EC2::NatGateway').length > 0)
    out.push({
      component: `NAT gateway bytes (pages fetched, compressed transfer ÷${FETCHED_TRANSFER_RATIO})`,
      usd_per_million_pages: (rawGb / FETCHED_TRANSFER_RATIO) * PRICES.natGatewayGb.usd,
    });
  const fleet = crawlerFleet({ Resources: t.resources });
  if (fleet) {
    // CPU-bound: a task busy crawling. The fleet's floor of one task while anything is queued is a monthly cost, not
    // a per-page one: `npm run cost -- --pages-per-month N` prices it (./cost-volume.ts).
    const taskHours = (pages * o.cpuMsPerPage) / 1000 / 3600 / fleet.vcpu;
    const hour = fleet.spot && fleet.onDemandBase === 0 ? fleet.spotHour : fleet.onDemandHour;
    out.push({
      component: `Fargate crawler task time (${o.cpuMsPerPage} ms CPU per page, CPU-bound${fleet.spot && fleet.onDemandBase === 0 ? ', Spot' : ''})`,
      usd_per_million_pages: taskHours * (hour + (fleet.publicIp ? PRICES.publicIpv4Hour.usd : 0)),
    });
  }
  return out.map((c) => ({ ...c, usd_per_million_pages: round(c.usd_per_million_pages, 4) }));
}

/**
 * Prices a synthesized template.
 * @throws UnpricedResourceError when a resource type is neither priced nor listed free
 */
export function priceTemplate(template: Cfn, options: Partial<CostOptions> = {}): CostReport {
  const missing = unpricedTypes(template);
  if (missing.length > 0) throw new UnpricedResourceError(missing);
  const o = { ...DEFAULT_OPTIONS, ...options };
  const t = new Tmpl(template.Resources);
  const resources: ResourceCost[] = [];
  for (const [id, r] of Object.entries(t.resources)) resources.push(...(PRICERS[r.Type]?.(id, r, t) ?? []));
  const compression = o.compression ?? stackCompression(t) ?? 'none';
  const ratio = o.compressionRatio ?? COMPRESSION_RATIO[compression];
  if (ratio === undefined || !(ratio >= 1)) throw new Error(`no compression ratio for ${compression}`);
  const pages = perMillionPages(t, o, ratio);
  const group = t.ofType('AWS::ElastiCache::ReplicationGroup')[0];
  return {
    ...(group ? { cache: cacheLayout(group[1], t) } : {}),
    idle_usd_per_month: round(resources.reduce((n, r) => n + r.idle_usd_per_month, 0)),
    usd_per_million_pages: round(pages.reduce((n, c) => n + c.usd_per_million_pages, 0)),
    resources,
    per_million_pages: pages,
    compression,
    compression_ratio: ratio,
  };
}
