/**
 * `POST /poll` with `{"poll_id": uuid}`: the reply the redis-monitor stored under that uuid, once (the read
 * deletes it), then 404. Replies are kept for the monitors' `replyTtlSec` (300 s).
 */
import { SchemaValidationError } from '../errors.ts';
import type { ResolvedRestOptions, RestContext } from './context.ts';
import { causeOf, failure, type RestResponse, success } from './envelope.ts';
import { parseReply } from './feed.ts';
import { decodeJsonBody, invalidInput, validatePollRequest } from './input.ts';
import { withTimeout } from './timeout.ts';

/** Handles one `POST /poll` body. */
export async function poll(
  ctx: RestContext,
  options: ResolvedRestOptions,
  body: Uint8Array | undefined,
): Promise<RestResponse> {
  let pollId: string;
  try {
    pollId = validatePollRequest(decodeJsonBody(body, options.maxBodyBytes)).poll_id;
  } catch (error) {
    if (!(error instanceof SchemaValidationError)) throw error;
    return invalidInput(error, options.maxBodyBytes);
  }
  let stored: string | undefined;
  try {
    stored = await withTimeout(ctx.replies.take(pollId), options.probeTimeoutMs, 'Redis');
  } catch (error) {
    ctx.log.error('poll: reading the reply failed', { poll_id: pollId, error: causeOf(error) });
    return failure(500, { message: 'Unable to connect to Redis', cause: causeOf(error) });
  }
  if (stored === undefined) {
    // Not done yet, already taken, expired, or never asked: Scrapy Cluster's answer for all of them.
    return failure(404, { message: 'Could not find matching poll_id' });
  }
  return success(parseReply(stored));
}
