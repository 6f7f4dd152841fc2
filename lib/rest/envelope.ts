/**
 * The framework-free HTTP shapes of the REST API and Scrapy Cluster's response envelope
 * `{"status":"SUCCESS"|"FAILURE","data":...,"error":null|{"message","cause"?}}`. The adapters (API Gateway
 * in functions/rest/http-api.ts, node:http in localstack/runtime/rest-server.ts) translate to and from these,
 * so the core never sees a Lambda event.
 */
import type { RejectionDetail, RejectionKind } from '../errors.ts';

/** One HTTP request as the router sees it. */
export interface RestRequest {
  /** Upper-case HTTP method. */
  method: string;
  /** The path without query string, e.g. `/feed`. */
  path: string;
  /** The raw query string without its `?` (`appid=a&top=5`); absent or empty when there is none. */
  query?: string;
  /** Header names in lower case. */
  headers: Record<string, string | undefined>;
  /**
   * The raw body. An adapter that stops reading at a limit hands over more than `maxBodyBytes` bytes (the
   * first ones) so the router answers 413.
   */
  body?: Uint8Array;
}

/** One HTTP response: a status, headers (lower-case names) and a UTF-8 JSON body. */
export interface RestResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The `error` object of a failed response. `kind` and `details` are Ext, from the rejection format. */
export interface EnvelopeError {
  /** What went wrong, for a person (Scrapy Cluster's messages where it had one). */
  message: string;
  /** The underlying reason, e.g. the validation summary or the client library's error. */
  cause?: string;
  /** The rejection kind (docs/contract.md "Rejections") for invalid input. */
  kind?: RejectionKind;
  /** Where the input is wrong, as in the rejections on `<p>.rejected`. */
  details?: RejectionDetail[];
}

/** Scrapy Cluster's response envelope. */
export interface Envelope<T = unknown> {
  status: 'SUCCESS' | 'FAILURE';
  data: T;
  error: EnvelopeError | null;
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' } as const;

/** A JSON response with the given status. */
export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): RestResponse {
  return { status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}

/** A `SUCCESS` envelope around `data`. */
export function success(data: unknown, status = 200): RestResponse {
  const envelope: Envelope = { status: 'SUCCESS', data, error: null };
  return jsonResponse(status, envelope);
}

/** A `FAILURE` envelope with `error`, and `data` (null unless given). */
export function failure(
  status: number,
  error: EnvelopeError,
  options: { data?: unknown; headers?: Record<string, string> } = {},
): RestResponse {
  const envelope: Envelope = { status: 'FAILURE', data: options.data ?? null, error };
  return jsonResponse(status, envelope, options.headers);
}

/** The cause of an error for an envelope: its message. */
export function causeOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
