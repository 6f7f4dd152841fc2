/**
 * Reading request bodies and answering bad ones: the same rejection kinds and details as the kafka-monitor
 * (docs/contract.md "Rejections"), with Scrapy Cluster's REST messages.
 */
import { Buffer } from 'node:buffer';
import { type RejectionDetail, SchemaValidationError } from '../errors.ts';
import { failure, type RestResponse } from './envelope.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Throws `too_large` when `body` is longer than `maxBytes`. */
export function checkBodySize(body: Uint8Array | undefined, maxBytes: number): void {
  const size = body?.byteLength ?? 0;
  if (size > maxBytes) {
    throw new SchemaValidationError('too_large', [
      { path: '', message: `is more than the limit of ${maxBytes} bytes` },
    ]);
  }
}

/**
 * Decodes a UTF-8 JSON body.
 * @throws SchemaValidationError with kind `too_large` or `invalid_json`.
 */
export function decodeJsonBody(body: Uint8Array | undefined, maxBytes: number): unknown {
  checkBodySize(body, maxBytes);
  let text: string;
  try {
    text = utf8.decode(body ?? Buffer.alloc(0));
  } catch {
    throw new SchemaValidationError('invalid_json', [{ path: '', message: 'is not valid UTF-8' }]);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new SchemaValidationError('invalid_json', [{ path: '', message: (error as Error).message }]);
  }
}

/**
 * Whether a `Content-Type` names JSON: `application/json` or a `+json` type (`application/vnd.foo+json`),
 * with any parameters (`; charset=utf-8`), in any case. The same rule as Flask's `request.is_json`, which
 * Scrapy Cluster's REST service relied on: it answered anything else "The payload must be valid JSON.".
 */
export function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const mime = (value.split(';', 1)[0] ?? '').trim().toLowerCase();
  return mime === 'application/json' || /^application\/[a-z0-9!#$&^_.+-]+\+json$/.test(mime);
}

/**
 * Refuses a body that is not declared JSON, before parsing it: a browser sends `text/plain`, form or
 * multipart bodies to another origin without asking (a "simple" request), never `application/json`, so
 * this is what keeps a web page from feeding the API (CSRF).
 * @throws SchemaValidationError with kind `invalid_json`.
 */
export function checkJsonContentType(contentType: string | undefined): void {
  if (isJsonContentType(contentType)) return;
  const got = contentType === undefined ? 'none' : JSON.stringify(contentType.slice(0, 100));
  throw new SchemaValidationError('invalid_json', [
    { path: '', message: `must be sent with Content-Type application/json (got ${got})` },
  ]);
}

/** The answer to input that failed to decode or validate: 413 when too large, 400 otherwise. */
export function invalidInput(error: SchemaValidationError, maxBytes: number): RestResponse {
  const { kind, details } = error;
  if (kind === 'too_large') {
    return failure(413, { message: `The payload must not be larger than ${maxBytes} bytes.`, kind, details });
  }
  const message = kind === 'invalid_json' ? 'The payload must be valid JSON.' : 'JSON did not validate against schema.';
  return failure(400, { message, cause: error.message, kind, details });
}

/** The poll request of `POST /poll`: Scrapy Cluster's schema, checked by hand (one field). */
export function validatePollRequest(value: unknown): { poll_id: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SchemaValidationError('schema', [{ path: '', message: 'must be an object' }]);
  }
  const details: RejectionDetail[] = [];
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (key !== 'poll_id')
      details.push({ path: `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`, message: 'is not an allowed field' });
  }
  const pollId = record.poll_id;
  if (pollId === undefined) details.push({ path: '/poll_id', message: 'is required' });
  else if (typeof pollId !== 'string') details.push({ path: '/poll_id', message: 'must be string' });
  else if (pollId.length < 1 || pollId.length > 100) {
    details.push({ path: '/poll_id', message: 'must be 1 to 100 characters long' });
  }
  if (details.length > 0) throw new SchemaValidationError('schema', details);
  return { poll_id: pollId as string };
}
