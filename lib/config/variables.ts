/**
 * Every environment variable crawl-cluster reads, with its type, default and meaning: the one schema
 * (docs/style.md §5). cdk/ and the local runtime import the names from here so they never drift.
 * Scrapy Cluster's setting names are kept where they exist (docs/design.md §7).
 */

/** The JSON-schema fragment of one variable; `description` feeds the table of docs/configuration.md. */
export interface VariableSpec {
  type: 'string' | 'integer' | 'number' | 'boolean';
  default?: string | number | boolean;
  minimum?: number;
  maximum?: number;
  enum?: readonly string[];
  minLength?: number;
  pattern?: string;
  description: string;
}

export const VARIABLES = {
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
      "Compression of the crawlers' page messages: zstd stores ~20x fewer bytes than none, gzip ~8x; Scrapy Cluster's Python clients need the zstandard package for zstd.",
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

  // Crawler fleet
  CRAWLER_CONCURRENCY: {
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 1000,
    description:
      'Fetch slots per crawler process. 0 (the default): adaptive, between CRAWLER_CONCURRENCY_MIN and CRAWLER_CONCURRENCY_MAX, growing while every slot is busy and the process has headroom (event-loop delay, CPU of the task, heap, memory) and shrinking when it has none; a number fixes the slots.',
  },
  CRAWLER_CONCURRENCY_MIN: {
    type: 'integer',
    default: 8,
    minimum: 1,
    maximum: 1000,
    description: 'Fewest fetch slots of an adaptive crawler process (CRAWLER_CONCURRENCY=0); it starts at 32 or this.',
  },
  CRAWLER_CONCURRENCY_MAX: {
    type: 'integer',
    default: 256,
    minimum: 1,
    maximum: 1000,
    description:
      'Most fetch slots of an adaptive crawler process (CRAWLER_CONCURRENCY=0): the ceiling however much headroom it measures.',
  },
  CRAWLER_DOMAIN_CONCURRENCY: {
    type: 'integer',
    default: 16,
    minimum: 1,
    maximum: 1000,
    description:
      'Most requests of one domain a crawler process fetches at once: past it the process leases none of that domain until one ends (a slow or dead site cannot hold every slot). On top of the cluster-wide throttle.',
  },
  CRAWLER_PARSE_TIMEOUT_MS: {
    type: 'integer',
    default: 30_000,
    minimum: 100,
    maximum: 600_000,
    description:
      "Time budget of a spider's code on one page, enforced from outside it: a plugin's parse that runs or waits longer (an endless loop included) is stopped and the page counts as a failed try (retried, then given up with the reason).",
  },
  CRAWLER_PLUGIN_MEMORY_MB: {
    type: 'integer',
    default: 256,
    minimum: 16,
    maximum: 16_384,
    description:
      "Heap limit (MiB) of the worker thread that runs plugin spiders' code: a plugin that allocates without end kills that thread, not the crawler; the page fails with the reason.",
  },
  BROWSER_CHROMIUM_PATH: {
    type: 'string',
    default: '/usr/bin/chromium',
    minLength: 1,
    description:
      "Browser workers (CRAWLER_SPIDERS=browser): the Chromium executable (Debian's `chromium`; the browser image's own).",
  },
  BROWSER_PAGES: {
    type: 'integer',
    default: 0,
    minimum: 0,
    maximum: 64,
    description:
      'Browser workers: pages rendered at once per process (0: sized from the task memory, one per 4 × BROWSER_PAGE_MEMORY_MB, 1-8).',
  },
  BROWSER_PAGE_TIMEOUT_MS: {
    type: 'integer',
    default: 30_000,
    minimum: 1000,
    maximum: 600_000,
    description: 'Browser workers: longest a page may take from opening to its rendered HTML; past it the try fails.',
  },
  BROWSER_SETTLE_MS: {
    type: 'integer',
    default: 2000,
    minimum: 0,
    maximum: 60_000,
    description: "Browser workers: after the load event, longest wait for the page's network to go quiet.",
  },
  BROWSER_PAGE_MEMORY_MB: {
    type: 'integer',
    default: 256,
    minimum: 16,
    maximum: 16_384,
    description:
      "Browser workers: V8 heap limit (MiB) of a page's renderer; a script that allocates without end crashes its page only.",
  },
  BROWSER_MAX_REQUESTS: {
    type: 'integer',
    default: 300,
    minimum: 1,
    description: 'Browser workers: requests one page may make, its document included; past it the try fails.',
  },
  BROWSER_MAX_BYTES: {
    type: 'integer',
    default: 20_971_520,
    minimum: 1024,
    description: 'Browser workers: body bytes one page may load, its document included; past it the try fails.',
  },
  BROWSER_CONTEXT_PAGES: {
    type: 'integer',
    default: 50,
    minimum: 1,
    description: "Browser workers: pages a crawl's browser context serves before a fresh one replaces it.",
  },
  BROWSER_BLOCK_RESOURCES: {
    type: 'string',
    default: 'image,font,media',
    pattern: '^[a-z,]*$',
    description:
      'Browser workers: comma-separated resource types refused to pages (image, font, media, stylesheet, script...).',
  },
  CRAWLER_STALL_EXIT_MS: {
    type: 'integer',
    default: 120_000,
    minimum: 0,
    description:
      'A crawler process whose event loop stops for this long (ms) is killed by its watchdog thread so its supervisor (ECS, `local`) starts a new one; its leases are reclaimed. 0: no watchdog.',
  },
  CRAWLER_WORKERS: {
    type: 'integer',
    default: 1,
    minimum: 0,
    maximum: 64,
    description: '`crawl-cluster local`: crawler worker processes to start.',
  },
  CRAWLER_SPIDERS: {
    type: 'string',
    default: '',
    description: 'Comma-separated spider types this crawler leases for (empty: every registered spider).',
  },
  CRAWLER_PLUGINS: {
    type: 'string',
    default: '',
    description:
      'Comma-separated spider plugin modules the crawler loads at start: paths (.ts or .js, relative to the working directory) or package names.',
  },
  USER_AGENT: {
    type: 'string',
    default: 'crawl-cluster/0.1 (+https://github.com/crawl-cluster/crawl-cluster)',
    minLength: 3,
    description: 'Default User-Agent (a crawl request’s `useragent` overrides it).',
  },
  FETCH_TIMEOUT_MS: {
    type: 'integer',
    default: 10_000,
    minimum: 100,
    description: 'Connect, headers and body timeouts of one fetch, each.',
  },
  MAX_BODY_BYTES: {
    type: 'integer',
    default: 10_485_760,
    minimum: 1024,
    description: 'Largest decoded body kept; longer bodies are cut and flagged `body_truncated`.',
  },
  MAX_REDIRECTS: { type: 'integer', default: 5, minimum: 0, maximum: 20, description: 'Redirects followed per fetch.' },
  ALLOW_PRIVATE_NETWORKS: {
    type: 'boolean',
    default: false,
    description: 'Allow fetching loopback, private and link-local addresses (local runs and tests only).',
  },
  ROBOTSTXT_OBEY: { type: 'boolean', default: true, description: 'Obey robots.txt (RFC 9309), cached for the fleet.' },
  RETRY_TIMES: {
    type: 'integer',
    default: 3,
    minimum: 0,
    maximum: 10,
    description: 'Retries of a retryable failure before a `success:false` page.',
  },
  RETRY_BASE_DELAY_MS: {
    type: 'integer',
    default: 2000,
    minimum: 0,
    description: 'Backoff of the first retry; doubles with each further retry.',
  },
  SHUTDOWN_DEADLINE_MS: {
    type: 'integer',
    default: 25_000,
    minimum: 1000,
    description: 'On SIGTERM: time to finish in-flight fetches before releasing them back to the queue.',
  },
  BODY_STORE_DIR: {
    type: 'string',
    default: '',
    description:
      'Local directory for bodies over the Kafka message limit (empty: none; `local` uses <services dir>/bodies).',
  },
  BODY_STORE_BUCKET: {
    type: 'string',
    default: '',
    description: 'S3 bucket for bodies over the Kafka message limit (set on AWS; wins over BODY_STORE_DIR).',
  },
  CRAWLER_HOST_MAP: {
    type: 'string',
    default: '',
    pattern: '^([^=,\\s]+=[0-9a-fA-F.:]+)?(,[^=,\\s]+=[0-9a-fA-F.:]+)*$',
    description: 'Tests and benchmarks: `host=ip,host2=ip` resolved without DNS (the SSRF guard still applies).',
  },
  CRAWLER_TRUSTED_HOSTS: {
    type: 'string',
    default: '',
    description:
      'Tests: comma-separated host names of CRAWLER_HOST_MAP whose address passes the SSRF guard without ALLOW_PRIVATE_NETWORKS (every other private address is still refused).',
  },
  EGRESS_IP: {
    type: 'string',
    default: '',
    description: 'This crawler’s public egress IP, for IP-scoped throttles (SCHEDULER_IP_ENABLED).',
  },

  // REST API
  WAIT_FOR_RESPONSE_TIME: {
    type: 'integer',
    default: 5,
    minimum: 0,
    maximum: 25,
    description: 'Seconds `POST /feed` waits for the reply to a request with a uuid before answering a poll_id.',
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
    description: 'Port of the local standalone Redis.',
  },
  CRAWL_REDIS_CLUSTER_PORT: {
    type: 'integer',
    default: 7379,
    minimum: 1,
    maximum: 65535,
    description: 'Port of the local cluster-mode Redis (one node, all 16384 slots).',
  },
  CRAWL_KAFKA_PORT: {
    type: 'integer',
    default: 9092,
    minimum: 1,
    maximum: 65535,
    description: 'Port of the local Kafka broker.',
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
