/**
 * The error taxonomy (docs/style.md §7). Every error the project raises on purpose is one of these, and
 * {@link failureCause} is the one place that tells infrastructure from poison; the crawl path's decision on
 * top of it (retry, give up, release) is lib/crawl/failure.ts.
 */

/** One actionable problem with an input: where it is and what is wrong. */
export interface RejectionDetail {
  /** JSON pointer into the input, `''` for the whole document (e.g. `/priority`). */
  path: string;
  /** A sentence a person can act on (e.g. `must be <= 100`). */
  message: string;
}

/** Base class: `retryable` says whether the same operation may succeed later unchanged. */
export class CrawlClusterError extends Error {
  readonly retryable: boolean = false;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * Some items of a batch operation failed and the others succeeded (e.g. the frontier's ackMany: one script call per
 * partition). `results[i]` is item i's result when it succeeded, `errors[i]` its error when it failed. Its cause is
 * the first error, so {@link failureCause} classifies it as that error.
 */
export class PartialBatchError<T> extends Error {
  readonly results: readonly (T | undefined)[];
  readonly errors: readonly unknown[];
  constructor(results: readonly (T | undefined)[], errors: readonly unknown[]) {
    const failed = errors.filter((e) => e !== undefined);
    const first = failed[0];
    super(`${failed.length} of ${results.length} failed: ${first instanceof Error ? first.message : String(first)}`, {
      cause: first,
    });
    this.name = 'PartialBatchError';
    this.results = results;
    this.errors = errors;
  }
}

/** The `error` field of a rejection (docs/contract.md "Rejections"). */
export type RejectionKind =
  | 'invalid_json'
  | 'schema'
  | 'unknown_spider'
  /** A crawl's `attrs.proxy` names no proxy group of the fleet (docs/proxies.md). */
  | 'unknown_proxy_group'
  | 'unknown_type'
  | 'too_large'
  /** A crawl request for a crawlid stopped (or expired) a short while ago (`STOP_BLACKLIST_TTL`). */
  | 'stopped'
  /** A seed on a domain whose `domain_max_pages` the crawl has reached. */
  | 'capped'
  /** A seed already in its crawl's dupefilter, of a crawl with nothing pending: nothing will be fetched. */
  | 'duplicate'
  /** Valid, but handling it failed in a way that retrying cannot fix (docs/design.md §10). */
  | 'unprocessable';

/** At most this many details travel in a rejection; the last one then says how many were left out. */
export const MAX_REJECTION_DETAILS = 20;
/** Longest `path` and `message` of one detail, in characters. */
export const MAX_DETAIL_CHARS = 300;

/**
 * Details bounded for the wire (docs/design.md §10: echoes capped): a request with 90,000 unknown fields gets
 * twenty details and a count, not a 5 MB rejection that no topic accepts.
 */
export function capDetails(details: readonly RejectionDetail[]): RejectionDetail[] {
  const cut = (s: string) => (s.length <= MAX_DETAIL_CHARS ? s : `${s.slice(0, MAX_DETAIL_CHARS)}…`);
  const kept = details.slice(0, MAX_REJECTION_DETAILS).map((d) => ({ path: cut(d.path), message: cut(d.message) }));
  if (details.length > MAX_REJECTION_DETAILS) {
    kept.push({ path: '', message: `and ${details.length - MAX_REJECTION_DETAILS} more problems` });
  }
  return kept;
}

/** A request failed its JSON schema; never retryable. `kind` is the rejection's `error` field. */
export class SchemaValidationError extends CrawlClusterError {
  readonly kind: RejectionKind;
  /** At most {@link MAX_REJECTION_DETAILS} (+1 saying how many more), each cut to {@link MAX_DETAIL_CHARS}. */
  readonly details: RejectionDetail[];
  constructor(kind: RejectionKind, details: readonly RejectionDetail[]) {
    const capped = capDetails(details);
    super(`${kind}: ${capped.map((d) => `${d.path || '/'} ${d.message}`).join('; ')}`);
    this.kind = kind;
    this.details = capped;
  }
}

/** A configuration variable is missing or invalid; raised once at start. */
export class ConfigError extends CrawlClusterError {
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.variable = variable;
  }
}

/** Infrastructure (Redis, Kafka, the network) is unreachable or failed; the caller should retry. */
export class InfrastructureError extends CrawlClusterError {
  override readonly retryable = true;
}

/** A local service (Redis, Kafka) could not be started or did not become ready. */
export class ServiceStartError extends CrawlClusterError {}

/**
 * What a failure says about the work that met it (docs/design.md §10):
 * - `infrastructure`: Redis, Kafka or the network to them failed; the same work will succeed once they are
 *   back, so it is retried as it is (released, redelivered) and never counted against the input.
 * - `poison`: the input itself cannot be handled (a protocol refusal such as a message over the broker's
 *   limit, a script error, a bug meeting strange data); the same work fails the same way every time, so it
 *   gets a visible outcome now (a rejection, a `success:false` page) and is never retried as infrastructure.
 */
export type FailureCause = 'infrastructure' | 'poison';

/** Node socket and DNS error codes: the network to Redis or Kafka. */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ERR_SOCKET_CLOSED',
]);

/** ioredis errors raised when no Redis answered. */
const REDIS_UNREACHABLE: ReadonlySet<string> = new Set([
  'MaxRetriesPerRequestError',
  'ClusterAllFailedError',
  'AbortError',
]);

/**
 * Messages of ioredis's cluster client when its view of the cluster is wrong or unavailable (slots being refreshed, a
 * shard failing over, too many redirections): the same command succeeds once the client has a good view again, so
 * they are infrastructure, never a verdict on the input. Not among them: "All keys in the pipeline should belong to
 * the same slots allocation group", ioredis refusing a pipeline whose keys live on two shards. Every pipeline of ours
 * stays in one hash tag (lib/redis/keys.ts), so that refusal is a bug of ours that fails the same way every time:
 * poison, so the work gets a visible outcome instead of being retried for ever.
 */
const REDIS_CLUSTER_CLIENT =
  /^(Failed to refresh slots cache|Cluster isn't ready|Too many Cluster redirections|None of startup nodes is available)/;

/** Redis error replies that say the server is (temporarily) unable, not that the command was wrong. */
const REDIS_TRANSIENT_REPLY =
  /^(LOADING|BUSY|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|READONLY|MOVED|ASK|NOSCRIPT|OOM|NOREPLICAS)\b/;

/** Kafka protocol errors about the message itself: sending it again fails the same way. */
const KAFKA_POISON_TYPES: ReadonlySet<string> = new Set([
  'MESSAGE_TOO_LARGE',
  'RECORD_LIST_TOO_LARGE',
  'INVALID_RECORD',
  'CORRUPT_MESSAGE',
  'INVALID_TOPIC_EXCEPTION',
  'INVALID_REQUEST',
]);

/** The error and the errors it wraps (`cause`, kafkajs's `originalError`), at most 8 deep. */
function chain(error: unknown): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  let e: unknown = error;
  while (typeof e === 'object' && e !== null && out.length < 8) {
    const r = e as Record<string, unknown>;
    out.push(r);
    e = r.cause ?? r.originalError;
  }
  return out;
}

/**
 * The one place that tells infrastructure from poison ({@link FailureCause}). Our own errors say it with
 * `retryable`; Redis and Kafka client errors by name, code and reply; anything else (a TypeError, a
 * RangeError from a stack overflow) is a deterministic failure of this input, i.e. poison. Callers that
 * cannot afford to misjudge an unknown error as poison (the kafka-monitor, where it would reject a valid
 * request) isolate it first: the same input alone, after others succeeded (see lib/monitor/kafka-monitor.ts).
 */
export function failureCause(error: unknown): FailureCause {
  for (const e of chain(error)) {
    if (e instanceof CrawlClusterError) return e.retryable ? 'infrastructure' : 'poison';
    const name = typeof e.name === 'string' ? e.name : '';
    const message = typeof e.message === 'string' ? e.message : '';
    if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return 'infrastructure';
    if (REDIS_UNREACHABLE.has(name)) return 'infrastructure';
    if (name === 'ReplyError') return REDIS_TRANSIENT_REPLY.test(message) ? 'infrastructure' : 'poison';
    if (message === 'Connection is closed.' || message.startsWith("Stream isn't writeable")) return 'infrastructure';
    if (REDIS_CLUSTER_CLIENT.test(message)) return 'infrastructure';
    if (name === 'KafkaJSProtocolError') return KAFKA_POISON_TYPES.has(String(e.type)) ? 'poison' : 'infrastructure';
  }
  // kafkajs wraps what it retried; the protocol error inside (checked above) decides, else the broker failed.
  const outer = chain(error)[0];
  if (outer !== undefined && typeof outer.name === 'string' && outer.name.startsWith('KafkaJS'))
    return 'infrastructure';
  return 'poison';
}
