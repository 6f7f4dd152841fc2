/**
 * The connection variables of lib/config/variables.ts: Kafka (and the AWS services beside it), Redis.
 */
import type { VariableSpec } from './variable-spec.ts';

export const CONNECTION_VARIABLES = {
  // Kafka
  KAFKA_BROKERS: {
    type: 'string',
    default: '127.0.0.1:9092',
    minLength: 1,
    description: 'Comma-separated Kafka bootstrap brokers (host:port).',
  },
  KAFKA_TOPIC_PREFIX: {
    type: 'string',
    default: 'demo',
    pattern: '^[A-Za-z0-9._-]{1,100}$',
    description: 'Prefix of every topic: <prefix>.incoming, <prefix>.crawled_firehose, ...',
  },
  KAFKA_CLIENT_ID: { type: 'string', default: 'crawl-cluster', minLength: 1, description: 'Kafka client id.' },
  KAFKA_SASL_MECHANISM: {
    type: 'string',
    default: 'none',
    enum: ['none', 'aws-msk-iam'],
    description: 'Kafka authentication: none (plaintext, local) or aws-msk-iam (SASL OAUTHBEARER with IAM, MSK).',
  },
  KAFKA_SSL: { type: 'boolean', default: false, description: 'Use TLS to the brokers (implied by aws-msk-iam).' },
  KAFKA_APPID_TOPICS: {
    type: 'boolean',
    default: false,
    description: 'Also publish pages and replies to per-app topics <prefix>.crawled_<appid> / outbound_<appid>.',
  },
  KAFKA_APPID_TOPICS_MAX: {
    type: 'integer',
    default: 100,
    minimum: 0,
    maximum: 10_000,
    description:
      'With KAFKA_APPID_TOPICS, the most apps whose per-app topics are created on first use (0: none; an app over it gets an error log and no copies).',
  },
  KAFKA_BASE_64_ENCODE: { type: 'boolean', default: false, description: 'Send page bodies base64-encoded.' },
  KAFKA_TOPIC_PARTITIONS: {
    type: 'integer',
    default: 3,
    minimum: 1,
    maximum: 1000,
    description: 'Partitions per topic for `crawl-cluster topics create` and per-app topics created on first use.',
  },
  KAFKA_MAX_MESSAGE_BYTES: {
    type: 'integer',
    default: 1_000_000,
    minimum: 10_000,
    description: 'Largest message produced; bigger page bodies go to the object store.',
  },
  KAFKA_COMPRESSION: {
    type: 'string',
    enum: ['none', 'gzip', 'zstd'],
    default: 'none',
    description:
      "Compression of the crawlers' page messages: zstd stores ~16x fewer bytes than none, gzip ~3.5x (article pages in the crawl bench, docs/cost.md); Scrapy Cluster's Python clients need the zstandard package for zstd.",
  },
  KAFKA_CONNECT_TIMEOUT_MS: {
    type: 'integer',
    default: 5000,
    minimum: 100,
    description: 'Timeout of one broker connection attempt.',
  },
  AWS_REGION: { type: 'string', default: 'us-east-1', description: 'AWS region (MSK IAM signing, S3, CloudWatch).' },
  AWS_ENDPOINT_URL: {
    type: 'string',
    default: '',
    pattern: '^(https?://[^\\s/]+/?)?$',
    description:
      'AWS emulator for S3, CloudWatch, Secrets Manager, signed with key test (empty: AWS; `local`: LocalStack).',
  },
  MSK_EVENT_SOURCE_MODE: {
    type: 'string',
    default: 'provisioned',
    enum: ['provisioned', 'on-demand'],
    description:
      'AWS, set by the stack (-c eventSourceMode): the mode of the MSK-triggered functions’ event sources; on-demand ones ignore a partial batch response, so a failed record fails the whole batch.',
  },

  // Redis
  REDIS_HOST: { type: 'string', default: '127.0.0.1', minLength: 1, description: 'Redis / Valkey host.' },
  REDIS_PORT: { type: 'integer', default: 6379, minimum: 1, maximum: 65535, description: 'Redis / Valkey port.' },
  REDIS_CLUSTER: {
    type: 'boolean',
    default: false,
    description: 'Connect with the cluster client (ElastiCache cluster mode, Serverless).',
  },
  REDIS_TLS: { type: 'boolean', default: false, description: 'Use TLS to Redis (required on ElastiCache).' },
  REDIS_USERNAME: { type: 'string', default: '', description: 'Redis ACL / RBAC user name (empty: none).' },
  REDIS_PASSWORD: { type: 'string', default: '', description: 'Redis AUTH token or RBAC password (empty: none).' },
  REDIS_PASSWORD_SECRET_ARN: {
    type: 'string',
    default: '',
    description:
      'AWS: a Secrets Manager secret holding REDIS_PASSWORD, read once at cold start (the stack sets it on the functions).',
  },
  REDIS_KEY_PREFIX: {
    type: 'string',
    default: 'cc',
    pattern: '^[A-Za-z0-9:_-]{1,64}$',
    description: 'Prefix of every Redis key, so several clusters (or test runs) can share one Redis.',
  },
  URL_FRONTIER_ADVERTISE: {
    type: 'string',
    default: '',
    pattern: '^$|^[^\\s:]+:[0-9]{1,5}$',
    description:
      "The URL Frontier address ListNodes reports (`host:port`; the stack sets its load balancer). Empty: the bound address, or this host's first non-internal IPv4 when bound to every interface.",
  },
} as const satisfies Record<string, VariableSpec>;
