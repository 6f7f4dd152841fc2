/**
 * `POST /feed`: validate first (Scrapy Cluster passed invalid input through to the kafka-monitor; here the
 * caller gets a 400 with the rejection details), produce to `<p>.incoming` keyed by appid, then, for a
 * request with a uuid (action, stats, domain config), wait for the redis-monitor's stored reply. As in Scrapy
 * Cluster, only a reply that arrives after the request counts, and only one for the request's appid: an older reply
 * stored under the same uuid (any app's) is never the answer.
 */
import { SchemaValidationError } from '../errors.ts';
import { clusterTopics } from '../kafka/topics.ts';
import { fleetAwareParser } from '../monitor/context.ts';
import { type ClassifiedRequest, parseRequest, type RequestType } from '../schemas/index.ts';
import { type ResolvedRestOptions, type RestContext, realSleep } from './context.ts';
import { causeOf, failure, type RestResponse, success } from './envelope.ts';
import { invalidInput } from './input.ts';
import { withTimeout } from './timeout.ts';

/** The answer, and the request type when the request was valid (for the `rest:plugin:<type>` counter). */
export interface FeedOutcome {
  response: RestResponse;
  type?: RequestType;
}

/** Handles one `POST /feed` body. */
export async function feed(
  ctx: RestContext,
  options: ResolvedRestOptions,
  body: Uint8Array | undefined,
): Promise<FeedOutcome> {
  let classified: ClassifiedRequest;
  // The accepted spider types and proxy groups, cached; when the fleet's registry cannot be read, the kafka-monitor checks alone.
  const parse = await fleetAwareParser(ctx).catch(
    () => async (raw: Uint8Array | string, o?: { maxBytes?: number }) => parseRequest(raw, o),
  );
  try {
    classified = await parse(body ?? new Uint8Array(), { maxBytes: options.maxBodyBytes });
  } catch (error) {
    if (!(error instanceof SchemaValidationError)) throw error;
    return { response: invalidInput(error, options.maxBodyBytes) };
  }
  const { type, request } = classified;
  // Before producing: the reply store's clock, so that only a reply stored after this request is taken.
  let mark: number | undefined;
  let markError: unknown;
  if (classified.type !== 'crawl') {
    try {
      mark = await withTimeout(ctx.replies.mark(classified.request.uuid), options.probeTimeoutMs, 'Redis');
    } catch (error) {
      markError = error;
    }
  }
  try {
    // The validated request (defaults filled, bare host given its scheme): the kafka-monitor validates it
    // again and reaches the same result.
    const message = { key: request.appid, value: JSON.stringify(request) };
    await withTimeout(
      ctx.sink.send([{ topic: clusterTopics(ctx.topicPrefix).incoming, messages: [message] }]),
      options.sendTimeoutMs,
      'Kafka',
    );
  } catch (error) {
    ctx.log.error('feed: producing the request failed', { type, appid: request.appid, error: causeOf(error) });
    return { type, response: failure(500, { message: 'Unable to connect to Kafka', cause: causeOf(error) }) };
  }
  if (classified.type === 'crawl') return { type, response: success(null) };
  const { uuid, appid } = classified.request;
  if (mark === undefined) return { type, response: redisFailure(ctx, uuid, markError) };
  return { type, response: await waitForReply(ctx, options, { uuid, appid, after: mark }) };
}

/** The answer when the reply store cannot be read: the request is on its way, so the caller may poll once it is back. */
function redisFailure(ctx: RestContext, uuid: string, error: unknown): RestResponse {
  ctx.log.error('feed: reading the reply failed', { uuid, error: causeOf(error) });
  return failure(500, { message: 'Unable to connect to Redis', cause: causeOf(error) }, { data: { poll_id: uuid } });
}

/**
 * Reads the stored reply of `appid` stamped `after` or later every `pollIntervalMs` until `waitForResponseMs` has
 * passed (at least once, and once more at the deadline). A reply that arrives later stays stored for `POST /poll`.
 */
async function waitForReply(
  ctx: RestContext,
  options: ResolvedRestOptions,
  wanted: { uuid: string; appid: string; after: number },
): Promise<RestResponse> {
  const { uuid, appid, after } = wanted;
  const sleep = ctx.sleep ?? realSleep;
  const deadline = ctx.now() + options.waitForResponseMs;
  for (;;) {
    let stored: string | undefined;
    try {
      stored = await withTimeout(ctx.replies.take(uuid, { appid, after }), options.probeTimeoutMs, 'Redis');
    } catch (error) {
      return redisFailure(ctx, uuid, error);
    }
    if (stored !== undefined) return success(parseReply(stored));
    const left = deadline - ctx.now();
    if (left <= 0) return success({ poll_id: uuid });
    await sleep(Math.min(options.pollIntervalMs, left));
  }
}

/** A stored reply as the redis-monitor wrote it (JSON); anything else is handed back as the string. */
export function parseReply(stored: string): unknown {
  try {
    return JSON.parse(stored) as unknown;
  } catch {
    return stored;
  }
}
