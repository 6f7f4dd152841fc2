/**
 * The archive sink on AWS (docs/outputs.md): the `sink` function (functions/sink/handler.ts) on an MSK event source on
 * `<p>.crawled_firehose` (consumer group `<p>.sink`), in the monitors' style (partial batch failures, failed batches to
 * the failed-batch bucket), writing every page under SINK_URI: an outputs bucket of the stack, whose lifecycle moves
 * the files to cheaper storage classes as they age, or a prefix of a bucket the user already has.
 *
 * Its settings are context keys of its own, read here so the stack's settings stay as they are:
 * `sinkFormats` (`jsonl`; `warc`, `warc,jsonl`, or `none`: no function, no event source, no bucket),
 * `sinkBucket` (the name of an existing bucket; default: the stack's outputs bucket), `sinkPrefix` (key prefix:
 * none in the stack's bucket, `crawl-cluster/` in an existing one), and the outputs bucket's lifecycle in days:
 * `sinkIaDays` (30: to Standard-IA), `sinkGlacierDays` (90: to Glacier Instant Retrieval, which replay tools still
 * read in milliseconds), `sinkExpireDays` (0: kept for good); 0 turns a step off.
 */
import { Annotations, Duration } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct, type Node } from 'constructs';
import { METRICS_NAMESPACE } from '../../functions/shared/observability.ts';
import { VARIABLES } from '../../lib/config/variables.ts';
import { SettingsError } from '../context-values.ts';
import { acknowledge, wildcardResource } from '../nag.ts';
import { environment, type RuntimeEnv } from '../runtime-env.ts';
import type { Settings } from '../settings.ts';
import { CrawlFunction } from './crawl-function.ts';
import { type Functions, mskEventSourceGrants } from './functions.ts';
import type { Kafka } from './kafka.ts';
import type { Network } from './network.ts';
import { PRIVATE_BUCKET, type Storage } from './storage.ts';

/** The sink's context keys (see the module doc). */
export interface SinkSettings {
  /** SINK_FORMATS of the function; empty with `sinkFormats=none` (no sink deployed). */
  formats: string;
  /** An existing bucket to write to instead of the stack's outputs bucket. */
  bucketName?: string;
  /** Key prefix under the bucket: empty, or ending in `/`. */
  prefix: string;
  iaDays: number;
  glacierDays: number;
  expireDays: number;
}

/** The formats `sinkFormats` accepts (SINK_FORMATS's, plus `none`). */
const FORMATS = /^(none|warc|jsonl|warc,jsonl|jsonl,warc)$/;

/** S3 bucket names (the general purpose rules, without the dotted forms that break virtual-host TLS). */
const BUCKET_NAME = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;

/** Key prefixes: path segments of safe characters, no `..`. */
const PREFIX = /^([A-Za-z0-9_.=-]+\/)*[A-Za-z0-9_.=-]*$/;

/** Reads and checks the sink's context keys; a wrong value fails synthesis with the key's name. */
export function sinkSettings(node: Node): SinkSettings {
  const int = (key: string, fallback: number, max: number): number => {
    const v = node.tryGetContext(key) as unknown;
    if (v === undefined) return fallback;
    const n = typeof v === 'string' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > max)
      throw new SettingsError(key, `must be an integer in [0, ${max}] days, 0 for never (got ${JSON.stringify(v)})`);
    return n;
  };
  const text = (key: string, pattern: RegExp): string | undefined => {
    const v = node.tryGetContext(key) as unknown;
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || !pattern.test(v) || v.split('/').some((part) => part === '..' || part === '.'))
      throw new SettingsError(key, `must match ${pattern} (got ${JSON.stringify(v)})`);
    return v;
  };
  const formats = text('sinkFormats', FORMATS) ?? 'jsonl';
  const bucketName = text('sinkBucket', BUCKET_NAME);
  const rawPrefix = text('sinkPrefix', PREFIX) ?? (bucketName ? 'crawl-cluster/' : '');
  const prefix = rawPrefix === '' || rawPrefix.endsWith('/') ? rawPrefix : `${rawPrefix}/`;
  const iaDays = int('sinkIaDays', 30, 36_500);
  const glacierDays = int('sinkGlacierDays', 90, 36_500);
  const expireDays = int('sinkExpireDays', 0, 36_500);
  // S3 moves an object to Standard-IA no sooner than 30 days after its creation, and keeps it there 30 days before
  // the next class; an expiry must come after the last transition.
  if (iaDays !== 0 && iaDays < 30) throw new SettingsError('sinkIaDays', 'must be 0 or at least 30 (an S3 rule)');
  if (glacierDays !== 0 && iaDays !== 0 && glacierDays < iaDays + 30)
    throw new SettingsError('sinkGlacierDays', `must be 0 or at least sinkIaDays + 30 (${iaDays + 30})`);
  const last = Math.max(iaDays, glacierDays);
  if (expireDays !== 0 && expireDays <= last)
    throw new SettingsError('sinkExpireDays', `must be 0 or more than the last transition (${last} days)`);
  return { formats: formats === 'none' ? '' : formats, bucketName, prefix, iaDays, glacierDays, expireDays };
}

/** The settings the sink's event source shares with the monitors'. */
type EventSourceSettings = Pick<Settings, 'eventSourceMode'>;

export interface SinkProps extends SinkSettings {
  network: Network;
  kafka: Kafka;
  storage: Storage;
  /** The monitors' functions: the sink's event source is built like theirs (same error handling, poller group). */
  functions: Functions;
  eventSource: EventSourceSettings;
  logRetention: logs.RetentionDays;
  runtimeEnv: RuntimeEnv;
}

/** Records per invocation: the event's 6 MB payload limit bounds it first at crawl-sized pages. */
const SINK_BATCH_SIZE = 10_000;

/**
 * The function's memory (MB), and the size its WARC files are closed at (bytes): an eighth of it, since a file held
 * while built and written peaks at about three times its size in the process.
 */
const SINK_MEMORY_MB = 1024;
const SINK_WARC_MAX_BYTES = (SINK_MEMORY_MB / 8) * 1024 * 1024;

export class Sink extends Construct {
  readonly fn: CrawlFunction;
  /** The stack's outputs bucket; undefined when the sink writes to an existing bucket (`sinkBucket`). */
  readonly bucket?: s3.Bucket;
  /** SINK_URI of the function: `s3://<bucket>/<prefix>`. */
  readonly uri: string;
  readonly consumerGroup: string;

  constructor(scope: Construct, id: string, props: SinkProps) {
    super(scope, id);
    const { network, kafka, storage } = props;
    let bucket: s3.IBucket;
    if (props.bucketName) {
      bucket = s3.Bucket.fromBucketName(this, 'ExistingOutputs', props.bucketName);
      for (const key of ['sinkIaDays', 'sinkGlacierDays', 'sinkExpireDays'])
        if (this.node.tryGetContext(key) !== undefined)
          Annotations.of(this).addWarningV2(
            'crawl-cluster:sinkLifecycle',
            `${key} is ignored with sinkBucket: the lifecycle of an existing bucket is its owner's`,
          );
    } else {
      this.bucket = new s3.Bucket(this, 'Outputs', {
        ...PRIVATE_BUCKET,
        serverAccessLogsBucket: storage.accessLogs,
        serverAccessLogsPrefix: 'outputs/',
        lifecycleRules: [outputsLifecycle(props)],
      });
      bucket = this.bucket;
    }
    this.uri = `s3://${bucket.bucketName}/${props.prefix}`;
    this.consumerGroup = `${kafka.topicPrefix}.sink`;

    // The batching window is the longest a page waits before it is written, as SINK_FLUSH_S is locally.
    const flushSeconds = Number(props.runtimeEnv.SINK_FLUSH_S ?? VARIABLES.SINK_FLUSH_S.default);
    const timeout = Duration.minutes(5);
    this.fn = new CrawlFunction(this, 'Sink', {
      name: 'sink',
      description: 'crawl-cluster sink: every page on crawled_firehose as WARC and/or JSON lines in S3',
      timeout,
      // The batch (at most 6 MB), one WARC file being built and one page's stored body are in memory.
      memorySize: SINK_MEMORY_MB,
      environment: {
        ...environment(
          {
            SINK_FORMATS: props.formats,
            SINK_URI: this.uri,
            // A WARC file is held whole until written: an eighth of the memory (the default peaks near 800 MB),
            // unless runtimeEnv sets another size.
            ...(props.runtimeEnv.SINK_WARC_MAX_BYTES === undefined
              ? { SINK_WARC_MAX_BYTES: String(SINK_WARC_MAX_BYTES) }
              : {}),
            ...(props.eventSource.eventSourceMode === 'provisioned'
              ? {}
              : { MSK_EVENT_SOURCE_MODE: props.eventSource.eventSourceMode }),
          },
          props.runtimeEnv,
        ),
        POWERTOOLS_SERVICE_NAME: 'sink',
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      },
      vpc: network.vpc,
      subnets: network.privateSubnets,
      securityGroups: [network.functionsSecurityGroup],
      logRetention: props.logRetention,
      luaScripts: false,
    });
    this.fn.node.addDependency(kafka.topicsResource);

    kafka.grantConsume(this.fn.function, kafka.topics.crawledFirehose, this.consumerGroup);
    mskEventSourceGrants(this.fn.role, kafka.clusterArn);
    this.fn.function.addEventSource(
      props.functions.mskEventSource(
        kafka.topics.crawledFirehose,
        this.consumerGroup,
        SINK_BATCH_SIZE,
        Duration.seconds(Math.min(flushSeconds, 300)),
      ),
    );
    acknowledge(
      this.fn.role,
      wildcardResource(this, storage.failedBatches.arnForObjects('*')),
      'Lambda names the objects of failed batches itself (on-failure destination of the MSK event source).',
    );

    // Output: whole objects written, listed and removed under the prefix (lib/sink/s3-output.ts), nothing read.
    const objects = bucket.arnForObjects(`${props.prefix}*`);
    iam.Grant.addToPrincipal({
      grantee: this.fn.function,
      actions: ['s3:PutObject', 's3:DeleteObject'],
      resourceArns: [objects],
    });
    iam.Grant.addToPrincipal({
      grantee: this.fn.function,
      actions: ['s3:ListBucket'],
      resourceArns: [bucket.bucketArn],
      ...(props.prefix === '' ? {} : { conditions: { StringLike: { 's3:prefix': [`${props.prefix}*`] } } }),
    });
    acknowledge(
      this.fn.role,
      wildcardResource(this, objects),
      'The sink names its objects by appid, crawlid, day and Kafka offsets (docs/outputs.md "Layout"), under its prefix.',
    );
    // Bodies too large for a message (body_ref): read whole; ListBucket makes a missing (expired) object read as
    // NoSuchKey rather than AccessDenied, which the sink writes as a truncated record instead of failing the batch.
    iam.Grant.addToPrincipal({
      grantee: this.fn.function,
      actions: ['s3:GetObject'],
      resourceArns: [storage.bodies.arnForObjects('*')],
    });
    iam.Grant.addToPrincipal({
      grantee: this.fn.function,
      actions: ['s3:ListBucket'],
      resourceArns: [storage.bodies.bucketArn],
    });
    acknowledge(
      this.fn.role,
      wildcardResource(this, storage.bodies.arnForObjects('*')),
      'A page names its body by body_ref; the crawler names the objects (by content) at crawl time.',
    );
  }
}

/** The outputs bucket's one rule: Standard-IA, then Glacier Instant Retrieval, then expiry, each when set. */
function outputsLifecycle(props: SinkSettings): s3.LifecycleRule {
  const transitions: s3.Transition[] = [];
  if (props.iaDays > 0)
    transitions.push({ storageClass: s3.StorageClass.INFREQUENT_ACCESS, transitionAfter: Duration.days(props.iaDays) });
  if (props.glacierDays > 0)
    transitions.push({
      storageClass: s3.StorageClass.GLACIER_INSTANT_RETRIEVAL,
      transitionAfter: Duration.days(props.glacierDays),
    });
  return {
    id: 'ArchiveAging',
    abortIncompleteMultipartUploadAfter: Duration.days(1),
    ...(transitions.length > 0 ? { transitions } : {}),
    ...(props.expireDays > 0 ? { expiration: Duration.days(props.expireDays) } : {}),
  };
}
