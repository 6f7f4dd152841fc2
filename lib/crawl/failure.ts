/**
 * The one failure decision of the crawl path (docs/design.md §10, docs/style.md §7). Every way a leased request can
 * fail comes here as a {@link CrawlFailure}, and {@link decideFailure} says what happens next:
 * - `retry`: back in the queue after a growing delay, counted in the request's `retries` (bounded by
 *   `retryTimes`, docs/contract.md behaviour 6);
 * - `give_up`: a `success:false` page with the reason is published and the request is acked (nothing an
 *   application asked for disappears without a trace);
 * - `release`: the request goes back unchanged and uncounted for another crawler, only ever because
 *   Redis or Kafka failed (infrastructure), never because of the page: a poison page that was released
 *   would be fetched forever.
 */
import { failureCause } from '../errors.ts';
import type { FetchError, FetchResult } from './types.ts';

/** HTTP statuses that are retried (docs/contract.md behaviour 6). */
export const RETRY_STATUSES: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504, 522, 524]);

/** Where in the crawl of one request an unexpected error was thrown. */
type CrawlStage =
  /** robots, fetch, extraction, spider, page building: work on the page itself. */
  | 'process'
  /** publishing the page and acking it: Kafka and Redis. */
  | 'deliver';

/** One failure of a leased request. */
export type CrawlFailure =
  /** The fetch produced no response (timeout, refused, blocked address...). */
  | { kind: 'fetch'; error: FetchError }
  /** A response with a retryable status; `retryAfterMs` from its Retry-After (0 when none). */
  | { kind: 'status'; response: FetchResult; retryAfterMs: number }
  /** robots.txt refused the URL; `reason` says whether it disallows it or could not be read. */
  | { kind: 'robots'; reason: string }
  /**
   * The page's processing overran a budget enforced from outside it (lib/crawl/spiders/sandbox.ts): a spider's parse
   * that ran or waited past its time budget, or the spider thread that ran out of memory. Counted as a failed try
   * and retried (the page may be slow only under load); given up with `reason` after the last retry.
   */
  | { kind: 'budget'; reason: string }
  /** Anything else that was thrown, at `stage`. */
  | { kind: 'error'; error: unknown; stage: CrawlStage };

/** What happens to the request. */
export type FailureDecision =
  /**
   * `holdDomainMs`: a Retry-After on 429/503 holds the whole domain that long (cluster-wide), at most
   * {@link MAX_DOMAIN_HOLD_MS}.
   */
  | { action: 'retry'; delayMs: number; reason: string; holdDomainMs?: number }
  | { action: 'give_up'; exception: string }
  | { action: 'release'; reason: string };

export interface FailurePolicy {
  /** How many times the request was retried already (the lease's `retries`). */
  retries: number;
  /**
   * Retries before giving up.
   * @default 3
   */
  retryTimes?: number;
  /**
   * Delay before the first retry; each later one doubles it.
   * @default 2000
   */
  baseDelayMs?: number;
}

/** The longest reason text put in a page's `exception`. */
const MAX_REASON_CHARS = 500;

function cut(s: string): string {
  return s.length <= MAX_REASON_CHARS ? s : `${s.slice(0, MAX_REASON_CHARS)}…`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Statuses whose Retry-After holds the whole domain (the site is overloaded or rate limiting us). */
const DOMAIN_HOLD_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** The longest a Retry-After holds a domain: a hostile or broken header cannot park a site for days. */
export const MAX_DOMAIN_HOLD_MS = 3_600_000;

/** Decides what happens to a request after `failure` (see the module doc). Pure: no I/O, no clock. */
export function decideFailure(failure: CrawlFailure, policy: FailurePolicy): FailureDecision {
  const retryTimes = policy.retryTimes ?? 3;
  const baseDelayMs = policy.baseDelayMs ?? 2000;
  const canRetry = policy.retries < retryTimes;
  const backoff = baseDelayMs * 2 ** policy.retries;
  switch (failure.kind) {
    case 'fetch': {
      const reason = cut(`${failure.error.kind}: ${failure.error.message}`);
      if (failure.error.retryable && canRetry) return { action: 'retry', delayMs: backoff, reason };
      return { action: 'give_up', exception: reason };
    }
    case 'status': {
      const { status, statusText } = failure.response;
      const reason = `HTTP ${status} ${statusText}`.trim();
      if (RETRY_STATUSES.has(status) && canRetry) {
        const decision: FailureDecision = { action: 'retry', delayMs: Math.max(failure.retryAfterMs, backoff), reason };
        // A site that says when to come back (429, 503 with Retry-After) means the site, not the one URL.
        if (failure.retryAfterMs > 0 && DOMAIN_HOLD_STATUSES.has(status))
          decision.holdDomainMs = Math.min(failure.retryAfterMs, MAX_DOMAIN_HOLD_MS);
        return decision;
      }
      return { action: 'give_up', exception: reason };
    }
    case 'robots':
      return { action: 'give_up', exception: failure.reason };
    case 'budget': {
      const reason = cut(failure.reason);
      if (canRetry) return { action: 'retry', delayMs: backoff, reason };
      return { action: 'give_up', exception: reason };
    }
    case 'error': {
      const message = cut(messageOf(failure.error));
      if (failureCause(failure.error) === 'infrastructure') {
        return { action: 'release', reason: `infrastructure failed (${failure.stage}): ${message}` };
      }
      // Poison: the page (or a bug it meets) fails the same way every time. At `deliver` the page message
      // itself was refused (e.g. over the broker's limit): the give-up page carries no body or links.
      const what = failure.stage === 'process' ? 'the page could not be processed' : 'the page could not be published';
      return { action: 'give_up', exception: `${what}: ${message}` };
    }
  }
}
