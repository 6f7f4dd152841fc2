import type * as grpc from '@grpc/grpc-js';
import { normaliseCrawl, type PutItem, type PutStatus, queueKeyOf } from '../redis/url-frontier/model.ts';
import type { UrlFrontierStore } from '../redis/url-frontier/store.ts';
import {
  bidi,
  checkFields,
  echo,
  fromMetadata,
  INVALID,
  knownItem,
  NOT_FOUND,
  pageSize,
  type ServiceLog,
  serverStream,
  toPutItem,
  type URLInfo,
  type URLItemIn,
  unary,
  urlFilter,
} from './calls.ts';
import { ReadBudget } from './read-budget.ts';
import { encodeServedFrames } from './wire.ts';

export interface ServiceOptions {
  /** This node's address for ListNodes (`host:port`). */
  nodeAddress: () => string;
  /** Where handler failures and log-level changes are reported. */
  log?: ServiceLog;
  /**
   * What every PutURLs / PutDiscovered stream of this server together may hold unacked (wire bytes).
   * @default new ReadBudget(PUT_BUFFER_BYTES)
   */
  putBudget?: ReadBudget;
}

/**
 * Wire bytes of PutURLs / PutDiscovered messages read and not yet acked, across every stream, before the streams stop
 * reading: 32 MiB, which a 1 GiB task holds several times over with its decoded copies (docs/url-frontier.md).
 */
export const PUT_BUFFER_BYTES = 32 * 1024 * 1024;

/** Items stored by one store call at most (one script call per queue among them). */
export const PUT_BATCH_MAX = 1000;

/**
 * PutURLs items of every stream of this server, gathered while the event loop turns once (at most
 * {@link PUT_BATCH_MAX}) and stored together: one script call per queue instead of one per URL. Items keep their
 * order within a queue, so a duplicate later in a batch is SKIPPED exactly as it would be one by one. A failed
 * store call answers FAIL for its items only.
 */
function putBatcher(
  store: UrlFrontierStore,
  log: ServiceLog | undefined,
): (item: PutItem) => Promise<PutStatus | 'FAIL'> {
  const waiting: { item: PutItem; resolve: (s: PutStatus | 'FAIL') => void }[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    while (waiting.length > 0) {
      const batch = waiting.splice(0, PUT_BATCH_MAX);
      store.put(batch.map((w) => w.item)).then(
        (statuses) => {
          batch.forEach((w, i) => {
            w.resolve(statuses[i] ?? 'FAIL');
          });
        },
        (error: unknown) => {
          log?.('error', `url frontier: PutURLs: ${(error as Error).message}`);
          for (const w of batch) w.resolve('FAIL');
        },
      );
    }
  };
  return (item) =>
    new Promise((resolve) => {
      waiting.push({ item, resolve });
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}

/** The handlers of `urlfrontier.URLFrontier`, by exact method name. */
export function urlFrontierHandlers(
  store: UrlFrontierStore,
  options: ServiceOptions,
): grpc.UntypedServiceImplementation {
  const log = options.log;
  const putBudget = options.putBudget ?? new ReadBudget(PUT_BUFFER_BYTES);

  const batcher = putBatcher(store, log);
  const putOne = (item: URLItemIn): Promise<PutStatus | 'FAIL'> => {
    const p =
      item.item === 'known'
        ? toPutItem(item.known?.info, 'known', Number(item.known?.refetchable_from_date ?? 0))
        : item.item === 'discovered'
          ? toPutItem(item.discovered?.info, 'discovered', 0)
          : undefined;
    if (!p) return Promise.resolve('SKIPPED');
    return batcher(p);
  };

  return {
    ListNodes: unary<object>('ListNodes', async () => ({ values: [options.nodeAddress()] }), log),

    ListCrawls: unary<{ local: boolean }>('ListCrawls', async () => ({ values: await store.crawls() }), log),

    DeleteCrawl: unary<{ value: string }>(
      'DeleteCrawl',
      async (req) => {
        checkFields('DeleteCrawl', { crawlID: req.value }, { crawlID: 'value (the crawl ID)' });
        return { value: await store.deleteCrawl(normaliseCrawl(req.value)) };
      },
      log,
    ),

    ListQueues: unary<{ start: number; size: number; include_inactive: boolean; crawlID: string }>(
      'ListQueues',
      async (req) => {
        checkFields('ListQueues', { crawlID: req.crawlID });
        const crawlID = normaliseCrawl(req.crawlID);
        const values = await store.listQueues(crawlID, req.start, pageSize(req.size), req.include_inactive);
        return { values, total: 0, start: req.start, size: values.length, crawlID };
      },
      log,
    ),

    GetURLs: serverStream<{
      max_urls_per_queue: number;
      max_queues: number;
      key: string;
      delay_requestable: number;
      item?: 'anyCrawlID' | 'crawlID';
      crawlID?: string;
    }>(
      'GetURLs',
      async (req, write, cancelled, writer) => {
        checkFields('GetURLs', { crawlID: req.crawlID, key: req.key });
        const crawl = req.item === 'crawlID' ? normaliseCrawl(req.crawlID) : undefined;
        if (req.key !== '' && crawl === undefined)
          throw INVALID('GetURLs: a key needs the crawlID member of the item oneof');
        const request = {
          crawl,
          key: req.key === '' ? undefined : req.key,
          maxUrlsPerQueue: req.max_urls_per_queue,
          maxQueues: req.max_queues,
          holdSeconds: req.delay_requestable === 0 ? 30 : req.delay_requestable,
          cancelled,
        };
        if (writer.batched) {
          // Straight from Redis's bytes to gRPC frames (wire.ts), a queue at a time.
          await store.getUrlsPacked(request, async (queue) => {
            if (cancelled()) return;
            const full = writer.writeFramed(encodeServedFrames(queue));
            if (full) await full;
          });
          return;
        }
        await store.getUrls(request, async (urls) => {
          for (const u of urls) {
            if (cancelled()) return;
            const full = write({ url: u.url, key: u.key, crawlID: u.crawl, metadata: fromMetadata(u.metadata) });
            if (full) await full;
          }
        });
      },
      log,
    ),

    PutURLs: bidi<URLItemIn>(
      'PutURLs',
      async (item) => {
        const url = item.known?.info?.url ?? item.discovered?.info?.url ?? '';
        return { ID: item.ID || url, status: await putOne(item) };
      },
      putBudget,
    ),

    PutDiscovered: bidi<{ ID: string; items: URLInfo[] }>(
      'PutDiscovered',
      async (batch) => {
        const items = batch.items.map((info) => toPutItem(info, 'discovered', 0));
        const valid = items.filter((p): p is PutItem => p !== undefined);
        try {
          const statuses = await store.put(valid);
          let j = 0;
          return { ID: batch.ID, statuses: items.map((p) => (p ? statuses[j++] : 'SKIPPED')) };
        } catch (error) {
          log?.('error', `url frontier: PutDiscovered: ${(error as Error).message}`);
          return { ID: batch.ID, statuses: items.map(() => 'FAIL') };
        }
      },
      putBudget,
    ),

    GetStats: unary<{ key: string; crawlID: string }>(
      'GetStats',
      async (req) => {
        checkFields('GetStats', { crawlID: req.crawlID, key: req.key });
        const crawlID = normaliseCrawl(req.crawlID);
        const s = await store.stats(crawlID, req.key || undefined);
        return {
          size: s.size,
          inProcess: s.inProcess,
          counts: { completed: s.completed, active_queues: s.activeQueues },
          numberOfQueues: s.numberOfQueues,
          crawlID,
        };
      },
      log,
    ),

    DeleteQueue: unary<{ key: string; crawlID: string }>(
      'DeleteQueue',
      async (req) => {
        if (req.key === '') throw INVALID('DeleteQueue: key is required');
        checkFields('DeleteQueue', { crawlID: req.crawlID, key: req.key });
        return { value: await store.deleteQueue(normaliseCrawl(req.crawlID), req.key) };
      },
      log,
    ),

    BlockQueueUntil: unary<{ key: string; time: number; crawlID: string }>(
      'BlockQueueUntil',
      async (req) => {
        if (req.key === '') throw INVALID('BlockQueueUntil: key is required');
        checkFields('BlockQueueUntil', { crawlID: req.crawlID, key: req.key });
        await store.blockQueueUntil(normaliseCrawl(req.crawlID), req.key, req.time);
        return {};
      },
      log,
    ),

    SetActive: unary<{ state: boolean }>(
      'SetActive',
      async (req) => {
        await store.setActive(req.state);
        return {};
      },
      log,
    ),

    GetActive: unary<object>('GetActive', async () => ({ state: await store.active() }), log),

    SetDelay: unary<{ key: string; delay_requestable: number; crawlID: string }>(
      'SetDelay',
      async (req) => {
        checkFields('SetDelay', { crawlID: req.crawlID, key: req.key });
        await store.setDelay(normaliseCrawl(req.crawlID), req.key, req.delay_requestable);
        return {};
      },
      log,
    ),

    SetLogLevel: unary<{ package: string; level: string }>(
      'SetLogLevel',
      async (req) => {
        checkFields('SetLogLevel', { package: req.package });
        log?.(
          'info',
          `url frontier: SetLogLevel ${echo(req.package)} ${req.level} (no per-logger levels here; ignored)`,
        );
        return {};
      },
      log,
    ),

    SetCrawlLimit: unary<{ key: string; limit: number; crawlID: string }>(
      'SetCrawlLimit',
      async (req) => {
        if (req.key === '') throw INVALID('SetCrawlLimit: key is required');
        checkFields('SetCrawlLimit', { crawlID: req.crawlID, key: req.key });
        const crawlID = normaliseCrawl(req.crawlID);
        if (!(await store.setCrawlLimit(crawlID, req.key, req.limit)))
          throw NOT_FOUND(`SetCrawlLimit: no queue ${echo(req.key)} in crawl ${echo(crawlID)}`);
        return {};
      },
      log,
    ),

    GetURLStatus: unary<{ url: string; key: string; crawlID: string }>(
      'GetURLStatus',
      async (req) => {
        if (req.url === '') throw INVALID('GetURLStatus: url is required');
        checkFields('GetURLStatus', { crawlID: req.crawlID, key: req.key, url: req.url });
        const key = req.key || queueKeyOf(req.url);
        if (key === undefined) throw INVALID(`GetURLStatus: no queue key can be derived from ${echo(req.url)}`);
        checkFields('GetURLStatus', { key }, { key: 'key (derived from url)' });
        const crawlID = normaliseCrawl(req.crawlID);
        const r = await store.urlStatus(crawlID, key, req.url);
        if (!r)
          throw NOT_FOUND(`GetURLStatus: ${echo(req.url)} is not in queue ${echo(key)} of crawl ${echo(crawlID)}`);
        return knownItem(r);
      },
      log,
    ),

    ListURLs: serverStream<{
      start: number;
      size: number;
      key: string;
      crawlID: string;
      filter?: string;
      ignoreCase?: boolean;
    }>(
      'ListURLs',
      async (req, write, cancelled) => {
        checkFields('ListURLs', { crawlID: req.crawlID, key: req.key, filter: req.filter });
        await store.listUrls(
          normaliseCrawl(req.crawlID),
          req.key || undefined,
          req.start,
          pageSize(req.size),
          urlFilter(req.filter, req.ignoreCase),
          async (r) => {
            if (!cancelled()) await write(knownItem(r));
          },
        );
      },
      log,
    ),

    CountURLs: unary<{ key: string; crawlID: string; filter?: string; ignoreCase?: boolean }>(
      'CountURLs',
      async (req) => {
        checkFields('CountURLs', { crawlID: req.crawlID, key: req.key, filter: req.filter });
        const filter = urlFilter(req.filter, req.ignoreCase);
        return { value: await store.countUrls(normaliseCrawl(req.crawlID), req.key || undefined, filter) };
      },
      log,
    ),

    PurgeURLs: unary<{ key: string; crawlID: string; days: number }>(
      'PurgeURLs',
      async (req) => {
        checkFields('PurgeURLs', { crawlID: req.crawlID, key: req.key });
        return { value: await store.purge(normaliseCrawl(req.crawlID), req.key || undefined, req.days) };
      },
      log,
    ),
  };
}
