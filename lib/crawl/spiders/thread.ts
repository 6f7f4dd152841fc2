/**
 * The worker thread that runs plugin spiders' code for a crawler process (lib/crawl/spiders/sandbox.ts is its only
 * user and documents the protocol). It loads `CRAWLER_PLUGINS` itself, calls their `open()` hooks, and then runs one
 * page at a time per message: `wantsLinks`, `parse` and `attrs`, with the result reduced to plain data before it is
 * posted back (a function or a cycle in it fails the page, not the thread).
 *
 * While a page's plugin code runs synchronously, its call id and start time are in the shared section slots, so the
 * sandbox can tell a stuck call from a busy thread. A heartbeat slot, written every {@link BEAT_MS} by this thread's
 * own event loop, tells a thread blocked outside such a section (an async parse that loops after an `await`). A count
 * of the pages taken off the port tells the pages started (their parse in progress) from those still queued.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { type FetchResult, type FollowRequest, MAX_DATA_BYTES } from '../types.ts';
import { BUILT_IN_SPIDERS } from './index.ts';
import { closeSpiders, loadSpiders, openSpiders } from './registry.ts';
import { runSpider } from './run.ts';
import {
  BEAT_MS,
  MAX_FOLLOW_PER_PAGE,
  type RunMessage,
  SLOT_BEAT,
  SLOT_CALL,
  SLOT_CALL_START,
  SLOT_RECEIVED,
  type SpiderThreadData,
  type ThreadMessage,
} from './thread-protocol.ts';

/** What was thrown, as its name and message (a thrown non-Error is its string, named `Error`). */
function thrown(error: unknown): { name: string; message: string } {
  return error instanceof Error
    ? { name: error.name, message: error.message }
    : { name: 'Error', message: String(error) };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** A follow entry as plain data (only the fields the crawler reads; anything else is dropped). */
function plainFollow(f: unknown): FollowRequest {
  if (f === null || typeof f !== 'object') return f as FollowRequest;
  const e = f as Record<string, unknown>;
  const out: Record<string, unknown> = { url: e.url };
  if (e.spider !== undefined) out.spider = e.spider;
  if (e.priority !== undefined) out.priority = e.priority;
  if (e.dont_filter !== undefined) out.dont_filter = e.dont_filter;
  if (e.attrs !== undefined) {
    // Attrs ride as JSON (children.ts drops those over 1 KB); what cannot be JSON is dropped with the entry.
    try {
      out.attrs = JSON.parse(JSON.stringify(e.attrs));
    } catch {
      out.attrs = 'not JSON';
    }
  }
  return out as unknown as FollowRequest;
}

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('lib/crawl/spiders/thread.ts runs as a worker thread');
  const data = workerData as SpiderThreadData;
  const shared = data.shared;
  const clock = () => Date.now() - data.base;
  const beat = setInterval(() => Atomics.store(shared, SLOT_BEAT, clock()), BEAT_MS);
  Atomics.store(shared, SLOT_BEAT, clock());
  const all = await loadSpiders(data.plugins, { baseDir: data.baseDir });
  const plugins = [...all.values()].filter((s) => !BUILT_IN_SPIDERS.has(s.name));
  const log = (level: 'info' | 'warn') => (message: string, fields?: Record<string, unknown>) =>
    port.postMessage({ type: 'log', level, message, fields } satisfies ThreadMessage);
  try {
    await openSpiders(plugins, { log: { info: log('info'), warn: log('warn') } });
  } catch (error) {
    // PluginLoadError's message is what the crawler prints at start (CRAWLER_PLUGINS: <spider>: open() failed...).
    port.postMessage({
      type: 'open-failed',
      message: (error as Error)?.message ?? String(error),
    } satisfies ThreadMessage);
    clearInterval(beat);
    return;
  }
  port.on('message', (m: RunMessage | { type: 'close' }) => {
    if (m.type === 'close') {
      clearInterval(beat);
      void closeSpiders(plugins, (spider, error) =>
        log('warn')('spider close() failed', { spider, error: messageOf(error) }),
      ).finally(() => port.close());
      return;
    }
    Atomics.add(shared, SLOT_RECEIVED, 1);
    void run(m);
  });
  port.postMessage({ type: 'ready', spiders: plugins.map((s) => s.name) } satisfies ThreadMessage);

  async function run(m: RunMessage): Promise<void> {
    const spider = all.get(m.spider);
    const post = (msg: ThreadMessage) => {
      try {
        port?.postMessage(msg);
      } catch (error) {
        port?.postMessage({
          type: 'error',
          id: m.id,
          name: 'DataCloneError',
          message: `the spider's result is not plain data: ${messageOf(error)}`,
        } satisfies ThreadMessage);
      }
    };
    // Structured clone gives a Uint8Array; spiders get a Buffer, as in the crawler.
    const body = m.response.body as unknown as Uint8Array;
    const response: FetchResult = { ...m.response, body: Buffer.from(body.buffer, body.byteOffset, body.byteLength) };
    Atomics.store(shared, SLOT_CALL_START, clock());
    Atomics.store(shared, SLOT_CALL, m.id);
    let pending: ReturnType<typeof runSpider>;
    let wantsLinks = true;
    try {
      try {
        wantsLinks = spider?.wantsLinks?.(m.request) ?? true;
      } catch {
        wantsLinks = true;
      }
      pending = runSpider(spider, m.request, response, wantsLinks ? m.links : []);
    } catch (error) {
      pending = Promise.reject(error);
    } finally {
      Atomics.store(shared, SLOT_CALL, 0);
    }
    try {
      const result = await pending;
      Atomics.store(shared, SLOT_CALL_START, clock());
      Atomics.store(shared, SLOT_CALL, m.id);
      let dataJson: string | undefined;
      let dataTruncated = false;
      if (result.data !== undefined) {
        try {
          dataJson = JSON.stringify(result.data);
        } catch {
          dataJson = undefined;
        }
        if (dataJson === undefined || Buffer.byteLength(dataJson) > MAX_DATA_BYTES) {
          dataJson = undefined;
          dataTruncated = true;
        }
      }
      const all = result.follow ?? [];
      const follow: FollowRequest[] = [];
      for (let i = 0; i < all.length && i < MAX_FOLLOW_PER_PAGE; i++) follow.push(plainFollow(all[i]));
      let attrs: Record<string, unknown> | undefined;
      if (spider?.attrs) attrs = JSON.parse(JSON.stringify(spider.attrs(m.request) ?? null)) ?? undefined;
      Atomics.store(shared, SLOT_CALL, 0);
      post({
        type: 'result',
        id: m.id,
        wantsLinks,
        dataJson,
        dataTruncated,
        follow,
        followDropped: Math.max(0, all.length - MAX_FOLLOW_PER_PAGE),
        attrs,
      });
    } catch (error) {
      Atomics.store(shared, SLOT_CALL, 0);
      post({ type: 'error', id: m.id, ...thrown(error) });
    }
  }
}

await main();
