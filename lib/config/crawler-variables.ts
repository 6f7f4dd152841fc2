/**
 * The crawler fleet's variables of lib/config/variables.ts: fetch slots, spiders and plugins, browser workers,
 * fetching, retries, shutdown, body store.
 */
import type { VariableSpec } from './variable-spec.ts';

export const CRAWLER_VARIABLES = {
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
    description: 'Fewest fetch slots of an adaptive crawler process (CRAWLER_CONCURRENCY=0); it starts at 128 or this.',
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
  CRAWLER_MAX_LINKS: {
    type: 'integer',
    default: 10_000,
    minimum: 1,
    maximum: 100_000,
    description:
      "Distinct links read from one HTML page: extraction stops at the next one, the page carries the first ones with `links_stopped` saying why, and the crawler logs a warning with the page's URL.",
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
    description:
      'Largest decoded body kept; a longer body is cut there, its page saying `body_truncated: true` and `body_cut: "max_body_bytes"`.',
  },
  CRAWLER_TASK_MEMORY_MIB: {
    type: 'integer',
    default: 0,
    minimum: 0,
    description:
      "The task's memory (MiB) as its orchestrator sets it (the stack sets Fargate's task size; 0: unknown). The crawler's memory limit is the least of this, its cgroup's limit and the machine's memory; bodies in flight get a quarter of it.",
  },
  MAX_REDIRECTS: { type: 'integer', default: 5, minimum: 0, maximum: 20, description: 'Redirects followed per fetch.' },
  ALLOW_PRIVATE_NETWORKS: {
    type: 'boolean',
    default: false,
    description: 'Allow fetching loopback, private and link-local addresses (local runs and tests only).',
  },
  CRAWLER_PROXIES: {
    type: 'string',
    default: '',
    description:
      'Forward proxies every fetch of the crawler goes through (pages, robots.txt, sitemaps; docs/proxies.md): `http://` or `https://` URLs separated by commas, with optional `user:password@` (percent-encoded) and `#name`; a proxy is named by its name or host:port, never its credentials. Empty: direct.',
  },
  CRAWLER_PROXY_GROUPS: {
    type: 'string',
    default: '',
    description:
      'Named groups of forward proxies a crawl chooses with `attrs.proxy` (docs/proxies.md): groups separated by `;`, each `name=` and its proxy URLs as in CRAWLER_PROXIES (`residential=http://u:p@10.0.0.5:3128,http://u:p@10.0.0.6:3128; datacenter=http://10.0.1.5:3128`). A crawl naming no group uses CRAWLER_PROXIES, `none` fetches directly.',
  },
  CRAWLER_PROXY_SESSION_MS: {
    type: 'integer',
    default: 600_000,
    minimum: 1000,
    description:
      'With CRAWLER_PROXIES or CRAWLER_PROXY_GROUPS: how long a domain keeps its proxy, unless a failure through it moves it on first.',
  },
  CRAWLER_PROXY_REST_MS: {
    type: 'integer',
    default: 60_000,
    minimum: 1000,
    description:
      'With CRAWLER_PROXIES or CRAWLER_PROXY_GROUPS: how long a proxy that failed 3 times in a row rests before it takes domains again.',
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
} as const satisfies Record<string, VariableSpec>;
