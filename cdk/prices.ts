/**
 * The one price table of `npm run cost` (cdk/cost.ts, docs/cost.md): us-east-1 list prices in USD, on-demand, no free
 * tier, no savings plan, as the AWS pricing pages list them. Transcribed on {@link PRICES_DATE}; check the pages
 * named in `source` before relying on a figure, and edit it here (nowhere else holds a price).
 */

/** When the prices below were transcribed. */
export const PRICES_DATE = '2026-11-28';
/** The region the prices are for. */
export const PRICES_REGION = 'us-east-1';
/** Hours in a month, as AWS prices a month. */
export const HOURS_PER_MONTH = 730;

/** One price: its value, its unit, and where it comes from. */
export interface Price {
  usd: number;
  unit: string;
  source: string;
}

const MSK = 'https://aws.amazon.com/msk/pricing/';
const VPC = 'https://aws.amazon.com/vpc/pricing/';
const PRIVATELINK = 'https://aws.amazon.com/privatelink/pricing/';
const ELASTICACHE = 'https://aws.amazon.com/elasticache/pricing/ (Valkey, on-demand nodes)';
const LAMBDA = 'https://aws.amazon.com/lambda/pricing/';
const FARGATE = 'https://aws.amazon.com/fargate/pricing/ (Linux/ARM)';
const CLOUDWATCH = 'https://aws.amazon.com/cloudwatch/pricing/';
const EC2 = 'https://aws.amazon.com/ec2/pricing/on-demand/ (data transfer)';
const FARGATE_SPOT =
  'https://aws.amazon.com/fargate/pricing/ (Fargate Spot, Linux/ARM: the price varies with supply; 70 % below on-demand, the discount AWS advertises)';
const S3 = 'https://aws.amazon.com/s3/pricing/ (S3 Standard)';
const S3_CLASSES = 'https://aws.amazon.com/s3/pricing/ (storage classes; requests and data retrievals)';

export const PRICES = {
  mskServerlessClusterHour: { usd: 0.75, unit: 'cluster-hour', source: MSK },
  mskServerlessPartitionHour: { usd: 0.0015, unit: 'partition-hour', source: MSK },
  mskServerlessInGb: { usd: 0.1, unit: 'GB in', source: MSK },
  mskServerlessOutGb: { usd: 0.05, unit: 'GB out', source: MSK },
  mskServerlessStorageGbMonth: { usd: 0.1, unit: 'GB-month', source: MSK },
  mskStorageGbMonth: { usd: 0.1, unit: 'GB-month (broker EBS)', source: MSK },
  natGatewayHour: { usd: 0.045, unit: 'gateway-hour', source: VPC },
  natGatewayGb: { usd: 0.045, unit: 'GB processed', source: VPC },
  publicIpv4Hour: { usd: 0.005, unit: 'IPv4 address-hour', source: VPC },
  interfaceEndpointAzHour: { usd: 0.01, unit: 'endpoint-zone-hour', source: PRIVATELINK },
  interfaceEndpointGb: { usd: 0.01, unit: 'GB processed', source: PRIVATELINK },
  crossAzGb: { usd: 0.02, unit: 'GB across zones (0.01 out + 0.01 in)', source: EC2 },
  eventPollerUnitHour: { usd: 0.185, unit: 'EPU-hour (provisioned pollers)', source: LAMBDA },
  lambdaRequestsMillion: { usd: 0.2, unit: 'million requests', source: LAMBDA },
  lambdaArmGbSecond: { usd: 0.0000133334, unit: 'GB-second (arm64)', source: LAMBDA },
  fargateArmVcpuHour: { usd: 0.03238, unit: 'vCPU-hour', source: FARGATE },
  fargateArmGbHour: { usd: 0.00356, unit: 'GB-hour', source: FARGATE },
  fargateSpotArmVcpuHour: { usd: 0.009714, unit: 'vCPU-hour (Spot)', source: FARGATE_SPOT },
  fargateSpotArmGbHour: { usd: 0.001068, unit: 'GB-hour (Spot)', source: FARGATE_SPOT },
  s3PutThousand: { usd: 0.005, unit: '1,000 PUT requests', source: S3 },
  s3StorageGbMonth: { usd: 0.023, unit: 'GB-month', source: S3 },
  s3GetThousand: { usd: 0.0004, unit: '1,000 GET requests', source: S3 },
  s3ListThousand: { usd: 0.005, unit: '1,000 LIST requests', source: S3 },
  s3IaGbMonth: { usd: 0.0125, unit: 'GB-month (Standard-IA)', source: S3_CLASSES },
  s3GlacierIrGbMonth: { usd: 0.004, unit: 'GB-month (Glacier Instant Retrieval)', source: S3_CLASSES },
  s3TransitionIaThousand: { usd: 0.01, unit: '1,000 lifecycle transitions to Standard-IA', source: S3_CLASSES },
  s3TransitionGlacierIrThousand: {
    usd: 0.02,
    unit: '1,000 lifecycle transitions to Glacier Instant Retrieval',
    source: S3_CLASSES,
  },
  ec2M7gLargeHour: {
    usd: 0.0816,
    unit: 'm7g.large instance-hour',
    source: 'https://aws.amazon.com/ec2/pricing/on-demand/',
  },
  ebsGp3GbMonth: { usd: 0.08, unit: 'GB-month (gp3)', source: 'https://aws.amazon.com/ebs/pricing/' },
  nlbHour: { usd: 0.0225, unit: 'load balancer-hour', source: 'https://aws.amazon.com/elasticloadbalancing/pricing/' },
  nlbLcuHour: { usd: 0.006, unit: 'NLCU-hour', source: 'https://aws.amazon.com/elasticloadbalancing/pricing/' },
  secretMonth: { usd: 0.4, unit: 'secret-month', source: 'https://aws.amazon.com/secrets-manager/pricing/' },
  alarmMetricMonth: { usd: 0.1, unit: 'standard alarm metric-month', source: CLOUDWATCH },
  dashboardMonth: { usd: 3, unit: 'dashboard-month', source: CLOUDWATCH },
  customMetricMonth: { usd: 0.3, unit: 'metric-month', source: CLOUDWATCH },
  logsIngestGb: { usd: 0.5, unit: 'GB ingested', source: CLOUDWATCH },
  schedulerMillion: { usd: 1, unit: 'million invocations', source: 'https://aws.amazon.com/eventbridge/pricing/' },
  ecrStorageGbMonth: { usd: 0.1, unit: 'GB-month', source: 'https://aws.amazon.com/ecr/pricing/' },
} as const satisfies Record<string, Price>;

/** Where {@link MSK_BROKER_HOUR} and {@link VALKEY_NODE_HOUR} come from. */
export const INSTANCE_SOURCES = { msk: MSK, valkey: ELASTICACHE };

/** MSK provisioned broker-hours by instance type. */
export const MSK_BROKER_HOUR: Record<string, number> = {
  'kafka.t3.small': 0.0456,
  'kafka.m5.large': 0.21,
  'kafka.m5.xlarge': 0.42,
  'kafka.m7g.large': 0.204,
  'kafka.m7g.xlarge': 0.408,
  'kafka.m7g.2xlarge': 0.816,
};

/** ElastiCache Valkey node-hours by node type (Valkey is listed 20 % below Redis OSS). */
export const VALKEY_NODE_HOUR: Record<string, number> = {
  'cache.t4g.micro': 0.0128,
  'cache.t4g.small': 0.0256,
  'cache.t4g.medium': 0.0512,
  'cache.m7g.large': 0.1264,
  'cache.r7g.large': 0.1752,
};

/**
 * Assumptions of the model, not prices: each is named in the output next to the line it feeds.
 * - pollersPerEpu: provisioned Kafka pollers one Event Poller Unit carries (the Lambda pricing page's EPU).
 * - scheduledRunSeconds: billed duration of one run of a scheduled function at idle (expire, stats, reclaim).
 * - idleMetrics: Powertools metrics each scheduled function publishes every run at idle (functions/<name>/handler.ts).
 * - containerInsightsMetrics: Container Insights metrics of a cluster and of each service (estimate).
 * - imageGb: the crawler image in ECR (functions/crawler/Dockerfile, compressed layers).
 * - mskMetrics: CloudWatch metrics provisioned MSK publishes beyond the free DEFAULT level (MSK Developer Guide,
 *   "Amazon MSK metrics for monitoring with CloudWatch"): per broker at PER_BROKER (those published without
 *   throttling), per topic and broker at PER_TOPIC_PER_BROKER, per partition and consumer group at
 *   PER_TOPIC_PER_PARTITION.
 */
export const ASSUMPTIONS = {
  pollersPerEpu: 10,
  scheduledRunSeconds: 0.2,
  idleMetrics: { expire: 2, stats: 10, reclaim: 1 } as Record<string, number>,
  containerInsightsMetrics: { cluster: 8, perService: 11 },
  imageGb: 0.35,
  mskMetrics: { perBroker: 38, perTopicPerBroker: 3, perPartitionPerGroup: 2 },
};

/** Sizes below 2xlarge in `small`s of their family. */
const SIZE_UNITS: Record<string, number> = { micro: 0.5, small: 1, medium: 2, large: 4, xlarge: 8 };

/** How many `small`s of its family a size is (AWS lists a family's sizes at prices in these ratios). */
function sizeUnits(size: string): number | undefined {
  if (Object.hasOwn(SIZE_UNITS, size)) return SIZE_UNITS[size];
  const m = size.match(/^([1-9][0-9]?)xlarge$/);
  return m ? 8 * Number(m[1]) : undefined;
}

/**
 * The hourly list price of instance or node type `type` (`<prefix>.<family>.<size>`) in `table`: its own entry, or,
 * for a size the table lacks, one of its family's listed sizes scaled by their ratio (cache.r7g.xlarge is 2 x
 * cache.r7g.large), with `derivedFrom` naming that size. Undefined for a family the table does not list.
 */
export function hourlyPrice(
  table: Record<string, number>,
  type: string,
): { usd: number; derivedFrom?: string } | undefined {
  const listed = table[type];
  if (listed !== undefined) return { usd: listed };
  const at = type.lastIndexOf('.');
  const units = sizeUnits(type.slice(at + 1));
  if (at < 0 || units === undefined) return undefined;
  const family = type.slice(0, at + 1);
  for (const [other, usd] of Object.entries(table)) {
    const otherUnits = other.startsWith(family) ? sizeUnits(other.slice(family.length)) : undefined;
    if (otherUnits !== undefined) return { usd: round4((usd * units) / otherUnits), derivedFrom: other };
  }
  return undefined;
}

const round4 = (n: number) => Math.round(n * 10_000) / 10_000;

/**
 * Bytes a page message shrinks by on the wire, per KAFKA_COMPRESSION, as the crawl measures it (bench/scenarios/crawl.ts
 * compression pass, `<codec>_compression_ratio`: article pages in the crawler's own record batches), rounded down. The
 * compression bench's batches of neighbouring pages compress better: gzip's best case, not the crawl's (docs/cost.md).
 */
export const COMPRESSION_RATIO: Record<string, number> = { none: 1, gzip: 3.5, zstd: 16 };

/**
 * CloudFormation types that cost nothing by themselves (their use is priced where it happens: a role, a rule, a
 * subnet, an API with no request). The cost test fails on a type in neither this list nor the pricers of
 * cdk/cost-model.ts, so a new billable resource cannot slip past the table.
 */
export const FREE_TYPES = [
  'AWS::ApiGatewayV2::Api',
  'AWS::ApiGatewayV2::Route',
  'AWS::ApiGatewayV2::Integration',
  'AWS::ApiGatewayV2::Stage',
  'AWS::ApplicationAutoScaling::ScalableTarget',
  'AWS::ApplicationAutoScaling::ScalingPolicy',
  'AWS::CDK::Metadata',
  'AWS::EC2::InternetGateway',
  'AWS::EC2::Route',
  'AWS::EC2::RouteTable',
  'AWS::EC2::SecurityGroup',
  'AWS::EC2::SecurityGroupEgress',
  'AWS::EC2::SecurityGroupIngress',
  'AWS::EC2::Subnet',
  'AWS::EC2::SubnetRouteTableAssociation',
  'AWS::EC2::VPC',
  'AWS::EC2::VPCGatewayAttachment',
  'AWS::EC2::FlowLog',
  'AWS::ECS::TaskDefinition',
  'AWS::ECS::ClusterCapacityProviderAssociations',
  'AWS::ElastiCache::ParameterGroup',
  'AWS::ElastiCache::SubnetGroup',
  'AWS::ElasticLoadBalancingV2::Listener',
  'AWS::ElasticLoadBalancingV2::TargetGroup',
  'AWS::IAM::ManagedPolicy',
  'AWS::IAM::Policy',
  'AWS::IAM::Role',
  'AWS::IAM::ServiceLinkedRole',
  'AWS::Lambda::Function',
  'AWS::Lambda::Permission',
  'AWS::Logs::LogGroup',
  'AWS::S3::Bucket',
  'AWS::S3::BucketPolicy',
  'AWS::SNS::Subscription',
  'AWS::SNS::Topic',
  'AWS::SNS::TopicPolicy',
  'Custom::AWS',
  'Custom::VpcRestrictDefaultSG',
];
