/**
 * Every environment variable crawl-cluster reads, with its type, default and meaning: the one schema
 * (docs/style.md §5). cdk/ and the local runtime import the names from here so they never drift.
 * Scrapy Cluster's setting names are kept where they exist (docs/design.md §7).
 */
import { CONNECTION_VARIABLES } from './connection-variables.ts';
import { CRAWLER_VARIABLES } from './crawler-variables.ts';
import type { VariableSpec } from './variable-spec.ts';

export type { VariableSpec } from './variable-spec.ts';

/** Every variable, by topic; the connection and crawler fleet variables live in files of their own. */
export const VARIABLES = {
  // Kafka, Redis (./connection-variables.ts)
  ...CONNECTION_VARIABLES,

  // Queue engine (Scrapy Cluster names)
  QUEUE_HITS: {
    type: 'integer',
    default: 10,
    minimum: 1,
    description: 'Default throttle: fetches per window per domain.',
  },
  QUEUE_WINDOW: { type: 'integer', default: 60, minimum: 1, description: 'Default throttle window in seconds.' },
  QUEUE_MODERATED: {
    type: 'boolean',
    default: true,
    description: 'Space the fetches of a domain evenly over the window instead of allowing bursts.',
  },
  SCHEDULER_TYPE_ENABLED: {
    type: 'boolean',
    default: true,
    description: 'Throttle each spider type separately per domain.',
  },
  FRONTIER_PARTITIONS: {
    type: 'integer',
    default: 1,
    minimum: 1,
    maximum: 256,
    description:
      'Partitions each throttle scope of the frontier splits into (a domain belongs to one by a stable hash): set it to a multiple of the Redis Cluster shards so the frontier uses every shard (docs/scale.md). Changing it on a frontier that holds work takes `crawl-cluster frontier reshard`. The URL Frontier store splits the same way, by queue key (docs/url-frontier.md).',
  },
  SCHEDULER_IP_ENABLED: {
    type: 'boolean',
    default: false,
    description: "Throttle per public egress IP as well (each IP gets the domain's full limit).",
  },
  DUPEFILTER_TIMEOUT: {
    type: 'integer',
    default: 600,
    minimum: 1,
    description: 'Seconds a crawl’s dupefilter lives after its last use.',
  },
  DUPEFILTER_CACHE_ENTRIES: {
    type: 'integer',
    default: 250000,
    minimum: 0,
    description:
      'Fingerprints a crawler remembers of what it sent to each crawl’s dupefilter, so it does not send known duplicate links again (at most 32 bytes each; 0 = off).',
  },
  LEASE_TIMEOUT: {
    type: 'integer',
    default: 120,
    minimum: 5,
    description: 'Seconds a crawler may hold a leased request before it is reclaimed.',
  },
  STOP_BLACKLIST_TTL: {
    type: 'integer',
    default: 3600,
    minimum: 60,
    description: 'Seconds a stopped crawl id stays blacklisted (its late children are refused).',
  },

  // Crawler fleet (./crawler-variables.ts)
  ...CRAWLER_VARIABLES,

  // REST API
  WAIT_FOR_RESPONSE_TIME: {
    type: 'integer',
    default: 5,
    minimum: 0,
    maximum: 25,
    description: 'Seconds `POST /feed` waits for the reply to a request with a uuid before answering a poll_id.',
  },
  REST_MAX_IN_FLIGHT: {
    type: 'integer',
    default: 100,
    minimum: 1,
    maximum: 10_000,
    description:
      'Most requests the local REST server handles at once; one more is answered 503 with Retry-After at once, never queued. On AWS the default burst of the API stage (`restBurstLimit`).',
  },
  REST_MAX_CONNECTIONS: {
    type: 'integer',
    default: 4096,
    minimum: 1,
    maximum: 100_000,
    description:
      'Most open connections to the local REST server; a connection past it gets 503 with Retry-After to its first request and is closed, and past twice it is closed unanswered.',
  },
  REST_RETRY_AFTER: {
    type: 'integer',
    default: 1,
    minimum: 1,
    maximum: 3600,
    description: 'Seconds in the Retry-After header of the local REST server’s 503 answers (over a limit above).',
  },

  // Outputs (the sink: docs/outputs.md)
  SINK_FORMATS: {
    type: 'string',
    default: '',
    pattern: '^(|none|warc|jsonl|warc,jsonl|jsonl,warc)$',
    description:
      'What the sink writes of every page on crawled_firehose: `warc`, `jsonl` or `warc,jsonl` (empty: nothing; the stack sets `jsonl` on AWS unless told otherwise).',
  },
  SINK_URI: {
    type: 'string',
    default: '',
    pattern: '^(|s3://[^/]+(/.*)?|file:///.*)$',
    description:
      'Where the sink writes: `s3://bucket/prefix` or `file:///dir` (empty with SINK_FORMATS set: `local` uses <services dir>/outputs; on AWS the stack’s outputs bucket).',
  },
  SINK_WARC_MAX_BYTES: {
    type: 'integer',
    default: 268_435_456,
    minimum: 65_536,
    description:
      'A WARC file is closed before a page that would take it past this many bytes (256 MiB), and written then; the sink holds the file being built in memory (about three times its size at its peak).',
  },
  SINK_FLUSH_S: {
    type: 'integer',
    default: 60,
    minimum: 1,
    maximum: 900,
    description:
      '`local`: the longest the sink holds pages before writing them (it also writes once a batch reaches SINK_WARC_MAX_BYTES of messages, and on stop).',
  },

  // Logging
  LOG_LEVEL: {
    type: 'string',
    default: 'INFO',
    enum: ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'],
    description: 'Log level.',
  },

  // Local services (localstack/ native path)
  CRAWL_SERVICES_DIR: {
    type: 'string',
    default: '',
    description: 'Data, logs and pid files of the local services (empty: <repo>/.services).',
  },
  CRAWL_REDIS_PORT: {
    type: 'integer',
    default: 6379,
    minimum: 1,
    maximum: 65535,
    description: 'Port of the local standalone Redis; also the default of REDIS_PORT when that is not set.',
  },
  CRAWL_REDIS_CLUSTER_PORT: {
    type: 'integer',
    default: 7379,
    minimum: 1,
    maximum: 65535,
    description:
      'Port of the first of the three masters of the local cluster-mode Redis (they listen on it and the next two ports).',
  },
  CRAWL_REDIS_CLUSTER_REPLICAS: {
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 2,
    description:
      'Replicas of each master of the local cluster-mode Redis (on the ports after the masters’), for failover drills.',
  },
  CRAWL_KAFKA_PORT: {
    type: 'integer',
    default: 9092,
    minimum: 1,
    maximum: 65535,
    description:
      'Port of the local Kafka broker; also makes KAFKA_BROKERS default to 127.0.0.1:<port> when that is not set.',
  },
  CRAWL_KAFKA_CONTROLLER_PORT: {
    type: 'integer',
    default: 9093,
    minimum: 1,
    maximum: 65535,
    description: 'Port of the local KRaft controller.',
  },
  CRAWL_KAFKA_HEAP: {
    type: 'string',
    default: '512m',
    pattern: '^[0-9]+[mg]$',
    description: 'Max heap of the local Kafka JVM.',
  },
  CRAWL_SERVICES_TIMEOUT: {
    type: 'integer',
    default: 90,
    minimum: 5,
    description: 'Seconds `services up` waits for each service to be ready.',
  },
  CRAWL_LOCALSTACK: {
    type: 'boolean',
    default: true,
    description: '`services up` runs LocalStack, `local` uses it (S3 bodies, metrics, secret); false: neither.',
  },
  CRAWL_LOCALSTACK_PORT: {
    type: 'integer',
    default: 4566,
    minimum: 1,
    maximum: 65535,
    description: 'Port of the local LocalStack (S3, CloudWatch, CloudWatch Logs, Secrets Manager).',
  },
  CRAWL_LOCALSTACK_PYTHON: {
    type: 'string',
    default: '',
    description: 'Python 3.10 to 3.13 for LocalStack’s virtualenv (empty: python3.11, else python3).',
  },
  CRAWL_CACHE_DIR: {
    type: 'string',
    default: '',
    description:
      'Where LocalStack’s virtualenv is built once per machine and shared by every services directory (empty: ~/.cache/crawl-cluster).',
  },

  // Local runtime (`crawl-cluster local` and `demo`)
  CRAWLER_NODE: {
    type: 'string',
    default: '',
    description:
      'On this machine (`local`, `demo`, `crawl`, tests, benchmarks): the node binary crawler worker processes run on, an absolute path (empty: the Node running them). localstack/toolchain.sh sets the image’s Node 26.',
  },
  LOCAL_BODY_STORE: {
    type: 'string',
    default: 's3',
    enum: ['s3', 'dir'],
    description: '`local`: bodies over the Kafka message limit to S3 in LocalStack (s3) or to BODY_STORE_DIR (dir).',
  },
  LOCAL_REDIS_PASSWORD_SECRET: {
    type: 'string',
    default: '',
    description:
      '`local`: a secret in LocalStack’s Secrets Manager holding REDIS_PASSWORD, read at start (empty: none).',
  },
} as const satisfies Record<string, VariableSpec>;

export type VariableName = keyof typeof VARIABLES;

type ValueOf<S> = S extends { type: 'boolean' }
  ? boolean
  : S extends { type: 'integer' | 'number' }
    ? number
    : S extends { enum: readonly (infer E)[] }
      ? E
      : string;

/** The validated variables, defaults filled in, typed by their spec. */
export type Variables = { -readonly [K in VariableName]: ValueOf<(typeof VARIABLES)[K]> };
