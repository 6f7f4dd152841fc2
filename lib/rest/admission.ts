/**
 * Admission of requests to a REST server under load: a bound on requests handled at once, and the answer
 * to one over a bound. Nothing waits in a queue: a request over the bound is answered 503 with `Retry-After`
 * at once, so the answer time and the memory of an overloaded server stay bounded, and a client that backs
 * off as told gets in. Used by localstack/runtime/rest-server.ts; on AWS, API Gateway's stage throttling
 * plays this part (cdk/constructs/rest-api.ts).
 */
import { failure, type RestResponse } from './envelope.ts';

/** Which bound refused a request. */
export type OverloadReason = 'in_flight' | 'connections';

/** A count of requests in flight with a ceiling. */
export class InFlightLimit {
  /** Most requests admitted at once. */
  readonly max: number;
  private current = 0;

  /** @param max most requests admitted at once (at least 1). */
  constructor(max: number) {
    this.max = max;
    if (!Number.isSafeInteger(max) || max < 1)
      throw new RangeError(`max in flight must be an integer >= 1, got ${max}`);
  }

  /** Requests admitted and not yet done. */
  get inFlight(): number {
    return this.current;
  }

  /** Admits one request when under the ceiling; the caller then owes exactly one {@link leave}. */
  tryEnter(): boolean {
    if (this.current >= this.max) return false;
    this.current += 1;
    return true;
  }

  /** Ends an admitted request. */
  leave(): void {
    if (this.current > 0) this.current -= 1;
  }
}

/**
 * The answer to a request over a bound: 503 in the API's FAILURE envelope with `Retry-After: retryAfterSec`;
 * `error.cause` names the variable of the bound. Build it once per reason and send it as often as needed.
 */
export function overloadedResponse(reason: OverloadReason, limit: number, retryAfterSec: number): RestResponse {
  const what =
    reason === 'in_flight'
      ? `${count(limit, 'request')} already being handled, its limit`
      : `${count(limit, 'connection')} already open, its limit`;
  return failure(
    503,
    {
      message: `The REST service is overloaded (${what}); retry after ${count(retryAfterSec, 'second')}`,
      cause: reason === 'in_flight' ? 'REST_MAX_IN_FLIGHT' : 'REST_MAX_CONNECTIONS',
    },
    { headers: { 'retry-after': String(retryAfterSec) } },
  );
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
