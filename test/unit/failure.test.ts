/** The one failure decision (lib/crawl/failure.ts) and the infrastructure/poison split under it (lib/errors.ts). */
import { describe, expect, it } from 'vitest';
import { decideFailure, MAX_DOMAIN_HOLD_MS, RETRY_STATUSES } from '../../lib/crawl/failure.ts';
import { FetchError, type FetchResult } from '../../lib/crawl/types.ts';
import { capDetails, failureCause, InfrastructureError, SchemaValidationError } from '../../lib/errors.ts';

function response(status: number, statusText = ''): FetchResult {
  return {
    requestUrl: 'http://a.example/',
    url: 'http://a.example/',
    status,
    statusText,
    headers: {},
    requestHeaders: {},
    body: Buffer.alloc(0),
    truncated: false,
    redirects: [],
    fetchedMs: 1,
  };
}

/** An error shaped like the ones ioredis and kafkajs throw (their classes are not exported for this). */
function shaped(name: string, message: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), { name }, extra);
}

describe('decideFailure: fetch failures', () => {
  it('retries a timeout with a delay doubling per earlier retry', () => {
    const timeout = new FetchError('timeout', 'no response within 10000 ms');
    expect(decideFailure({ kind: 'fetch', error: timeout }, { retries: 0, baseDelayMs: 100 })).toEqual({
      action: 'retry',
      delayMs: 100,
      reason: 'timeout: no response within 10000 ms',
    });
    expect(decideFailure({ kind: 'fetch', error: timeout }, { retries: 2, baseDelayMs: 100 })).toMatchObject({
      action: 'retry',
      delayMs: 400,
    });
  });

  it('gives up on a timeout once retryTimes retries were spent', () => {
    const timeout = new FetchError('timeout', 'slow');
    expect(decideFailure({ kind: 'fetch', error: timeout }, { retries: 3, retryTimes: 3 })).toEqual({
      action: 'give_up',
      exception: 'timeout: slow',
    });
  });

  it('gives up at once on a blocked address, which retrying cannot fix', () => {
    const blocked = new FetchError('blocked_address', '10.0.0.1 is a private address');
    expect(decideFailure({ kind: 'fetch', error: blocked }, { retries: 0 })).toEqual({
      action: 'give_up',
      exception: 'blocked_address: 10.0.0.1 is a private address',
    });
  });

  it('gives up at once when every proxy refused the credentials; retries when the proxies could not be reached', () => {
    const auth = new FetchError('proxy_auth', 'proxy 10.0.0.5:3128 refused the credentials (407)');
    expect(decideFailure({ kind: 'fetch', error: auth }, { retries: 0 })).toEqual({
      action: 'give_up',
      exception: 'proxy_auth: proxy 10.0.0.5:3128 refused the credentials (407)',
    });
    for (const kind of ['proxy_connect', 'proxy_error'] as const) {
      const error = new FetchError(kind, 'proxy 10.0.0.5:3128 failed');
      expect(decideFailure({ kind: 'fetch', error }, { retries: 0, baseDelayMs: 100 })).toEqual({
        action: 'retry',
        delayMs: 100,
        reason: `${kind}: proxy 10.0.0.5:3128 failed`,
      });
    }
  });

  it('cuts a huge error message to 500 characters in the exception', () => {
    const decision = decideFailure(
      { kind: 'fetch', error: new FetchError('protocol', 'x'.repeat(10_000)) },
      { retries: 9 },
    );
    expect(decision.action === 'give_up' && decision.exception.length).toBe(501);
  });
});

describe('decideFailure: retryable statuses', () => {
  it('retries a 503 no sooner than its Retry-After', () => {
    const d = decideFailure(
      { kind: 'status', response: response(503, 'Service Unavailable'), retryAfterMs: 60_000 },
      { retries: 0 },
    );
    expect(d).toEqual({
      action: 'retry',
      delayMs: 60_000,
      reason: 'HTTP 503 Service Unavailable',
      holdDomainMs: 60_000,
    });
  });

  it('holds the whole domain for a Retry-After on 429 or 503, at most an hour; never for 500 or without one', () => {
    const hold = (status: number, retryAfterMs: number) =>
      (
        decideFailure({ kind: 'status', response: response(status), retryAfterMs }, { retries: 0 }) as {
          holdDomainMs?: number;
        }
      ).holdDomainMs;
    expect(hold(429, 5000)).toBe(5000);
    expect(hold(503, 30 * 86_400_000)).toBe(MAX_DOMAIN_HOLD_MS);
    expect(hold(503, 0)).toBeUndefined();
    expect(hold(500, 5000)).toBeUndefined();
  });

  it('uses the backoff when it is longer than Retry-After', () => {
    const d = decideFailure(
      { kind: 'status', response: response(429), retryAfterMs: 10 },
      { retries: 1, baseDelayMs: 2000 },
    );
    expect(d).toMatchObject({ action: 'retry', delayMs: 4000 });
  });

  it('gives up on a 500 after the last retry, saying the status', () => {
    expect(
      decideFailure(
        { kind: 'status', response: response(500, 'Internal Server Error'), retryAfterMs: 0 },
        { retries: 3 },
      ),
    ).toEqual({
      action: 'give_up',
      exception: 'HTTP 500 Internal Server Error',
    });
  });

  it('retries exactly the statuses of the contract', () => {
    expect([...RETRY_STATUSES].sort((a, b) => a - b)).toEqual([408, 429, 500, 502, 503, 504, 522, 524]);
    expect(decideFailure({ kind: 'status', response: response(404), retryAfterMs: 0 }, { retries: 0 }).action).toBe(
      'give_up',
    );
  });
});

describe('decideFailure: robots and unexpected errors', () => {
  it('gives up on a robots refusal with its reason, never retrying it', () => {
    expect(decideFailure({ kind: 'robots', reason: 'robots.txt disallows this URL' }, { retries: 0 })).toEqual({
      action: 'give_up',
      exception: 'robots.txt disallows this URL',
    });
  });

  it('gives up on a stack overflow while processing a page (poison), never releasing it', () => {
    const d = decideFailure(
      { kind: 'error', error: new RangeError('Maximum call stack size exceeded'), stage: 'process' },
      { retries: 0 },
    );
    expect(d).toEqual({
      action: 'give_up',
      exception: 'the page could not be processed: RangeError: Maximum call stack size exceeded',
    });
  });

  it('gives up on a message over the broker limit at delivery (poison)', () => {
    const tooLarge = shaped(
      'KafkaJSNonRetriableError',
      'The request included a message larger than the max message size',
      {
        cause: shaped('KafkaJSProtocolError', 'message too large', { type: 'MESSAGE_TOO_LARGE', retriable: false }),
      },
    );
    expect(decideFailure({ kind: 'error', error: tooLarge, stage: 'deliver' }, { retries: 0 })).toMatchObject({
      action: 'give_up',
      exception: expect.stringContaining('the page could not be published'),
    });
  });

  it('releases, uncounted, when Redis or Kafka is unreachable', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
    expect(decideFailure({ kind: 'error', error: refused, stage: 'deliver' }, { retries: 3 })).toEqual({
      action: 'release',
      reason: 'infrastructure failed (deliver): Error: connect ECONNREFUSED 127.0.0.1:6379',
    });
  });
});

describe('failureCause', () => {
  it.each([
    ['our InfrastructureError', new InfrastructureError('Kafka did not answer')],
    ['a socket error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    [
      'ioredis giving up on a request',
      shaped('MaxRetriesPerRequestError', 'Reached the max retries per request limit'),
    ],
    ['ioredis with the connection closed', new Error('Connection is closed.')],
    ['a Redis LOADING reply', shaped('ReplyError', 'LOADING Redis is loading the dataset in memory')],
    ['a Redis CLUSTERDOWN reply', shaped('ReplyError', 'CLUSTERDOWN The cluster is down')],
    ['a kafkajs connection error', shaped('KafkaJSConnectionError', 'Connection error: connect ECONNREFUSED')],
    ['ioredis refreshing the slots of a cluster', new Error('Failed to refresh slots cache.')],
    ['ioredis with no cluster yet', new Error("Cluster isn't ready and enableOfflineQueue options is false")],
    [
      'kafkajs retries exhausted on a leader election',
      shaped('KafkaJSNumberOfRetriesExceeded', 'retries', {
        originalError: shaped('KafkaJSProtocolError', 'leader', { type: 'NOT_LEADER_FOR_PARTITION' }),
      }),
    ],
  ])('calls %s infrastructure', (_, error) => {
    expect(failureCause(error)).toBe('infrastructure');
  });

  it.each([
    ['a schema rejection', new SchemaValidationError('schema', [{ path: '/x', message: 'bad' }])],
    ['a Lua script error', shaped('ReplyError', 'ERR user_script:12: Script attempted to access nonexistent global')],
    ['a message too large', shaped('KafkaJSProtocolError', 'too large', { type: 'MESSAGE_TOO_LARGE' })],
    ['a stack overflow', new RangeError('Maximum call stack size exceeded')],
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'x')")],
    ['a thrown string', 'boom'],
    [
      'ioredis refusing a pipeline over two shards (our own bug)',
      new Error('All keys in the pipeline should belong to the same slots allocation group'),
    ],
  ])('calls %s poison', (_, error) => {
    expect(failureCause(error)).toBe('poison');
  });
});

describe('capDetails', () => {
  it('keeps 20 details, each cut to 300 characters, and counts the rest', () => {
    const details = Array.from({ length: 50 }, (_, i) => ({
      path: `/${'p'.repeat(400)}${i}`,
      message: 'm'.repeat(400),
    }));
    const capped = capDetails(details);
    expect(capped).toHaveLength(21);
    expect(capped[0]?.path).toHaveLength(301);
    expect(capped[0]?.message.endsWith('…')).toBe(true);
    expect(capped[20]).toEqual({ path: '', message: 'and 30 more problems' });
  });

  it('leaves a short list as it is', () => {
    expect(capDetails([{ path: '/a', message: 'is required' }])).toEqual([{ path: '/a', message: 'is required' }]);
  });
});
