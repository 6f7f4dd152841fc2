/**
 * The URL Frontier API 2.6 (crawler-commons) over a {@link UrlFrontierStore}: the gRPC handlers, keyed by the
 * exact method names of urlfrontier.proto. Pure functions of the store and the options: no process or
 * environment reads. Every handler is wrapped so that a failure becomes a gRPC status, never a crash.
 */
import { Buffer } from 'node:buffer';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { FrameWriter } from './frames.ts';
import { ReadBudget } from './read-budget.ts';
import {
  type Metadata,
  normaliseCrawl,
  type PutItem,
  type PutStatus,
  queueKeyOf,
  type UrlFrontierStore,
  type UrlRecord,
  validQueueKey,
} from './store.ts';
import { encodeServedFrames } from './wire.ts';
import { invalidUtf8Field, messageRule } from './wire-check.ts';

export const PROTO_PATH = join(import.meta.dirname, 'urlfrontier.proto');

/** proto-loader options: field names as in the schema, uint64 as numbers, enums by name, oneof markers. */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

/** What a request looked like on the wire (wire-check.ts), attached to the decoded message by the server. */
interface WireFacts {
  /** The message's size in bytes. */
  bytes: number;
  /** The first string field whose bytes are not valid UTF-8 (its path), if any. */
  invalidUtf8?: string;
}

const WIRE = Symbol('url frontier wire facts');

/** The wire facts of a request, or an estimate when it did not come through {@link urlFrontierServiceDefinition}. */
function wireFacts(req: object): WireFacts {
  return (req as { [WIRE]?: WireFacts })[WIRE] ?? { bytes: Buffer.byteLength(JSON.stringify(req) ?? '') };
}

/**
 * The `urlfrontier.URLFrontier` service definition, each request's decoder wrapped so that the message carries its
 * wire size and any string field that is not valid UTF-8 (the handlers reject those with INVALID_ARGUMENT).
 */
export function urlFrontierServiceDefinition(): grpc.ServiceDefinition {
  const definition = protoLoader.loadSync(PROTO_PATH, LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    urlfrontier: { URLFrontier: { service: grpc.ServiceDefinition } };
  };
  const service = pkg.urlfrontier.URLFrontier.service;
  const out: Record<string, grpc.MethodDefinition<object, object>> = {};
  for (const [name, method] of Object.entries(service)) {
    const requestType = (method as unknown as { requestType: { type: { name: string } } }).requestType.type.name;
    const rule = messageRule(definition, `urlfrontier.${requestType}`);
    const decode = method.requestDeserialize;
    out[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        const message = decode(bytes) as object;
        const facts: WireFacts = { bytes: bytes.length, invalidUtf8: invalidUtf8Field(bytes, rule) };
        Object.defineProperty(message, WIRE, { value: facts });
        return message;
      },
    };
  }
  return out;
}

/**
 * gRPC server options of the service (functions/url-frontier/server.ts): the largest request message it reads (grpc's
 * own default, stated here because the PutURLs memory bound counts in it: README, URL Frontier).
 */
export const SERVER_OPTIONS: grpc.ServerOptions = {
  'grpc.max_receive_message_length': 4 * 1024 * 1024,
};

/** A client constructor for `urlfrontier.URLFrontier` (tests, tools). */
export function urlFrontierClientConstructor(): grpc.ServiceClientConstructor {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_PATH, LOADER_OPTIONS)) as unknown as {
    urlfrontier: { URLFrontier: grpc.ServiceClientConstructor };
  };
  return pkg.urlfrontier.URLFrontier;
}

export interface ServiceOptions {
  /** This node's address for ListNodes (`host:port`). */
  nodeAddress: () => string;
  /** Where handler failures and log-level changes are reported. */
  log?: (level: 'info' | 'error', message: string) => void;
  /**
   * What every PutURLs / PutDiscovered stream of this server together may hold unacked (wire bytes).
   * @default new ReadBudget(PUT_BUFFER_BYTES)
   */
  putBudget?: ReadBudget;
}

/**
 * Wire bytes of PutURLs / PutDiscovered messages read and not yet acked, across every stream, before the streams stop
 * reading: 32 MiB, which a 1 GiB task holds several times over with its decoded copies (README, URL Frontier).
 */
export const PUT_BUFFER_BYTES = 32 * 1024 * 1024;

/** A gRPC error with a status code. */
class StatusError extends Error {
  readonly code: grpc.status;
  constructor(code: grpc.status, message: string) {
    super(message);
    this.code = code;
  }
}

const NOT_FOUND = (m: string) => new StatusError(grpc.status.NOT_FOUND, m);
const INVALID = (m: string) => new StatusError(grpc.status.INVALID_ARGUMENT, m);

/** The longest excerpt of a client's input an error message quotes. */
export const ECHO_MAX_CHARS = 200;

/**
 * Status details at most (characters): they travel in the `grpc-message` header, and a header over the client's limit
 * (16 KiB for grpc-js) makes the client reset the stream and lose its whole HTTP/2 session.
 */
export const STATUS_DETAILS_MAX_CHARS = 1024;

/**
 * A client's value quoted in an error message: JSON-quoted (control characters and lone surrogates escaped), at most
 * {@link ECHO_MAX_CHARS} of it, with an ellipsis and its length when it is longer.
 */
export function echo(value: string): string {
  if (value.length <= ECHO_MAX_CHARS) return JSON.stringify(value);
  return `${JSON.stringify(value.slice(0, ECHO_MAX_CHARS))}… (${value.length} characters)`;
}

function capDetails(details: string): string {
  return details.length <= STATUS_DETAILS_MAX_CHARS ? details : `${details.slice(0, STATUS_DETAILS_MAX_CHARS)}…`;
}

function toStatus(error: unknown): Partial<grpc.StatusObject> {
  if (error instanceof StatusError) return { code: error.code, details: capDetails(error.message) };
  return {
    code: grpc.status.INTERNAL,
    details: capDetails(`url frontier: ${(error as Error)?.message ?? String(error)}`),
  };
}

/**
 * The most characters of a request's string fields (docs/design.md §10): crawl IDs and queue keys become Redis key
 * names, URLs and filters are matched against stored URLs. Beyond one, a call fails with INVALID_ARGUMENT naming the
 * field (PutURLs answers SKIPPED for the item instead, see {@link PUT_BOUNDS}).
 */
export const FIELD_MAX_CHARS = { crawlID: 255, key: 255, url: 8192, filter: 8192, package: 255 } as const;

/** Throws INVALID_ARGUMENT for the first field of `fields` over its bound; `as` names a field the proto calls otherwise. */
function checkFields(
  method: string,
  fields: Partial<Record<keyof typeof FIELD_MAX_CHARS, string | undefined>>,
  as: Partial<Record<keyof typeof FIELD_MAX_CHARS, string>> = {},
): void {
  for (const [field, value] of Object.entries(fields) as [keyof typeof FIELD_MAX_CHARS, string | undefined][]) {
    const max = FIELD_MAX_CHARS[field];
    if (value !== undefined && value.length > max)
      throw INVALID(`${method}: ${as[field] ?? field} longer than ${max} characters (${value.length})`);
  }
}

/** Throws INVALID_ARGUMENT when a string field of the request was not valid UTF-8 on the wire. */
function checkUtf8(method: string, req: object): void {
  const field = wireFacts(req).invalidUtf8;
  if (field !== undefined) throw INVALID(`${method}: ${field} is not valid UTF-8`);
}

// Decoded message shapes (proto-loader with LOADER_OPTIONS).
interface StringList {
  values: string[];
}
interface URLInfo {
  url: string;
  key: string;
  metadata: Record<string, StringList>;
  crawlID: string;
}
interface URLItemIn {
  item?: 'discovered' | 'known';
  discovered?: { info?: URLInfo | null } | null;
  known?: { info?: URLInfo | null; refetchable_from_date: number } | null;
  ID: string;
}

function toMetadata(m: Record<string, StringList> | undefined): Metadata {
  const out: Metadata = {};
  for (const [k, v] of Object.entries(m ?? {})) out[k] = [...(v?.values ?? [])];
  return out;
}

function fromMetadata(m: Metadata): Record<string, StringList> {
  const out: Record<string, StringList> = {};
  for (const [k, v] of Object.entries(m)) out[k] = { values: v };
  return out;
}

/**
 * The bounds of a stored URL (docs/design.md §10: every edge has a bound; the reference service has none): an item
 * beyond one is SKIPPED, like a queue key over 255 characters, so one hostile item cannot fill Redis or blow up the
 * key names of a crawl.
 */
export const PUT_BOUNDS = { urlChars: 8192, crawlIdChars: 255, metadataBytes: 65_536 } as const;

/**
 * The item to store, or undefined when it must be SKIPPED (no URL, no derivable key, key too long, a URL, crawl ID
 * or metadata beyond {@link PUT_BOUNDS}).
 */
function toPutItem(info: URLInfo | null | undefined, kind: 'discovered' | 'known', date: number): PutItem | undefined {
  if (!info?.url || info.url.length > PUT_BOUNDS.urlChars) return undefined;
  if ((info.crawlID?.length ?? 0) > PUT_BOUNDS.crawlIdChars) return undefined;
  const key = info.key || queueKeyOf(info.url);
  if (key === undefined || !validQueueKey(key)) return undefined;
  const metadata = toMetadata(info.metadata);
  for (const _ in metadata) {
    if (Buffer.byteLength(JSON.stringify(metadata)) > PUT_BOUNDS.metadataBytes) return undefined;
    break;
  }
  return { crawl: normaliseCrawl(info.crawlID), key, url: info.url, kind, date, metadata };
}

function knownItem(r: UrlRecord): object {
  return {
    known: {
      info: { url: r.url, key: r.key, crawlID: r.crawl, metadata: fromMetadata(r.metadata) },
      refetchable_from_date: r.date,
    },
    creation_date: r.created,
  };
}

function urlFilter(filter: string | undefined, ignoreCase: boolean | undefined): ((u: string) => boolean) | undefined {
  if (filter === undefined || filter.trim() === '') return undefined;
  if (ignoreCase) {
    const f = filter.toLowerCase();
    return (u) => u.toLowerCase().includes(f);
  }
  return (u) => u.includes(filter);
}

function pageSize(size: number): number {
  return size === 0 ? 100 : size;
}

type Unary<Req> = (req: Req) => Promise<object>;

function unary<Req extends object>(
  method: string,
  run: Unary<Req>,
  log: ServiceOptions['log'],
): grpc.handleUnaryCall<Req, object> {
  return (call, callback) => {
    Promise.resolve()
      .then(() => {
        checkUtf8(method, call.request);
        return run(call.request);
      })
      .then(
        (res) => callback(null, res),
        (error: unknown) => {
          if (!(error instanceof StatusError)) log?.('error', `url frontier: ${(error as Error)?.stack ?? error}`);
          callback(toStatus(error));
        },
      );
  };
}

function serverStream<Req extends object>(
  method: string,
  run: (
    req: Req,
    write: (msg: object) => Promise<void> | undefined,
    cancelled: () => boolean,
    writer: FrameWriter,
  ) => Promise<void>,
  log: ServiceOptions['log'],
): grpc.handleServerStreamingCall<Req, object> {
  return (call) => {
    let cancelled = false;
    call.on('cancelled', () => {
      cancelled = true;
    });
    // Several messages per HTTP/2 write (frames.ts); a promise only when the stream is full.
    const writer = new FrameWriter(call);
    const write = (msg: object): Promise<void> | undefined => (cancelled ? undefined : writer.write(msg));
    Promise.resolve()
      .then(() => {
        checkUtf8(method, call.request);
        return run(call.request, write, () => cancelled, writer);
      })
      .then(async () => {
        if (!cancelled) await writer.end();
      })
      .catch((error: unknown) => {
        if (!(error instanceof StatusError)) log?.('error', `url frontier: ${(error as Error)?.stack ?? error}`);
        if (!cancelled) call.emit('error', toStatus(error));
      });
  };
}

/**
 * A bidi stream that acks every request asynchronously and ends once the client half-closed and every ack is
 * written. `ack` turns one request into its response; it must not throw (it answers FAIL itself). A request with a
 * string field that is not valid UTF-8 ends the stream with INVALID_ARGUMENT naming the field, once the acks of the
 * requests before it are written (nothing after it is read).
 */
function bidi<Req extends object>(
  method: string,
  ack: (req: Req) => Promise<object>,
  budget: ReadBudget,
): grpc.handleBidiStreamingCall<Req, object> {
  return (call) => {
    let pending = 0;
    let halfClosed = false;
    let ended = false;
    let paused = false;
    let failure: StatusError | undefined;
    // Acks that complete in the same event-loop turn share one HTTP/2 write (frames.ts).
    const writer = new FrameWriter(call);
    const maybeEnd = () => {
      if (ended || pending > 0) return;
      if (failure) {
        ended = true;
        const status = toStatus(failure);
        Promise.resolve(writer.flush()).then(() => call.emit('error', status));
      } else if (halfClosed) {
        ended = true;
        writer.end().catch(() => undefined);
      }
    };
    // Backpressure three ways: a client that sends faster than Redis stores (BIDI_MAX_UNACKED items of this stream,
    // or the server-wide byte budget, in the works) or that does not read its acks (flow control holds them) is not
    // read from until that passes, so none of it can grow this process's memory without bound.
    let awaitingDrain = false;
    let awaitingBudget = false;
    const maybeResume = (): void => {
      if (!paused || ended || failure || pending > BIDI_MAX_UNACKED / 2) return;
      if (budget.exhausted) {
        if (!awaitingBudget) {
          awaitingBudget = true;
          budget.whenAvailable(() => {
            awaitingBudget = false;
            maybeResume();
          });
        }
        return;
      }
      if (writer.congested) {
        if (!awaitingDrain) {
          awaitingDrain = true;
          writer.drained().then(() => {
            awaitingDrain = false;
            maybeResume();
          });
        }
        return;
      }
      paused = false;
      call.resume();
    };
    const maybePause = () => {
      if (paused || ended) return;
      if (!failure && pending < BIDI_MAX_UNACKED && !writer.congested && !budget.exhausted) return;
      paused = true;
      call.pause();
      maybeResume();
    };
    call.on('data', (req: Req) => {
      if (ended || failure) return;
      const facts = wireFacts(req);
      if (facts.invalidUtf8 !== undefined) {
        failure = INVALID(`${method}: ${facts.invalidUtf8} is not valid UTF-8`);
        maybePause();
        maybeEnd();
        return;
      }
      pending++;
      budget.take(facts.bytes);
      ack(req).then((res) => {
        pending--;
        budget.release(facts.bytes);
        if (!ended) writer.write(res);
        maybeEnd();
        maybePause();
        maybeResume();
      });
      maybePause();
    });
    call.on('end', () => {
      halfClosed = true;
      maybeEnd();
    });
    call.on('error', () => {
      ended = true;
    });
    call.on('cancelled', () => {
      ended = true;
    });
  };
}

/** Items of one PutURLs / PutDiscovered stream read but not yet acked, at most (then reading pauses). */
export const BIDI_MAX_UNACKED = 5000;

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
  log: ServiceOptions['log'],
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
