/**
 * Serves the simulated internet of localstack/site/internet.ts: one HTTP server per host, each bound to its own
 * loopback address and all on one port, so a crawler's per-origin connection pools and per-domain politeness see
 * N distinct sites, as on the web. {@link startInternet} serves from this process; {@link startInternetProcess}
 * from a child one (localstack/site/child.ts), so a benchmark's client does not share the servers' event loop.
 *
 * Per request: robots.txt after the host's median latency; a page after its own latency, then its error (500,
 * 503 or 429 on odd requests of the page, or a reset connection) or its article body (site.ts `articlePage`, about
 * the page's size); a dead host never answers; a drip host sends the body in 30 slices over `dripMs`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { type InternetGeometry, type InternetOptions, internetGeometry } from './internet.ts';
import { forkFixture } from './process.ts';
import { articlePage } from './site.ts';

export interface Internet extends InternetGeometry {
  /** Requests served per `<host><path>` (robots.txt included). */
  hits: Map<string, number>;
  /** Requests being answered now over every host, and the most at once since start (how much a crawler asks at once). */
  inFlight: { now: number; peak: number };
  close(): Promise<void>;
}

export interface ChildInternet extends InternetGeometry {
  /** Pid of the serving process (CPU accounting). */
  pid: number;
  /** Requests served per `<host><path>` so far. */
  readHits(): Promise<Map<string, number>>;
  close(): Promise<void>;
}

/** Slices of a drip host's body. */
const DRIP_SLICES = 30;

function handler(g: InternetGeometry, k: number, hits: Map<string, number>) {
  const host = g.hosts[k];
  if (!host) throw new Error(`no host ${k}`);
  return async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    const key = `${host.name}${path}`;
    const seen = (hits.get(key) ?? 0) + 1;
    hits.set(key, seen);
    // A dead host accepts the connection and never says a word (the client's timeout ends it).
    if (host.kind === 'dead') return;
    const text = (status: number, body: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers });
      res.end(body);
    };
    if (path === '/robots.txt') {
      await sleep(host.medianLatencyMs);
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end(g.robotsTxt(k));
    }
    const m = path.match(/^\/(p|archive)\/(\d+)$/);
    const n = m ? Number(m[2]) : -1;
    if (!m || n >= g.pages || g.hostOf(n).index !== k || g.page(n).path !== path) {
      await sleep(host.medianLatencyMs);
      return text(404, '<p>not found</p>');
    }
    const p = g.page(n);
    await sleep(p.latencyMs);
    if (res.destroyed) return;
    if (p.error === 'reset') return req.socket.destroy();
    if (p.error === 'e500') return text(500, '<p>internal error</p>');
    if (p.error === 'e503' && seen % 2 === 1) return text(503, '<p>try later</p>');
    if (p.error === 'e429' && seen % 2 === 1) return text(429, '<p>slow down</p>', { 'retry-after': '1' });
    const targets = g.linksOf(n);
    // Small pages carry their links in the "related" list: inline ones would need more paragraphs than they have.
    const inline = Math.min(0.6, p.bytes / 40_000);
    const body = Buffer.from(articlePage(n, g.url(n), targets.map(g.url), targets, p.bytes, inline));
    if (host.kind !== 'drip') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': String(body.length) });
      return res.end(body);
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': String(body.length) });
    const slice = Math.ceil(body.length / DRIP_SLICES);
    for (let at = 0; at < body.length && !res.destroyed; at += slice) {
      res.write(body.subarray(at, at + slice));
      if (at + slice < body.length) await sleep(g.options.dripMs / DRIP_SLICES);
    }
    res.end();
  };
}

function listen(server: Server, address: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen(port, address, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeAll(servers: Server[]): Promise<void> {
  return Promise.all(
    servers.map(
      (s) =>
        new Promise<void>((resolve) => {
          if (!s.listening) return resolve();
          s.closeAllConnections();
          s.close(() => resolve());
        }),
    ),
  ).then(() => undefined);
}

/**
 * Serves every host of the simulated internet on its own address and one shared port (`port`, else a free one:
 * the first host's, retried when another address has it taken).
 */
export async function startInternet(options: InternetOptions = {}, port = 0): Promise<Internet> {
  const hits = new Map<string, number>();
  const model = internetGeometry(options);
  for (let attempt = 0; ; attempt++) {
    const servers: Server[] = [];
    try {
      let shared = port;
      for (const host of model.hosts) {
        const server = createServer();
        server.keepAliveTimeout = 30_000;
        servers.push(server);
        shared = await listen(server, host.address, shared);
      }
      const geometry = internetGeometry(options, shared);
      const inFlight = { now: 0, peak: 0 };
      servers.forEach((s, k) => {
        const handle = handler(geometry, k, hits);
        s.on('request', (req, res) => {
          inFlight.now++;
          inFlight.peak = Math.max(inFlight.peak, inFlight.now);
          res.once('close', () => inFlight.now--);
          handle(req, res).catch(() => res.destroy());
        });
      });
      return { ...geometry, hits, inFlight, close: () => closeAll(servers) };
    } catch (error) {
      await closeAll(servers);
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || port !== 0 || attempt >= 20) throw error;
    }
  }
}

/** {@link startInternet} in a child process (localstack/site/child.ts). */
export async function startInternetProcess(options: InternetOptions = {}): Promise<ChildInternet> {
  const child = await forkFixture({ internet: options });
  const g = internetGeometry(options, child.port);
  return { ...g, pid: child.pid, readHits: child.readHits, close: child.close };
}
