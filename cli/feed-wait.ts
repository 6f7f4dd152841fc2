/**
 * What `feed` hears back after sending: the kafka-monitor (or the frontier) may still refuse a request that passed
 * local validation (an unknown spider, a stopped or finished crawl, a capped domain; docs/contract.md "Rejections").
 * A rejection goes to `<p>.rejected`, and to `<p>.outbound_firehose` when the request carried appid and uuid or is a
 * refused crawl request. {@link FeedAnswers} matches what is read on those topics to the requests sent: by uuid, or
 * for a request without one, by appid and crawlid. No I/O, so the matching is unit-testable.
 */
import type { Message } from './reply-wait.ts';

/** A request as sent (feed-command.ts `FeedItem` is one): where it was, and what its answers are matched by. */
export interface SentRequest {
  line?: number;
  appid: string;
  crawlid?: string;
  uuid?: string;
}

/** A request the cluster refused after it was sent. */
export interface FeedRefusal {
  line?: number;
  appid: string;
  crawlid?: string;
  uuid?: string;
  /** The rejection as it came (`error`, `details`, ...). */
  rejection: Message;
}

export class FeedAnswers {
  readonly #byUuid = new Map<string, SentRequest>();
  readonly #byCrawl = new Map<string, SentRequest[]>();
  /** Requests that heard back (a reply or a rejection), so the wait can end once every uuid is answered. */
  readonly #answered = new Set<SentRequest>();
  readonly refusals: FeedRefusal[] = [];

  constructor(items: readonly SentRequest[] = []) {
    for (const item of items) this.track(item);
  }

  /** Adds a request sent (or about to be) whose answers are to be matched. */
  track(item: SentRequest): void {
    if (item.uuid !== undefined) this.#byUuid.set(`${item.appid}\n${item.uuid}`, item);
    else if (item.crawlid !== undefined) {
      const key = `${item.appid}\n${item.crawlid}`;
      const same = this.#byCrawl.get(key);
      if (same === undefined) this.#byCrawl.set(key, [item]);
      else same.push(item);
    }
  }

  /**
   * Takes one message read from `<p>.outbound_firehose` or `<p>.rejected`.
   * @returns the refusal when it refused one of the requests sent (each request is refused at most once)
   */
  offer(message: Message): FeedRefusal | undefined {
    const { appid, uuid, crawlid } = message;
    if (typeof appid !== 'string') return undefined;
    let item: SentRequest | undefined;
    if (typeof uuid === 'string') item = this.#byUuid.get(`${appid}\n${uuid}`);
    else if (typeof crawlid === 'string' && typeof message.error === 'string') {
      item = this.#byCrawl.get(`${appid}\n${crawlid}`)?.find((i) => !this.#answered.has(i));
    }
    if (item === undefined || this.#answered.has(item)) return undefined;
    this.#answered.add(item);
    if (typeof message.error !== 'string') return undefined;
    const refusal: FeedRefusal = { appid: item.appid, rejection: message };
    if (item.line !== undefined) refusal.line = item.line;
    if (item.crawlid !== undefined) refusal.crawlid = item.crawlid;
    if (item.uuid !== undefined) refusal.uuid = item.uuid;
    this.refusals.push(refusal);
    return refusal;
  }

  /**
   * Every request has heard back: each one with a uuid got its reply or rejection, each crawl request without one
   * was refused. A crawl request hears back only when refused, so while one is not the wait runs its full time.
   */
  settled(): boolean {
    const all = [...this.#byUuid.values(), ...[...this.#byCrawl.values()].flat()];
    return all.every((i) => this.#answered.has(i));
  }
}

/** A refusal for a person: where it was, which request, and why (its kind and first detail). */
export function refusalLine(r: FeedRefusal): string {
  const where = r.line === undefined ? '' : `line ${r.line}: `;
  const ids = [`appid=${r.appid}`];
  if (r.crawlid !== undefined) ids.push(`crawlid=${r.crawlid}`);
  if (r.uuid !== undefined) ids.push(`uuid=${r.uuid}`);
  const details = Array.isArray(r.rejection.details)
    ? (r.rejection.details as { path?: string; message?: string }[])
    : [];
  const why = details.map((d) => `${d.path ? `${d.path} ` : ''}${d.message ?? ''}`.trim()).join('; ');
  return `${where}rejected by the cluster (${ids.join(' ')}): ${String(r.rejection.error)}${why ? `: ${why}` : ''}`;
}
