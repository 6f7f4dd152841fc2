/**
 * The latest failed pages of each crawl, so the dashboard can say why a crawl's pages failed (issue 34): a crawler
 * that publishes a `success:false` page also pushes `{url, status_code, exception, at}` onto the crawl's list
 * (keys.ts `failureLogKey`), trimmed to {@link FAILURES_KEPT} and expiring {@link FAILURE_LOG_TTL_S} after the last
 * failure. One pipelined round trip per failed page (a successful page costs nothing); reads are one LRANGE per
 * crawl asked about, in one pipeline.
 */
import type { CrawlKey, FailureNote } from '../stats-model.ts';
import type { RedisClient } from './client.ts';
import { failureLogKey } from './keys.ts';

/** Failed pages kept per crawl, newest first. */
export const FAILURES_KEPT = 20;
/** A crawl's list lives this long after its last failure (a day: a crawl's dashboard row outlives it rarely). */
export const FAILURE_LOG_TTL_S = 86_400;
/** The longest exception text kept. */
const MAX_EXCEPTION_CHARS = 300;

/** Pushes a failed page onto its crawl's list, trims the list and renews its TTL (one pipeline). */
export async function noteFailure(
  redis: RedisClient,
  prefix: string,
  crawl: CrawlKey,
  note: FailureNote,
): Promise<void> {
  const key = failureLogKey(prefix, crawl.spiderid, crawl.appid, crawl.crawlid);
  const value = JSON.stringify({ ...note, exception: note.exception.slice(0, MAX_EXCEPTION_CHARS) });
  const replies = await redis
    .pipeline()
    .lpush(key, value)
    .ltrim(key, 0, FAILURES_KEPT - 1)
    .expire(key, FAILURE_LOG_TTL_S)
    .exec();
  for (const [error] of replies ?? []) if (error) throw error;
}

/** The latest `n` failed pages of each crawl (newest first), in the order asked; a crawl with none gets `[]`. */
export async function readFailures(
  redis: RedisClient,
  prefix: string,
  crawls: readonly CrawlKey[],
  n = FAILURES_KEPT,
): Promise<FailureNote[][]> {
  if (crawls.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const c of crawls) pipeline.lrange(failureLogKey(prefix, c.spiderid, c.appid, c.crawlid), 0, n - 1);
  const replies = (await pipeline.exec()) ?? [];
  return crawls.map((_, i) => {
    const [error, values] = replies[i] ?? [new Error('no reply for a failure log'), null];
    if (error) throw error;
    return (values as string[]).flatMap((v) => {
      try {
        return [JSON.parse(v) as FailureNote];
      } catch {
        return [];
      }
    });
  });
}
