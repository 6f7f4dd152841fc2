/**
 * The local checks of `crawl-cluster feed`: each request is validated with {@link parseRequest} before anything is
 * sent, so a request the schemas refuse never reaches Kafka. No I/O.
 */
import type { RejectionDetail, RejectionKind } from '../lib/errors.ts';
import { SchemaValidationError } from '../lib/errors.ts';
import { parseRequest, type RequestType } from '../lib/schemas/index.ts';

/** One request that passed validation, as it will be sent. */
export interface FeedItem {
  /** 1-based line of the file or stdin; absent for a request given as the argument. */
  line?: number;
  type: RequestType;
  appid: string;
  crawlid?: string;
  uuid?: string;
  /** The message value: the request as written, re-serialized compactly (defaults are the kafka-monitor's job). */
  value: string;
}

/** One request that failed validation, in the shape of the contract's rejections. */
export interface FeedRejection {
  line?: number;
  error: RejectionKind;
  details: RejectionDetail[];
}

/**
 * Validates one request (one line of a file, or the argument).
 * @param line its 1-based line, carried into the item or the rejection
 * @returns the item to send, or the rejection saying why not
 */
export function validateRequest(text: string, line?: number): FeedItem | FeedRejection {
  try {
    const { type, request } = parseRequest(text);
    const item: FeedItem = { type, appid: request.appid, value: JSON.stringify(JSON.parse(text)) };
    if (line !== undefined) item.line = line;
    if ('crawlid' in request && request.crawlid !== undefined) item.crawlid = request.crawlid;
    if ('uuid' in request) item.uuid = request.uuid;
    return item;
  } catch (error) {
    if (!(error instanceof SchemaValidationError)) throw error;
    const rejection = { error: error.kind, details: error.details };
    return line === undefined ? rejection : { line, ...rejection };
  }
}

/** Whether {@link validateRequest} refused the request. */
export function isRejection(result: FeedItem | FeedRejection): result is FeedRejection {
  return 'error' in result;
}

/** A rejection for a person, one line per detail: where it was, the path, and why. */
export function rejectionLines(r: FeedRejection): string[] {
  const where = r.line === undefined ? '' : `line ${r.line}: `;
  return r.details.map((d) => `${where}${d.path ? `${d.path} ` : ''}${d.message} (${r.error})`);
}
