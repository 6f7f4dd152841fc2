/**
 * The REST API's routes (Scrapy Cluster's rest service, docs/contract.md), framework-free: a request in, a
 * response out. The adapters are functions/rest/http-api.ts (API Gateway HTTP API) and
 * localstack/runtime/rest-server.ts (node:http, `crawl-cluster local`).
 *
 * | Route | Methods | Answers |
 * |---|---|---|
 * | `/` | GET, POST | 200 health report (Scrapy Cluster's fields, plus the envelope; RED with `state_lost`) |
 * | `/feed` | POST | 200 `data: null` (crawl), the reply, or `{"poll_id"}`; 400 invalid; 500 Kafka/Redis down |
 * | `/poll` | POST | 200 the stored reply (once); 404 none; 400 invalid; 500 Redis down |
 * | `/ack-lost` | POST | 200 frontier state losses acknowledged (health GREEN again); 503 no state record here |
 * | `/ui`, `/ui/api/...` | GET | the web dashboard and its JSON endpoints (lib/rest/dashboard.ts) |
 *
 * `/feed` and `/poll` take only a JSON Content-Type (`application/json` or `+json`, any parameters): anything
 * else, a browser's cross-origin `text/plain` or form post included, is answered 400 "The payload must be
 * valid JSON." (kind `invalid_json`), as Scrapy Cluster did.
 *
 * Every route: 404 for an unknown path, 405 (with `Allow`) for another method, 413 for a body over
 * `maxBodyBytes`, 500 for an unexpected error; over its bounds the local adapter answers 503 with
 * `Retry-After` before the router is called (./admission.ts; on AWS API Gateway's throttling answers 429).
 * Each request counts in `rest:total`, each failure in `rest:fail`, each valid feed in `rest:plugin:<type>`;
 * the node beats as kind `rest`. Both are best effort and off the request path (./stats-tally.ts): an answer
 * never waits on the stats write.
 */

import { SchemaValidationError } from '../errors.ts';
import { type ResolvedRestOptions, type RestContext, resolveRestOptions } from './context.ts';
import { dashboardRoutes } from './dashboard.ts';
import { causeOf, failure, type RestRequest, type RestResponse } from './envelope.ts';
import { feed } from './feed.ts';
import { ackLost, createHealthCheck, healthResponse } from './health.ts';
import { checkBodySize, checkJsonContentType, invalidInput } from './input.ts';
import { poll } from './poll.ts';
import { StatsTally } from './stats-tally.ts';

/**
 * The REST API as one function; build it once per context (it holds the request counts between two writes).
 * Requests start a write of the counts when one is due; an adapter that stays up also calls
 * `flushStatsIfDue` from a timer (so an idle node still beats) and `flushStats` when it closes.
 */
export type RestRouter = ((request: RestRequest) => Promise<RestResponse>) & {
  /** Writes the counts held now, after a running write ends; never rejects (failures are logged). */
  flushStats(): Promise<void>;
  /** Starts a write when none is running and `statsFlushMs` has passed since the last one; never waits. */
  flushStatsIfDue(): void;
};

/** What a route produced: the answer and, for a valid feed, the plugin counter to bump. */
interface RouteResult {
  response: RestResponse;
  plugin?: string;
}

type Route = (request: RestRequest) => Promise<RouteResult>;

/** Builds the router over a context; see the module doc for the routes. */
export function createRestRouter(ctx: RestContext): RestRouter {
  const options = resolveRestOptions(ctx.options);
  const startedAt = ctx.startedAt ?? ctx.now();
  const checkHealth = createHealthCheck(ctx, options, startedAt);
  const routes: Record<string, Record<string, Route>> = {
    '/': {
      GET: async () => ({ response: healthResponse(await checkHealth()) }),
      // Scrapy Cluster answered the index to POST as well.
      POST: async () => ({ response: healthResponse(await checkHealth()) }),
    },
    '/feed': {
      POST: jsonOnly(options, async (request) => {
        const outcome = await feed(ctx, options, request.body);
        return { response: outcome.response, plugin: outcome.type };
      }),
    },
    '/poll': { POST: jsonOnly(options, async (request) => ({ response: await poll(ctx, options, request.body) })) },
    '/ack-lost': { POST: async () => ({ response: await ackLost(ctx) }) },
  };
  for (const [path, methods] of Object.entries(dashboardRoutes(ctx, options))) {
    routes[path] = {};
    for (const [method, handler] of Object.entries(methods)) {
      routes[path][method] = async (request) => ({ response: await handler(request) });
    }
  }
  const tally = new StatsTally(ctx, {
    flushEveryMs: options.statsFlushMs,
    timeoutMs: options.statsTimeoutMs,
    heartbeatEveryMs: options.heartbeatEveryMs,
  });

  function record(result: RouteResult): void {
    const names = ['rest:total'];
    if (result.response.status >= 400) names.push('rest:fail');
    if (result.plugin !== undefined) names.push(`rest:plugin:${result.plugin}`);
    tally.add(names);
    tally.flushIfDue();
  }

  const router = async (request: RestRequest): Promise<RestResponse> => {
    const result = await route(routes, options, request).catch((error: unknown): RouteResult => {
      ctx.log.error('rest: unexpected error', { method: request.method, path: request.path, error: causeOf(error) });
      return { response: failure(500, { message: 'Unexpected error in the REST service', cause: causeOf(error) }) };
    });
    record(result);
    return result.response;
  };
  return Object.assign(router, { flushStats: () => tally.flush(), flushStatsIfDue: () => tally.flushIfDue() });
}

async function route(
  routes: Record<string, Record<string, Route>>,
  options: ResolvedRestOptions,
  request: RestRequest,
): Promise<RouteResult> {
  const path = normalisePath(request.path);
  const methods = Object.hasOwn(routes, path) ? routes[path] : undefined;
  if (methods === undefined) {
    return { response: failure(404, { message: 'The desired endpoint does not exist' }) };
  }
  const method = request.method.toUpperCase();
  const handler = Object.hasOwn(methods, method) ? methods[method] : undefined;
  if (handler === undefined) {
    const allowed = Object.keys(methods).join(', ');
    return {
      response: failure(
        405,
        { message: `Method ${method} is not allowed on ${path}; use ${allowed}` },
        { headers: { allow: allowed } },
      ),
    };
  }
  try {
    checkBodySize(request.body, options.maxBodyBytes);
  } catch (error) {
    if (!(error instanceof SchemaValidationError)) throw error;
    return { response: invalidInput(error, options.maxBodyBytes) };
  }
  return handler(request);
}

/**
 * A route that takes a JSON body: a request whose Content-Type is not JSON is answered 400 "The payload must
 * be valid JSON." (Scrapy Cluster's answer) before its body is parsed.
 */
function jsonOnly(options: ResolvedRestOptions, handler: Route): Route {
  return async (request) => {
    try {
      checkJsonContentType(request.headers['content-type']);
    } catch (error) {
      if (!(error instanceof SchemaValidationError)) throw error;
      return { response: invalidInput(error, options.maxBodyBytes) };
    }
    return handler(request);
  };
}

/** The path without query string or fragment, and without one trailing slash (`/feed/` is `/feed`). */
function normalisePath(path: string): string {
  const bare = path.replace(/[?#].*$/s, '');
  if (bare === '' || bare === '/') return '/';
  return bare.endsWith('/') ? bare.slice(0, -1) : bare;
}
