/**
 * UndiciFetcher against a real node:http server on 127.0.0.1 started here (no HTTP mocks). Host names
 * reach the server through the fetcher's `resolve` map; with `allowPrivateNetworks: false` the SSRF
 * guard refuses them, because they resolve to loopback.
 */
import { getEventListeners, once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { UndiciFetcher, type UndiciFetcherOptions } from '../../lib/crawl/fetch/fetcher.ts';
import { FetchError, type FetchRequest } from '../../lib/crawl/types.ts';

const MiB = 1024 * 1024;
const UA = 'crawl-cluster-test/1.0';
const PRIVET_1251 = Buffer.from([0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2]); // "Привет" in windows-1251
const PAGE = '<!doctype html><html><head><title>t</title></head><body><p>compressed ü</p></body></html>';
const CHUNK = Buffer.alloc(64 * 1024, 'a');

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** What the server saw: connections opened, and how streamed responses ended. */
const seen = { connections: 0, requests: [] as { url: string; headers: IncomingMessage['headers'] }[] };
/** Bytes a streaming route handed to the kernel before the client went away, keyed by route. */
const streamed = new Map<string, Promise<number>>();

/** Writes `total` bytes (Infinity: forever) in 64 KiB chunks, respecting backpressure, until the client leaves. */
function stream(key: string, res: ServerResponse, total: number): void {
  let flushed = 0;
  let closed = false;
  streamed.set(
    key,
    new Promise((resolve) =>
      res.once('close', () => {
        closed = true;
        resolve(flushed);
      }),
    ),
  );
  const write = () => {
    while (!closed) {
      const remaining = total - flushed;
      if (remaining <= 0) return void res.end();
      const chunk = remaining >= CHUNK.length ? CHUNK : CHUNK.subarray(0, remaining);
      const more = res.write(chunk, (error) => {
        if (!error) flushed += chunk.length;
      });
      if (!more) return void res.once('drain', write);
    }
  };
  write();
}

const routes: Record<string, Handler> = {
  '/html-1251': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=windows-1251' });
    res.end(Buffer.concat([Buffer.from('<html><body>'), PRIVET_1251, Buffer.from('</body></html>')]));
  },
  '/meta-1251': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(Buffer.concat([Buffer.from('<html><head><meta charset="windows-1251"></head><body>'), PRIVET_1251]));
  },
  '/reason': (_req, res) => {
    res.statusMessage = 'Totally Fine';
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  },
  '/echo': (req, res) => {
    res.writeHead(200, {
      'content-type': 'application/json',
      'set-cookie': ['a=1; Path=/', 'b=2; Path=/'],
    });
    res.end(JSON.stringify(req.headers));
  },
  '/image': (_req, res) => {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff]));
  },
  '/unavailable': (_req, res) => {
    res.writeHead(503, { 'retry-after': '120', 'content-type': 'text/plain' });
    res.end('come back later');
  },
  '/redirect/relative': (_req, res) => {
    res.writeHead(302, { location: 'target?x=1' });
    res.end('moved');
  },
  '/redirect/target': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('arrived');
  },
  '/redirect/ftp': (_req, res) => {
    res.writeHead(301, { location: 'ftp://files.example/x' });
    res.end();
  },
  '/redirect/no-location': (_req, res) => {
    res.writeHead(302);
    res.end();
  },
  '/loop/a': (_req, res) => {
    res.writeHead(307, { location: '/loop/b' });
    res.end();
  },
  '/loop/b': (_req, res) => {
    res.writeHead(308, { location: '/loop/a' });
    res.end();
  },
  '/gzip': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'gzip' });
    res.end(gzipSync(PAGE));
  },
  '/deflate': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'deflate' });
    res.end(deflateSync(PAGE));
  },
  '/deflate-raw': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'deflate' });
    res.end(deflateRawSync(PAGE));
  },
  '/br': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'br' });
    res.end(brotliCompressSync(PAGE));
  },
  '/gzip-then-br': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'gzip, br' });
    res.end(brotliCompressSync(gzipSync(PAGE)));
  },
  '/gzip-corrupt': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
    res.end('this is not gzip at all');
  },
  '/br-corrupt': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'br' });
    res.end('this is not brotli either');
  },
  '/set-cookie-10k': (_req, res) => {
    // About 130 KB of headers, far over the 16 KiB limit: the same overflow on every fetch.
    res.setHeader(
      'set-cookie',
      Array.from({ length: 10_000 }, (_, i) => `c${i}=v; Path=/`),
    );
    res.writeHead(200, { 'content-type': 'text/html' }).end('<p>never read</p>');
  },
  // Written on the socket as is: node:http would refuse to send these.
  '/raw/bad-header-token': (req) => {
    req.socket.end('HTTP/1.1 200 OK\r\nBad Header: x\r\nContent-Length: 2\r\n\r\nok');
  },
  '/raw/bad-chunk-size': (req) => {
    req.socket.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n');
  },
  '/raw/not-http': (req) => {
    req.socket.end('SSH-2.0-OpenSSH_9.6\r\n\r\n');
  },
  // Cut mid-body by a closing connection: the next fetch may get all of it.
  '/raw/cut-chunked': (req) => {
    req.socket.end('HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n');
  },
  '/gzip-empty': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
    res.end();
  },
  '/zstd': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'zstd' });
    res.end(Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00]));
  },
  '/gzip-bomb': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
    res.end(gzipSync(Buffer.alloc(20 * MiB)));
  },
  '/big': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(20 * MiB) });
    stream('/big', res, 20 * MiB);
  },
  '/endless': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' }); // chunked, never ends
    stream('/endless', res, Number.POSITIVE_INFINITY);
  },
  '/exact': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(Buffer.alloc(1000, 'x'));
  },
  '/hang': () => {
    // Never answers: the headers timeout has to end it.
  },
  '/stall-body': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('first bytes, then silence');
  },
  '/drip': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const timer = setInterval(() => res.write('.'), 20);
    res.once('close', () => clearInterval(timer));
  },
};

let server: Server;
let port: number;
const sockets = new Set<Socket>();
const fetchers: UndiciFetcher[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    seen.requests.push({ url: req.url ?? '', headers: req.headers });
    const chain = /^\/chain\/(\d+)$/.exec(path);
    if (chain) {
      const n = Number(chain[1]);
      if (n === 0) res.writeHead(200, { 'content-type': 'text/plain' }).end('end of chain');
      else res.writeHead(302, { location: `/chain/${n - 1}` }).end();
      return;
    }
    const cross = /^\/cross\/(.+)$/.exec(path);
    if (cross) {
      res.writeHead(302, { location: `http://${cross[1]}:${port}/echo` }).end();
      return;
    }
    const handler = routes[path];
    if (handler) handler(req, res);
    else res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  server.on('connection', (socket: Socket) => {
    seen.connections++;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

afterEach(async () => {
  await Promise.all(fetchers.splice(0).map((f) => f.close()));
  seen.connections = 0;
  seen.requests.length = 0;
  streamed.clear();
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  server.close();
  await once(server, 'close');
});

/** A fetcher that may reach the local server; `site.test` and `other.test` resolve to it. */
function fetcher(options: UndiciFetcherOptions = {}): UndiciFetcher {
  const f = new UndiciFetcher({
    allowPrivateNetworks: true,
    resolve: { 'site.test': '127.0.0.1', 'other.test': '127.0.0.1' },
    ...options,
  });
  fetchers.push(f);
  return f;
}

const at = (path: string, host = 'site.test') => `http://${host}:${port}${path}`;
const req = (url: string, extra: Partial<FetchRequest> = {}): FetchRequest => ({ url, userAgent: UA, ...extra });

async function fetchError(promise: Promise<unknown>): Promise<FetchError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(FetchError);
  return error as FetchError;
}

describe('UndiciFetcher responses', () => {
  test('fetches HTML in windows-1251 and decodes it with the header charset, with the real reason phrase', async () => {
    const result = await fetcher().fetch(req(at('/html-1251')));
    expect(result).toMatchObject({
      requestUrl: at('/html-1251'),
      url: at('/html-1251'),
      status: 200,
      statusText: 'OK',
      encoding: 'windows-1251',
      truncated: false,
      redirects: [],
    });
    expect(result.text).toBe('<html><body>Привет</body></html>');
    expect(result.headers['content-type']).toEqual(['text/html; charset=windows-1251']);
    expect(result.fetchedMs).toBeGreaterThanOrEqual(0);
  });

  test('decodes with a <meta charset> when the header has none', async () => {
    const result = await fetcher().fetch(req(at('/meta-1251')));
    expect(result.encoding).toBe('windows-1251');
    expect(result.text?.endsWith('Привет')).toBe(true);
  });

  test('reports the reason phrase the server sent, not the standard one', async () => {
    expect((await fetcher().fetch(req(at('/reason')))).statusText).toBe('Totally Fine');
  });

  test('returns a 503 with Retry-After as a normal response for the caller to act on', async () => {
    const result = await fetcher().fetch(req(at('/unavailable')));
    expect(result.status).toBe(503);
    expect(result.statusText).toBe('Service Unavailable');
    expect(result.headers['retry-after']).toEqual(['120']);
    expect(result.text).toBe('come back later');
  });

  test('keeps a binary body as bytes, with no text and no encoding', async () => {
    const result = await fetcher().fetch(req(at('/image')));
    expect(result.body).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff]));
    expect(result.text).toBeUndefined();
    expect(result.encoding).toBeUndefined();
  });

  test('sends the cookie, custom headers and user agent, records them as sent, and keeps repeated response headers', async () => {
    const result = await fetcher().fetch(
      req(at('/echo'), {
        cookie: 'session=abc; theme=dark',
        headers: { 'X-Custom': 'yes', Referer: 'http://site.test/', Connection: 'close', Host: 'evil.test' },
      }),
    );
    const received = JSON.parse(result.text ?? '{}') as Record<string, string>;
    expect(received).toMatchObject({
      cookie: 'session=abc; theme=dark',
      'x-custom': 'yes',
      referer: 'http://site.test/',
      'user-agent': UA,
      'accept-encoding': 'gzip, deflate, br',
      host: `site.test:${port}`,
      connection: 'keep-alive',
    });
    // What the server received is what the result says was sent.
    for (const [name, values] of Object.entries(result.requestHeaders))
      expect([name, received[name]]).toEqual([name, values[0]]);
    expect(result.requestHeaders.cookie).toEqual(['session=abc; theme=dark']);
    expect(result.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/']);
  });

  test('uses the configured user agent when the request has none', async () => {
    const result = await fetcher({ userAgent: 'fallback-agent/2' }).fetch(req(at('/echo'), { userAgent: '' }));
    expect(JSON.parse(result.text ?? '{}')['user-agent']).toBe('fallback-agent/2');
  });

  test('reuses one keep-alive connection for sequential fetches to the same origin', async () => {
    const f = fetcher();
    for (const path of ['/echo', '/html-1251', '/chain/2', '/image'])
      expect((await f.fetch(req(at(path)))).status).toBe(200);
    expect(seen.requests).toHaveLength(6);
    expect(seen.connections).toBe(1);
  });
});

describe('UndiciFetcher redirects', () => {
  test('follows a relative Location', async () => {
    const result = await fetcher().fetch(req(at('/redirect/relative')));
    expect(result).toMatchObject({
      status: 200,
      url: at('/redirect/target?x=1'),
      redirects: [at('/redirect/relative')],
    });
    expect(result.requestUrl).toBe(at('/redirect/relative'));
    expect(result.text).toBe('arrived');
  });

  test('follows a chain up to the limit and lists every URL that redirected', async () => {
    const result = await fetcher({ maxRedirects: 5 }).fetch(req(at('/chain/5')));
    expect(result.status).toBe(200);
    expect(result.url).toBe(at('/chain/0'));
    expect(result.redirects).toEqual([5, 4, 3, 2, 1].map((n) => at(`/chain/${n}`)));
  });

  test('fails with too_many_redirects one past the limit', async () => {
    const error = await fetchError(fetcher({ maxRedirects: 5 }).fetch(req(at('/chain/6'))));
    expect(error).toMatchObject({ kind: 'too_many_redirects', retryable: false });
    expect(seen.requests).toHaveLength(6);
  });

  test("follows a request's own redirect limit instead of the fetcher's", async () => {
    const result = await fetcher({ maxRedirects: 0 }).fetch(req(at('/chain/5'), { maxRedirects: 5 }));
    expect(result).toMatchObject({ status: 200, url: at('/chain/0') });
    const error = await fetchError(fetcher({ maxRedirects: 20 }).fetch(req(at('/chain/3'), { maxRedirects: 2 })));
    expect(error).toMatchObject({
      kind: 'too_many_redirects',
      message: `more than 2 redirects from ${at('/chain/3')}`,
    });
  });

  test('fails with too_many_redirects on a loop as soon as a URL repeats', async () => {
    const error = await fetchError(fetcher({ maxRedirects: 20 }).fetch(req(at('/loop/a'))));
    expect(error).toMatchObject({ kind: 'too_many_redirects', retryable: false });
    expect(error.message).toContain('loop');
    expect(seen.requests).toHaveLength(2);
  });

  test('returns a redirect to a non-http scheme, or without Location, as the response itself', async () => {
    const f = fetcher();
    const ftp = await f.fetch(req(at('/redirect/ftp')));
    expect(ftp).toMatchObject({ status: 301, statusText: 'Moved Permanently', redirects: [] });
    expect(ftp.headers.location).toEqual(['ftp://files.example/x']);
    expect((await f.fetch(req(at('/redirect/no-location')))).status).toBe(302);
  });

  test('drops the cookie on a redirect to another origin', async () => {
    const result = await fetcher().fetch(req(at('/cross/other.test'), { cookie: 'session=secret' }));
    expect(result.url).toBe(at('/echo', 'other.test'));
    expect(JSON.parse(result.text ?? '{}').cookie).toBeUndefined();
    expect(result.requestHeaders.cookie).toBeUndefined();
    expect(seen.requests[0]?.headers.cookie).toBe('session=secret');
  });
});

describe('UndiciFetcher SSRF guard', () => {
  // A loopback server cannot be the allowed first hop of a redirect while private networks are refused,
  // so the guard is shown directly: a public-looking name that resolves to 127.0.0.1 is refused at
  // connect time, and IP literals before connecting. Every redirect hop runs both checks (fetch.ts).
  test('refuses a host name that resolves to loopback, before any request reaches the server', async () => {
    const error = await fetchError(fetcher({ allowPrivateNetworks: false }).fetch(req(at('/echo'))));
    expect(error).toMatchObject({ kind: 'blocked_address', retryable: false });
    expect(error.message).toContain('127.0.0.1');
    expect(seen.connections).toBe(0);
  });

  test('fetches the same host name when private networks are allowed', async () => {
    expect((await fetcher({ allowPrivateNetworks: true }).fetch(req(at('/echo')))).status).toBe(200);
  });

  test.each([
    () => `http://127.0.0.1:${port}/echo`,
    () => `http://2130706433:${port}/echo`,
    () => `http://0x7f.1:${port}/echo`,
    () => `http://[::ffff:127.0.0.1]:${port}/echo`,
  ])('refuses the IP-literal URL %# without connecting', async (url) => {
    const error = await fetchError(fetcher({ allowPrivateNetworks: false }).fetch(req(url())));
    expect(error.kind).toBe('blocked_address');
    expect(seen.connections).toBe(0);
  });

  test('rejects a URL that is not absolute http(s) as bad_url, not retryable', async () => {
    for (const url of ['not a url', 'ftp://site.test/', 'file:///etc/passwd']) {
      expect(await fetchError(fetcher().fetch(req(url)))).toMatchObject({ kind: 'bad_url', retryable: false });
    }
  });
});

describe('UndiciFetcher bodies', () => {
  test.each(['/gzip', '/deflate', '/deflate-raw', '/br', '/gzip-then-br'])('decompresses %s', async (path) => {
    const result = await fetcher().fetch(req(at(path)));
    expect(result.text).toBe(PAGE);
    expect(result.body.length).toBe(Buffer.byteLength(PAGE));
    expect(result.encoding).toBe('utf-8');
  });

  test.each(['/gzip-corrupt', '/br-corrupt'])(
    'fails a body that does not decompress (%s) with a bad_response error, not retryable',
    async (path) => {
      const error = await fetchError(fetcher().fetch(req(at(path))));
      expect(error).toMatchObject({ kind: 'bad_response', retryable: false });
      expect(error.message).toMatch(/^body does not decode as (gzip|br): .+; not retried/);
    },
  );

  test('accepts an empty body that claims gzip', async () => {
    const result = await fetcher().fetch(req(at('/gzip-empty')));
    expect(result.body.length).toBe(0);
    expect(result.text).toBe('');
  });

  test('keeps a body in an unknown coding as bytes without decoding it as text', async () => {
    const result = await fetcher().fetch(req(at('/zstd')));
    expect(result.body).toEqual(Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00]));
    expect(result.text).toBeUndefined();
  });

  test('counts the limit on decoded bytes: a 20 MiB gzip bomb stops at the default 10 MiB', async () => {
    const result = await fetcher().fetch(req(at('/gzip-bomb')));
    expect(result.truncated).toBe(true);
    expect(result.body.length).toBe(10 * MiB);
  });

  test('truncates a 20 MiB body at the limit and stops reading it', async () => {
    const before = process.memoryUsage().arrayBuffers;
    const result = await fetcher({ maxBodyBytes: MiB }).fetch(req(at('/big')));
    expect(result.truncated).toBe(true);
    expect(result.body.length).toBe(MiB);
    expect(result.text?.length).toBe(MiB);
    // The client hung up long before the end: the server could hand the kernel only what the socket
    // buffers hold beyond the 1 MiB read, never the whole 20 MiB.
    const flushed = await streamed.get('/big');
    expect(flushed).toBeLessThan(20 * MiB);
    // The buffers held are the body (and its text), not the 20 MiB sent.
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(8 * MiB);
  });

  test('cuts an endless chunked body at the limit', async () => {
    const result = await fetcher({ maxBodyBytes: 256 * 1024 }).fetch(req(at('/endless')));
    expect(result.truncated).toBe(true);
    expect(result.body.length).toBe(256 * 1024);
    expect(await streamed.get('/endless')).toBeGreaterThan(0);
  });

  test('does not flag a body that ends exactly at the limit as truncated', async () => {
    const result = await fetcher({ maxBodyBytes: 1000 }).fetch(req(at('/exact')));
    expect(result).toMatchObject({ truncated: false });
    expect(result.body.length).toBe(1000);
  });
});

describe('UndiciFetcher malformed responses', () => {
  test('fails 10,000 Set-Cookie headers with a bad_response error that names the overflow, not retryable', async () => {
    const error = await fetchError(fetcher().fetch(req(at('/set-cookie-10k'))));
    expect(error).toMatchObject({ kind: 'bad_response', retryable: false });
    expect(error.message).toMatch(/^response headers larger than \d+ bytes \(UND_ERR_HEADERS_OVERFLOW\); not retried/);
    expect(seen.requests).toHaveLength(1);
  });

  test.each([
    ['/raw/bad-header-token', 'Invalid header token'],
    ['/raw/bad-chunk-size', 'Invalid character in chunk size'],
    ['/raw/not-http', 'Expected HTTP/'],
  ])('fails a response the HTTP parser refuses (%s) with a bad_response error, not retryable', async (path, why) => {
    const error = await fetchError(fetcher().fetch(req(at(path))));
    expect(error).toMatchObject({ kind: 'bad_response', retryable: false });
    expect(error.message).toContain(why);
  });

  test('keeps a response cut off mid-body retryable: the next fetch may get all of it', async () => {
    const error = await fetchError(fetcher().fetch(req(at('/raw/cut-chunked'))));
    expect(error).toMatchObject({ kind: 'protocol', retryable: true });
  });
});

describe('UndiciFetcher failures', () => {
  test('times out a server that never answers (headers timeout), retryable', async () => {
    const error = await fetchError(fetcher({ headersTimeoutMs: 200 }).fetch(req(at('/hang'))));
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
  });

  test('times out a body that goes silent (body timeout), retryable', async () => {
    const error = await fetchError(fetcher({ bodyTimeoutMs: 200 }).fetch(req(at('/stall-body'))));
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
  });

  test('times out a body that drips forever at the total deadline', async () => {
    const started = Date.now();
    const error = await fetchError(fetcher({ bodyTimeoutMs: 5000, totalTimeoutMs: 300 }).fetch(req(at('/drip'))));
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    expect(Date.now() - started).toBeLessThan(3000);
  });

  test('reports a refused connection as a retryable connect error', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const freePort = (closed.address() as AddressInfo).port;
    closed.close();
    await once(closed, 'close');
    const error = await fetchError(fetcher().fetch(req(`http://site.test:${freePort}/`)));
    expect(error).toMatchObject({ kind: 'connect', retryable: true });
  });

  test('reports an unknown host as a retryable dns error', async () => {
    const error = await fetchError(fetcher().fetch(req('http://no-such-host.invalid/')));
    expect(error).toMatchObject({ kind: 'dns', retryable: true });
  });

  test("leaves no listener on the caller's signal after its fetches, and refuses one already aborted", async () => {
    const controller = new AbortController();
    const f = fetcher();
    for (let i = 0; i < 3; i++) expect((await f.fetch(req(at('/reason')), controller.signal)).status).toBe(200);
    expect((await f.fetch(req(at('/unavailable')), controller.signal)).status).toBe(503);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    const requestsBefore = seen.requests.length;
    const reason = new Error('stopped before');
    controller.abort(reason);
    await expect(f.fetch(req(at('/reason')), controller.signal)).rejects.toBe(reason);
    expect(seen.requests.length).toBe(requestsBefore);
  });

  test("rejects with the caller's abort reason when the caller aborts", async () => {
    const controller = new AbortController();
    const pending = fetcher().fetch(req(at('/hang')), controller.signal);
    const reason = new Error('shutting down');
    setTimeout(() => controller.abort(reason), 50);
    await expect(pending).rejects.toBe(reason);
  });
});
