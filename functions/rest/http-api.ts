/**
 * The API Gateway HTTP API adapter of the REST function (payload format 2.0): an `APIGatewayProxyEventV2` into the
 * router's {@link RestRequest}, a {@link RestResponse} into an `APIGatewayProxyStructuredResultV2`. The event
 * shapes (from `@types/aws-lambda`) live here, with the handler, and not in `lib/`: the REST core speaks only its
 * own request/response envelope (lib/rest/envelope.ts; docs/style.md §3). The local server
 * (localstack/runtime/rest-server.ts) builds {@link RestRequest}s from node:http directly and needs none of this.
 */
import { Buffer } from 'node:buffer';
import type {
  APIGatewayEventRequestContextV2,
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
} from 'aws-lambda';
import type { RestRequest, RestResponse } from '../../lib/rest/envelope.ts';

/**
 * The fields of an HTTP API event the adapter reads (plus `version` and `routeKey`, which say what the event is),
 * and so the handler's event type: Lambda passes a whole `APIGatewayProxyEventV2`, which has them all; the tests
 * build just these. `rawPath` is the path as requested, with the stage name in front for a named stage
 * (`/prod/feed`), and `requestContext.stage` is that name or `$default`. Header names arrive in lower case,
 * repeated headers joined with commas. `isBase64Encoded` is set when API Gateway encoded the body (it does for
 * content types it does not consider text).
 */
export type HttpApiEvent = Pick<
  APIGatewayProxyEventV2,
  'version' | 'routeKey' | 'rawPath' | 'rawQueryString' | 'headers' | 'body' | 'isBase64Encoded'
> & {
  requestContext: Pick<APIGatewayEventRequestContextV2, 'stage'> &
    Partial<Pick<APIGatewayEventRequestContextV2, 'requestId'>> & {
      http: Pick<APIGatewayEventRequestContextV2['http'], 'method' | 'path'>;
    };
};

/** The result the adapter answers: an `APIGatewayProxyStructuredResultV2` with its four fields always set. */
export type HttpApiResult = Required<
  Pick<APIGatewayProxyStructuredResultV2, 'statusCode' | 'headers' | 'body' | 'isBase64Encoded'>
>;

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
