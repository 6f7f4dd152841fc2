/**
 * A page item as a Kafka message that always fits the broker's limit (docs/design.md §10: messages always fit):
 * a body too big goes whole to the body store, then the message is cut until it fits.
 */
import { Buffer } from 'node:buffer';
import { CrawlClusterError } from '../../errors.ts';
import type { OutMessage } from '../../ports.ts';
import type { BodyStore } from '../fetch/body-store.ts';
import type { FetchResult, PageItem } from '../types.ts';

/** A page message that cannot be made to fit the broker's limit: poison, never retried. */
class PageTooLargeError extends CrawlClusterError {}

export interface PageMessageOptions {
  /** The largest message value (`KAFKA_MAX_MESSAGE_BYTES`). */
  maxBytes: number;
  /** Bodies are sent base64 (`KAFKA_BASE_64_ENCODE`). */
  base64: boolean;
  /** Where a body too big for the message goes whole; without one it is only cut. */
  bodyStore?: BodyStore;
  /** The body's key in the store (called only when a body is stored). */
  bodyKey: () => string;
  /** The response the page came from: its bytes are what is stored, so nothing is lost to decoding. */
  response?: FetchResult;
}

/**
 * The page as a message keyed by crawlid, its value the page's JSON as UTF-8 bytes: a crawl's pages are on one
 * partition of the firehose, in order, and the firehose's partitions spread the crawls of one app as of several
 * (Scrapy Cluster sends no key; a key by appid put every page of an app on one partition). Over the limit, the whole body
 * goes to the body store first (`body_ref`), then {@link fitPageMessage} cuts. Mutates `page` (`body_ref`).
 * @throws PageTooLargeError when not even a page without body and links fits.
 */
export async function pageMessage(page: PageItem, options: PageMessageOptions): Promise<OutMessage> {
  const base64Body = options.base64 || page.body_encoding === 'base64';
  // Encoded once, here: the size check, the batching sink and kafkajs all take the bytes as they are (a string
  // value would be measured twice more and encoded again by kafkajs). A string of n UTF-16 units takes at most
  // 3n bytes, so only a page that may be over the limit is measured before it is encoded.
  // A body longer in characters than the limit is over it in bytes: its JSON (6 bytes a character for a body of
  // NULs) is never built.
  const json = page.body.length > options.maxBytes ? undefined : JSON.stringify(page);
  if (json !== undefined && (json.length * 3 <= options.maxBytes || Buffer.byteLength(json) <= options.maxBytes))
    return { key: page.crawlid, value: Buffer.from(json, 'utf8') };
  if (options.bodyStore && page.body.length > 0) {
    // The body as fetched: the response's decoded bytes, which are the first `body_cut_bytes` when the fetcher cut it.
    const full = options.response?.body ?? Buffer.from(page.body, base64Body ? 'base64' : 'utf8');
    // The object keeps the response's content type (S3 serves it back with it); without a response, the store's default.
    const contentType = options.response?.headers['content-type']?.[0];
    page.body_ref = await options.bodyStore.put(options.bodyKey(), full, contentType);
  }
  // Over the limit as it was serialized above, and a `body_ref` only adds to it: no need to serialize it whole again.
  const fitted = fitPageMessage(page, options.maxBytes, base64Body, true);
  if (fitted === undefined) {
    throw new PageTooLargeError(`the page message does not fit ${options.maxBytes} bytes even without body and links`);
  }
  return { key: page.crawlid, value: Buffer.from(fitted, 'utf8') };
}

/** Room left for the truncation flags and JSON punctuation a cut adds. */
const FIT_SLACK_BYTES = 128;

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

/**
 * The longest prefix of `text` whose JSON string form takes at most `bytes` bytes (never ending inside a
 * surrogate pair; base64 bodies are cut to whole quads so the prefix still decodes).
 */
function fitString(text: string, bytes: number, base64: boolean): string {
  let n = Math.min(text.length, Math.max(0, bytes - 2));
  for (;;) {
    if (n > 0 && /[\uD800-\uDBFF]/.test(text.charAt(n - 1))) n--;
    if (base64) n -= n % 4;
    const size = jsonBytes(text.slice(0, n));
    if (size <= bytes || n === 0) return text.slice(0, n);
    // JSON escapes and multi-byte characters: shrink in proportion, at least by one.
    n = Math.min(n - 1, Math.floor((n * bytes) / size));
  }
}

/**
 * The page as a Kafka message value of at most `maxBytes` (docs/design.md §10: messages always fit the broker's
 * limit), or undefined when even an empty body and no links do not fit. What is cut, in order:
 * 1. the body (`body_truncated: true`, **Ext** `body_message_cut: true`; the producer stores the body as fetched
 *    first when it has a body store);
 * 2. the links, keeping the first ones in document order (**Ext** `links_truncated: true`);
 * 3. the spider's `data` (**Ext** `data_truncated: true`, sent as `null`): bounded by the crawler
 *    (MAX_DATA_BYTES), so only a small message limit gets here;
 * 4. `attrs`, as a last resort (**Ext** `attrs_truncated: true`): a crawl's attrs are bounded at validation,
 *    so only a crawl queued before those bounds can get here. Attrs of null (the request had none) stay null.
 * Links are kept before the body because the body can be offloaded (`body_ref`) and links cannot.
 * Linear in the page's size: one serialization of the page (none when the caller knows it is over), one per link,
 * a few of the body's prefix.
 * @param base64Body the body is base64 (`body_encoding: "base64"`: binary, or `KAFKA_BASE_64_ENCODE`): it is cut
 *   to whole quads.
 * @param knownOver the caller has serialized the page and found it over `maxBytes` (a page over 1 MB takes a few
 *   milliseconds a serialization).
 */
export function fitPageMessage(
  page: PageItem,
  maxBytes: number,
  base64Body: boolean,
  knownOver = false,
): string | undefined {
  if (!knownOver) {
    const whole = JSON.stringify(page);
    if (Buffer.byteLength(whole, 'utf8') <= maxBytes) return whole;
  }
  const bare: PageItem = {
    ...page,
    body: '',
    links: [],
    body_truncated: true,
    body_message_cut: true,
    links_truncated: true,
  };
  let fixed = jsonBytes(bare) + FIT_SLACK_BYTES;
  if (fixed > maxBytes && bare.data !== undefined && bare.data !== null) {
    bare.data = null;
    bare.data_truncated = true;
    fixed = jsonBytes(bare) + FIT_SLACK_BYTES;
  }
  if (fixed > maxBytes && bare.attrs !== null) {
    bare.attrs = {};
    bare.attrs_truncated = true;
    fixed = jsonBytes(bare) + FIT_SLACK_BYTES;
  }
  if (fixed > maxBytes) return undefined;
  let room = maxBytes - fixed;
  const links: PageItem['links'] = [];
  for (const link of page.links) {
    const size = jsonBytes(link) + 1;
    if (size > room) break;
    links.push(link);
    room -= size;
  }
  const fitted: PageItem = { ...page, attrs: bare.attrs, links };
  if (bare.attrs_truncated) fitted.attrs_truncated = true;
  if (bare.data_truncated) {
    fitted.data = null;
    fitted.data_truncated = true;
  }
  if (links.length < page.links.length) {
    fitted.links_truncated = true;
    room = 0;
  }
  // A body longer in characters than the room is over it in bytes, without serializing it.
  if (page.body.length > room || jsonBytes(page.body) > room + 2) {
    fitted.body = fitString(page.body, room, base64Body);
    fitted.body_truncated = true;
    fitted.body_message_cut = true;
  }
  const value = JSON.stringify(fitted);
  return Buffer.byteLength(value, 'utf8') <= maxBytes ? value : undefined;
}
