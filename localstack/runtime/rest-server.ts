/**
 * The REST API on node:http for `crawl-cluster local` (Scrapy Cluster's port 5343) and the e2e tests: the
 * same router the Lambda runs (lib/rest/router.ts) behind a plain HTTP server. The body is read up to one
 * byte over the limit and no further, so a huge upload costs no memory; the router then answers 413 and the
 * connection is closed instead of reading the rest.
 *
 * Before the router, every request's `Host` and `Origin` are checked (lib/rest/host-check.ts): a Host that
 * does not name this server is answered 421 (DNS rebinding), an Origin other than this server's own 403 (a
 * web page posting here), on every path, the dashboard included. Refused requests are not counted in the
 * `rest:*` stats.
 *
 * Under load nothing queues (lib/rest/admission.ts): past `maxInFlight` requests being handled, a request is
 * answered 503 with `Retry-After` at once, before its body is read; past `maxConnections` open connections, a
 * new connection's first request gets that 503 and the connection is closed, and past twice that many a new
 * connection is closed unanswered. Idle keep-alive connections close after `keepAliveTimeoutMs`, and a client
 * that has not sent its headers within `headersTimeoutMs` (or its whole request within 30 s) is cut, so slow
 * clients cannot hold the connection slots. The request counters are written on a timer, never awaited by a
 * request (lib/rest/stats-tally.ts). These 503s are not counted in the `rest:*` stats either; a warning says
 * how many there were, at most every 10 s.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { VARIABLES } from '../../lib/config/index.ts';
import { InFlightLimit, overloadedResponse } from '../../lib/rest/admission.ts';
import { type RestContext, resolveRestOptions } from '../../lib/rest/context.ts';
import { failure, type RestRequest, type RestResponse } from '../../lib/rest/envelope.ts';
import { checkHostAndOrigin, defaultAllowedHosts } from '../../lib/rest/host-check.ts';
import { createRestRouter } from '../../lib/rest/router.ts';
import { errorFields, type RuntimeLog } from './log.ts';

export interface RestServerOptions {
  context: RestContext;
  /**
   * Interface to listen on; loopback only, as the API has no authentication.
   * @default "127.0.0.1"
   */
  host?: string;
  /**
   * Port to listen on; 0 picks a free one (tests).
   * @default 5343
   */
  port?: number;
  /**
   * On {@link RestServer.close}: time in-flight requests (a feed waiting for its reply) get to finish before
   * their connections are cut.
   * @default 6000
   */
  closeGraceMs?: number;
  /**
   * The `Host` header values served, as clients send them (`name:port`, IPv6 in brackets, no port for 80;
   * case-insensitive). A request with another Host is answered 421, one with an `Origin` other than `http://`
   * or `https://` followed by one of these 403. Add the name a reverse proxy forwards, or the names to use
   * when listening on a wildcard address.
   * @default `127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT` and, unless it is loopback or a wildcard
   * (`0.0.0.0`, `::`), `host:PORT`, where PORT is the port bound (see {@link defaultAllowedHosts})
   */
  allowedHosts?: readonly string[];
  /**
   * Most requests handled at once; one more is answered 503 with `Retry-After` at once (REST_MAX_IN_FLIGHT).
   * @default 100
   */
  maxInFlight?: number;
  /**
   * Most open connections; the first request on one more is answered 503 with `Retry-After` and its connection
   * closed, and one more than twice this many is closed unanswered (REST_MAX_CONNECTIONS).
   * @default 4096
   */
  maxConnections?: number;
  /**
   * Seconds in the `Retry-After` header of a 503 over a bound (REST_RETRY_AFTER).
   * @default 1
   */
  retryAfterSec?: number;
  /**
   * How long an idle keep-alive connection stays open after its last answer.
   * @default 5000
   */
  keepAliveTimeoutMs?: number;
  /**
   * How long a client has to send a request's headers; the connection is closed after that.
   * @default 10000
   */
  headersTimeoutMs?: number;
  /**
   * One line per request that failed unexpectedly or was refused by the Host / Origin check, one per 10 s
   * with requests refused over a bound, and on start.
   * @default none
   */
  log?: RuntimeLog;
}

export interface RestServer {
  /** `http://host:port`, with the port actually bound. */
  url: string;
  port: number;
  /** Stops accepting, lets in-flight requests finish (bounded by `closeGraceMs`), then closes. */
  close(): Promise<void>;
}

/** Least time between two warnings about requests refused over a bound (logged by the stats timer). */
const OVERLOAD_LOG_EVERY_MS = 10_000;

/** Starts the server; resolves once it listens. */
export async function startRestServer(options: RestServerOptions): Promise<RestServer> {
  const router = createRestRouter(options.context);
  const { maxBodyBytes, statsFlushMs } = resolveRestOptions(options.context.options);
  const log = options.log ?? (() => {});
  const maxConnections = options.maxConnections ?? VARIABLES.REST_MAX_CONNECTIONS.default;
  const retryAfterSec = options.retryAfterSec ?? VARIABLES.REST_RETRY_AFTER.default;
  const admission = new InFlightLimit(options.maxInFlight ?? VARIABLES.REST_MAX_IN_FLIGHT.default);
  const busy = overloadedResponse('in_flight', admission.max, retryAfterSec);
  const crowded = overloadedResponse('connections', maxConnections, retryAfterSec);
  const overload = overloadLog(log);
  // Set once the port is known (before any request can arrive); empty refuses everything.
  let allowedHosts: readonly string[] = [];
  let open = 0;
  /** Connections accepted over `maxConnections`: their first request is refused and they are closed. */
  const excess = new WeakSet<Socket>();
  // The header and request timeouts are checked every second (node's default is every 30 s).
  const server: Server = createServer({ connectionsCheckingInterval: 1000 }, (req, res) => {
    if (excess.has(req.socket)) {
      overload.refused('connections');
      send(res, crowded, true);
      return;
    }
    if (!admission.tryEnter()) {
      overload.refused('in_flight');
      // An unread body is discarded by node:http once the answer is sent; the connection stays usable.
      send(res, busy, false);
      return;
    }
    res.once('close', () => admission.leave());
    readBody(req, maxBodyBytes)
      .then(async ({ body, complete }) => {
        const request = toRestRequest(req, body);
        const refused = checkHostAndOrigin(request.headers, allowedHosts);
        if (refused !== undefined) {
          log('warn', 'rest: request refused (Host / Origin)', {
            status: refused.status,
            method: req.method,
            url: req.url,
            host: request.headers.host,
            origin: request.headers.origin,
          });
        }
        const response = refused ?? (await router(request));
        // Unread upload left on the socket: the connection cannot carry another request.
        send(res, response, !complete);
      })
      .catch((error: unknown) => {
        log('error', 'rest: request failed', { method: req.method, url: req.url, ...errorFields(error) });
        if (!res.headersSent) send(res, failure(500, { message: 'Unexpected error in the REST service' }), true);
        else res.destroy();
      });
  });
  server.on('connection', (socket: Socket) => {
    open += 1;
    if (open > maxConnections) excess.add(socket);
    socket.once('close', () => {
      open -= 1;
    });
  });
  // Past twice the bound node:http closes a new connection before any byte is read (it emits `drop`).
  server.maxConnections = maxConnections * 2;
  server.on('drop', () => overload.refused('dropped'));
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 5000;
  server.headersTimeout = options.headersTimeoutMs ?? 10_000;
  // A slow upload must not hold a connection forever.
  server.requestTimeout = 30_000;
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 5343, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  allowedHosts = options.allowedHosts ?? defaultAllowedHosts(host, port);
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  // Writes the request counts while idle too, so the node keeps beating; logs refusals.
  const statsTimer = setInterval(() => {
    router.flushStatsIfDue();
    overload.tick();
  }, statsFlushMs);
  statsTimer.unref();
  // The dashboard's address in full: the bare REST address shows only the health document in a browser.
  log('info', `REST API listening on ${url}; dashboard: ${url}/ui`);
  return {
    url,
    port,
    async close() {
      clearInterval(statsTimer);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const cut = setTimeout(() => server.closeAllConnections(), options.closeGraceMs ?? 6000);
      await closed;
      clearTimeout(cut);
      overload.flush();
      await router.flushStats();
    },
  };
}

type RefusalReason = 'in_flight' | 'connections' | 'dropped';

/**
 * Counts requests refused over a bound; {@link tick} (every second) logs them at most every
 * {@link OVERLOAD_LOG_EVERY_MS}, with the counts since the last line, and `flush` logs what is left.
 */
function overloadLog(log: RuntimeLog): { refused(reason: RefusalReason): void; tick(): void; flush(): void } {
  const counts: Record<RefusalReason, number> = { in_flight: 0, connections: 0, dropped: 0 };
  let since = 0;
  let lastLine = Number.NEGATIVE_INFINITY;
  const total = () => counts.in_flight + counts.connections + counts.dropped;
  const flush = () => {
    if (total() === 0) return;
    const now = Date.now();
    log('warn', 'rest: overloaded; requests answered 503 (dropped: connections closed unanswered)', {
      ...counts,
      over_ms: now - since,
    });
    lastLine = now;
    counts.in_flight = 0;
    counts.connections = 0;
    counts.dropped = 0;
  };
  return {
    refused(reason) {
      if (total() === 0) since = Date.now();
      counts[reason] += 1;
    },
    tick() {
      if (Date.now() - lastLine >= OVERLOAD_LOG_EVERY_MS) flush();
    },
    flush,
  };
}

/**
 * Reads the body, keeping at most `maxBytes + 1` bytes: enough for the router to see it is too large.
 * `complete` is false when reading stopped early.
 */
function readBody(req: IncomingMessage, maxBytes: number): Promise<{ body: Buffer; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > maxBytes) {
        req.pause();
        req.removeAllListeners('data');
        req.removeAllListeners('end');
        resolve({ body: Buffer.concat(chunks).subarray(0, maxBytes + 1), complete: false });
      }
    });
    req.on('end', () => resolve({ body: Buffer.concat(chunks), complete: true }));
    req.on('error', reject);
  });
}

function toRestRequest(req: IncomingMessage, body: Buffer): RestRequest {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const url = new URL(req.url ?? '/', 'http://localhost');
  return { method: req.method ?? 'GET', path: url.pathname, query: url.search.slice(1), headers, body };
}

function send(res: ServerResponse, response: RestResponse, closeConnection: boolean): void {
  const headers: Record<string, string | number> = {
    ...response.headers,
    'content-length': Buffer.byteLength(response.body),
  };
  if (closeConnection) headers.connection = 'close';
  res.writeHead(response.status, headers);
  res.end(response.body, () => {
    if (closeConnection) res.socket?.destroySoon();
  });
}
