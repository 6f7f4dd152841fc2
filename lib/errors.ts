/**
 * The error taxonomy (STYLE.md §7). Every error the project raises on purpose is one of these, and
 * {@link classifyError} is the one place that decides what happens next: retry, give up, or back off.
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

/** The `error` field of a rejection (CONTRACT.md "Rejections"). */
export type RejectionKind = 'invalid_json' | 'schema' | 'unknown_spider' | 'unknown_type' | 'too_large';

/** A request failed its JSON schema; never retryable. `kind` is the rejection's `error` field. */
export class SchemaValidationError extends CrawlClusterError {
  readonly kind: RejectionKind;
  readonly details: RejectionDetail[];
  constructor(kind: RejectionKind, details: RejectionDetail[]) {
    super(`${kind}: ${details.map((d) => `${d.path || '/'} ${d.message}`).join('; ')}`);
    this.kind = kind;
    this.details = details;
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

/** The target asked us to slow down (429/503 with Retry-After, robots Crawl-delay). */
export class ThrottledError extends CrawlClusterError {
  override readonly retryable = true;
  /** Milliseconds to wait before trying the same target again. */
  readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number) {
    super(message);
    this.retryAfterMs = retryAfterMs;
  }
}

/** A local service (Redis, Kafka) could not be started or did not become ready. */
export class ServiceStartError extends CrawlClusterError {}

/** What to do with a failed operation. */
export type ErrorDecision = { action: 'retry'; delayMs: number } | { action: 'fail' };

/** The one function that maps an error to a decision. Unknown errors are treated as retryable infrastructure faults. */
export function classifyError(error: unknown, baseDelayMs = 1000): ErrorDecision {
  if (error instanceof ThrottledError) return { action: 'retry', delayMs: error.retryAfterMs };
  if (error instanceof CrawlClusterError)
    return error.retryable ? { action: 'retry', delayMs: baseDelayMs } : { action: 'fail' };
  return { action: 'retry', delayMs: baseDelayMs };
}
