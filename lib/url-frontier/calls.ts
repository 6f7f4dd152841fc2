/**
 * The URL Frontier API's call plumbing (service.ts uses it for every handler): gRPC statuses from errors, echo and
 * field bounds, request checks (sizes, UTF-8), the conversions between proto messages and the store's items, and the
 * unary, server-streaming and bidirectional wrappers that turn any failure into a status, never a crash.
 */

/** Where handler failures and log-level changes are reported. */
export type ServiceLog = (level: 'info' | 'error', message: string) => void;

import { Buffer } from 'node:buffer';
import * as grpc from '@grpc/grpc-js';
import {
  fenceMessage,
  type Metadata,
  normaliseCrawl,
  type PutItem,
  queueKeyOf,
  type UrlRecord,
  validQueueKey,
} from '../redis/url-frontier/model.ts';
import { wireFacts } from './definition.ts';
import { FrameWriter } from './frames.ts';
import type { ReadBudget } from './read-budget.ts';

/** A gRPC error with a status code. */
class StatusError extends Error {
  readonly code: grpc.status;
  constructor(code: grpc.status, message: string) {
    super(message);
    this.code = code;
  }
}

export const NOT_FOUND = (m: string) => new StatusError(grpc.status.NOT_FOUND, m);
export const INVALID = (m: string) => new StatusError(grpc.status.INVALID_ARGUMENT, m);

/** The longest excerpt of a client's input an error message quotes. */
export const ECHO_MAX_CHARS = 200;

/**
 * Status details at most (characters): they travel in the `grpc-message` header, and a header over the client's limit
 * (16 KiB for grpc-js) makes the client reset the stream and lose its whole HTTP/2 session.
 */
const STATUS_DETAILS_MAX_CHARS = 1024;

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
  // The frontier is fenced by a move to another partition count: a client tries again (or the server is restarted).
  const fenced = fenceMessage(error);
  if (fenced !== undefined) return { code: grpc.status.UNAVAILABLE, details: capDetails(fenced) };
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
export function checkFields(
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
export interface StringList {
  values: string[];
}
export interface URLInfo {
  url: string;
  key: string;
  metadata: Record<string, StringList>;
  crawlID: string;
}
export interface URLItemIn {
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

export function fromMetadata(m: Metadata): Record<string, StringList> {
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
export function toPutItem(
  info: URLInfo | null | undefined,
  kind: 'discovered' | 'known',
  date: number,
): PutItem | undefined {
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

export function knownItem(r: UrlRecord): object {
  return {
    known: {
      info: { url: r.url, key: r.key, crawlID: r.crawl, metadata: fromMetadata(r.metadata) },
      refetchable_from_date: r.date,
    },
    creation_date: r.created,
  };
}

export function urlFilter(
  filter: string | undefined,
  ignoreCase: boolean | undefined,
): ((u: string) => boolean) | undefined {
  if (filter === undefined || filter.trim() === '') return undefined;
  if (ignoreCase) {
    const f = filter.toLowerCase();
    return (u) => u.toLowerCase().includes(f);
  }
  return (u) => u.includes(filter);
}

export function pageSize(size: number): number {
  return size === 0 ? 100 : size;
}

export type Unary<Req> = (req: Req) => Promise<object>;

export function unary<Req extends object>(
  method: string,
  run: Unary<Req>,
  log: ServiceLog | undefined,
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

export function serverStream<Req extends object>(
  method: string,
  run: (
    req: Req,
    write: (msg: object) => Promise<void> | undefined,
    cancelled: () => boolean,
    writer: FrameWriter,
  ) => Promise<void>,
  log: ServiceLog | undefined,
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
export function bidi<Req extends object>(
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
