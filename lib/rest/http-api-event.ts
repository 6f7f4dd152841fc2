/**
 * API Gateway HTTP API (payload format 2.0) events and results, in the fields the REST function reads,
 * and their translation to and from the router's {@link RestRequest} / {@link RestResponse}. Declared here
 * rather than taken from `@types/aws-lambda`, as lib/kafka/msk-event.ts does for MSK events.
 */
import { Buffer } from 'node:buffer';
import type { RestRequest, RestResponse } from './envelope.ts';

/** An HTTP API payload format 2.0 event (the fields used; Lambda sends more). */
export interface HttpApiEvent {
  version: '2.0';
  routeKey: string;
  /** The path as requested, including the stage name for a named stage (`/prod/feed`). */
  rawPath: string;
  rawQueryString?: string;
  /** Lower-case names; repeated headers joined with commas. */
  headers?: Record<string, string | undefined>;
  body?: string;
  /** The body is base64 (API Gateway encodes bodies whose content type it does not consider text). */
  isBase64Encoded: boolean;
  requestContext: {
    http: { method: string; path: string; protocol?: string; sourceIp?: string; userAgent?: string };
    /** `$default`, or the stage name that prefixes `rawPath`. */
    stage?: string;
    requestId?: string;
  };
}

/** An HTTP API payload format 2.0 result. */
export interface HttpApiResult {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
  isBase64Encoded: false;
}

/** The router's request for an HTTP API event: method, path without the stage, query, lower-case headers, body bytes. */
export function decodeHttpApiEvent(event: HttpApiEvent): RestRequest {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) headers[name.toLowerCase()] = value;
  const body =
    event.body === undefined ? undefined : Buffer.from(event.body, event.isBase64Encoded ? 'base64' : 'utf8');
  const request: RestRequest = {
    method: event.requestContext.http.method.toUpperCase(),
    path: stripStage(event),
    headers,
    body,
  };
  if (event.rawQueryString) request.query = event.rawQueryString;
  return request;
}

function stripStage(event: HttpApiEvent): string {
  const path = event.rawPath || event.requestContext.http.path || '/';
  const stage = event.requestContext.stage;
  if (stage === undefined || stage === '$default') return path;
  const prefix = `/${stage}`;
  if (path === prefix) return '/';
  return path.startsWith(`${prefix}/`) ? path.slice(prefix.length) : path;
}

/** The HTTP API result for a router response. */
export function toHttpApiResult(response: RestResponse): HttpApiResult {
  return { statusCode: response.status, headers: response.headers, body: response.body, isBase64Encoded: false };
}
