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
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
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
   * One line per request that failed unexpectedly or was refused by the Host / Origin check, and on start.
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

/** Starts the server; resolves once it listens. */
export async function startRestServer(options: RestServerOptions): Promise<RestServer> {
  const router = createRestRouter(options.context);
  const { maxBodyBytes } = resolveRestOptions(options.context.options);
  const log = options.log ?? (() => {});
  // Set once the port is known (before any request can arrive); empty refuses everything.
  let allowedHosts: readonly string[] = [];
  const server: Server = createServer((req, res) => {
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
  log('info', `REST API listening on ${url}`);
  return {
    url,
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const cut = setTimeout(() => server.closeAllConnections(), options.closeGraceMs ?? 6000);
      await closed;
      clearTimeout(cut);
    },
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
