/**
 * UndiciFetcher through real forward proxies (proxy-chain's `Server` over HTTP and TLS, test/helpers/forward-proxy.ts;
 * microsocks for SOCKS5, test/helpers/socks-proxy.ts) to a node:http and a node:https server on 127.0.0.1 started
 * here. The fetcher runs with private networks refused and the fixture's
 * host names trusted, so the SSRF guard is live: every other private target must be refused before the proxy sees it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { decideFailure } from '../../lib/crawl/failure.ts';
import { UndiciFetcher, type UndiciFetcherOptions } from '../../lib/crawl/fetch/fetcher.ts';
import { parseProxies, parseProxyGroups } from '../../lib/crawl/fetch/proxy-config.ts';
import { ProxyRoute } from '../../lib/crawl/fetch/proxy-route.ts';
import { RobotsCache } from '../../lib/crawl/fetch/robots.ts';
import { guardedLookup } from '../../lib/crawl/fetch/ssrf.ts';
import { FetchError, type FetchRequest } from '../../lib/crawl/types.ts';
import { type ForwardProxy, startForwardProxy } from '../helpers/forward-proxy.ts';
import { type SocksProxy, startSocksProxy } from '../helpers/socks-proxy.ts';

const CREDENTIALS = { username: 'crawler', password: 'pr0xy-s3cret' };
const DOMAINS = Array.from({ length: 300 }, (_, i) => `site-${i}.test`);
const HOST_MAP: Record<string, string> = Object.fromEntries(
  [...DOMAINS, 'secure.test', 'private.test'].map((h) => [h, '127.0.0.1']),
);
/** Trusted by the fetcher's SSRF guard: everything but private.test. */
const TRUSTED = [...DOMAINS, 'secure.test'];

/** What the target servers saw. */
const seen: { host: string; url: string; headers: IncomingMessage['headers'] }[] = [];
let site: Server;
let tlsSite: Server;
let port: number;
let tlsPort: number;
const proxies: (ForwardProxy | SocksProxy)[] = [];
const fetchers: UndiciFetcher[] = [];

async function proxy(options: Parameters<typeof startForwardProxy>[0] = {}): Promise<ForwardProxy> {
  const p = await startForwardProxy({ hostMap: HOST_MAP, ...options });
  proxies.push(p);
  return p;
}

async function socks(options: Parameters<typeof startSocksProxy>[0] = {}): Promise<SocksProxy> {
  const p = await startSocksProxy(options);
  proxies.push(p);
  return p;
}

/** A self-signed certificate for `names` (DNS), made here: `{ key, cert }` as PEM. */
function selfSigned(dir: string, name: string, names: string[]): { key: Buffer; cert: Buffer } {
  const key = join(dir, `${name}-key.pem`);
  const cert = join(dir, `${name}-cert.pem`);
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${names[0]}`],
      ...['-addext', `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}`],
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(key), cert: readFileSync(cert) };
}

function fetcher(proxyUrls: string[], options: UndiciFetcherOptions = {}): UndiciFetcher {
  const f = new UndiciFetcher({
    allowPrivateNetworks: false,
    resolve: HOST_MAP,
    trustedHosts: TRUSTED,
    connectTimeoutMs: 2000,
    headersTimeoutMs: 5000,
    verifyTls: false,
    proxies: parseProxies(proxyUrls.join(',')),
    ...options,
  });
  fetchers.push(f);
  return f;
}

const page = (host: string, path = '/'): FetchRequest => ({ url: `http://${host}:${port}${path}`, userAgent: '' });

async function fetchError(f: UndiciFetcher, url: string): Promise<FetchError> {
  try {
    await f.fetch({ url, userAgent: '' });
  } catch (error) {
    expect(error).toBeInstanceOf(FetchError);
    return error as FetchError;
  }
  throw new Error(`${url} was fetched`);
}

const handler = (req: IncomingMessage, res: import('node:http').ServerResponse) => {
  seen.push({ host: req.headers.host ?? '', url: req.url ?? '', headers: req.headers });
  if (req.url === '/robots.txt') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('User-agent: *\nDisallow: /private\n');
    return;
  }
  const answer = () => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<html><body>${req.headers.host}${req.url}</body></html>`);
  };
  if (req.url?.startsWith('/slow')) setTimeout(answer, 300);
  else answer();
};

let certDir: string;
beforeAll(async () => {
  site = createServer(handler);
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  port = (site.address() as AddressInfo).port;
  certDir = mkdtempSync(join(tmpdir(), 'proxy-tls-'));
  // The site's certificate is not trusted (the fetcher runs with verifyTls off); an https proxy's is, below.
  const siteCert = selfSigned(certDir, 'site', ['secure.test']);
  tlsSite = createTlsServer(siteCert, handler);
  await new Promise<void>((resolve) => tlsSite.listen(0, '127.0.0.1', resolve));
  tlsPort = (tlsSite.address() as AddressInfo).port;
});

afterEach(async () => {
  await Promise.all(fetchers.splice(0).map((f) => f.close()));
  await Promise.all(proxies.splice(0).map((p) => p.kill()));
  seen.length = 0;
});

afterAll(async () => {
  site.closeAllConnections();
  tlsSite.closeAllConnections();
  await Promise.all([new Promise((resolve) => site.close(resolve)), new Promise((resolve) => tlsSite.close(resolve))]);
  rmSync(certDir, { recursive: true, force: true });
});

describe('fetching through an authenticated proxy', () => {
  test('an http target goes through the proxy, whose credentials never reach the site', async () => {
    const p = await proxy({ credentials: CREDENTIALS });
    const f = fetcher([p.url()]);
    const result = await f.fetch(page('site-1.test', '/a?b=1'));
    expect(result.status).toBe(200);
    expect(result.text).toContain(`site-1.test:${port}/a?b=1`);
    expect(p.targets).toEqual(['site-1.test']);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.headers['proxy-authorization']).toBeUndefined();
    expect(JSON.stringify(result)).not.toContain(CREDENTIALS.password);
  });

  test('a crawl request’s own Proxy-Authorization header is dropped, the proxy’s credentials used', async () => {
    const p = await proxy({ credentials: CREDENTIALS });
    const f = fetcher([p.url()]);
    const result = await f.fetch({ ...page('site-1.test'), headers: { 'Proxy-Authorization': 'Basic bm90OnRoaXM=' } });
    expect(result.status).toBe(200);
    expect(p.refused()).toBe(0);
    expect(seen[0]?.headers['proxy-authorization']).toBeUndefined();
  });

  test('an https target goes through a CONNECT tunnel, TLS end to end with the site', async () => {
    const p = await proxy({ credentials: CREDENTIALS });
    const f = fetcher([p.url()]);
    const result = await f.fetch({ url: `https://secure.test:${tlsPort}/tls`, userAgent: '' });
    expect(result.status).toBe(200);
    expect(result.text).toContain(`secure.test:${tlsPort}/tls`);
    expect(p.targets).toEqual(['secure.test']);
  });

  test('a domain sticks to its proxy across requests (its session)', async () => {
    const [a, b] = [await proxy(), await proxy()];
    const f = fetcher([a.url(), b.url()]);
    for (let i = 0; i < 10; i++) expect((await f.fetch(page('site-7.test', `/${i}`))).status).toBe(200);
    const used = [a, b].filter((p) => p.targets.length > 0);
    expect(used).toHaveLength(1);
  });

  test('a wrong password: every page fails proxy_auth at once, not retried, the password in no message', async () => {
    const p = await proxy({ credentials: CREDENTIALS });
    const f = fetcher([p.url({ username: 'crawler', password: 'wr0ng-pa55' })]);
    const started = performance.now();
    const errors = await Promise.all(DOMAINS.slice(0, 20).map((d) => fetchError(f, page(d).url)));
    const elapsedMs = performance.now() - started;
    expect(errors.map((e) => e.kind)).toEqual(Array(20).fill('proxy_auth'));
    expect(elapsedMs).toBeLessThan(2000);
    expect(p.refused()).toBe(20);
    expect(seen).toHaveLength(0);
    for (const e of errors) {
      expect(e.message).toBe(`proxy ${p.name} refused the credentials (407)`);
      expect(JSON.stringify({ message: e.message, stack: e.stack })).not.toContain('wr0ng-pa55');
      expect(decideFailure({ kind: 'fetch', error: e }, { retries: 0 })).toEqual({
        action: 'give_up',
        exception: `proxy_auth: proxy ${p.name} refused the credentials (407)`,
      });
    }
  });

  test('a proxy that refuses the credentials is passed over for one that accepts them', async () => {
    const bad = await proxy({ credentials: CREDENTIALS });
    const good = await proxy({ credentials: CREDENTIALS });
    const f = fetcher([bad.url({ username: 'crawler', password: 'nope' }), good.url()]);
    const results = await Promise.all(DOMAINS.slice(0, 10).map((d) => f.fetch(page(d))));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(good.targets).toHaveLength(10);
  });
});

describe('proxy groups chosen per request', () => {
  test('a request goes through its group, CRAWLER_PROXIES without one, directly with "none"', async () => {
    const [plain, a1, a2, b] = [await proxy(), await proxy(), await proxy(), await proxy({ credentials: CREDENTIALS })];
    const f = fetcher([plain.url()], {
      proxyGroups: parseProxyGroups(`res=${a1.url()}#a1,${a2.url()}#a2; dc=${b.url()}#b`),
    });
    const domains = DOMAINS.slice(0, 6);
    for (const d of domains) expect((await f.fetch({ ...page(d), proxy: 'res' })).status).toBe(200);
    expect([...a1.targets, ...a2.targets].sort()).toEqual([...domains].sort());
    // Sessions and the even split hold inside the group.
    expect([a1.targets.length, a2.targets.length]).toEqual([3, 3]);
    expect((await f.fetch({ ...page('site-50.test'), proxy: 'dc' })).status).toBe(200);
    expect(b.targets).toEqual(['site-50.test']);
    expect((await f.fetch(page('site-51.test'))).status).toBe(200);
    expect(plain.targets).toEqual(['site-51.test']);
    const before = seen.length;
    expect((await f.fetch({ ...page('site-52.test'), proxy: 'none' })).status).toBe(200);
    expect(seen.length).toBe(before + 1);
    for (const p of [plain, a1, a2, b]) expect(p.targets).not.toContain('site-52.test');
  });

  test('"none" is still a fetch under the SSRF guard', async () => {
    const f = fetcher([], { proxyGroups: parseProxyGroups(`dc=${(await proxy()).url()}`) });
    const e = await fetchError(f, `http://private.test:${port}/`);
    expect(e.kind).toBe('blocked_address');
    await expect(f.fetch({ url: `http://private.test:${port}/`, userAgent: '', proxy: 'none' })).rejects.toMatchObject({
      kind: 'blocked_address',
    });
    expect(seen).toHaveLength(0);
  });

  test('a group this crawler does not have fails proxy_group (retryable), naming its groups', async () => {
    const p = await proxy();
    const f = fetcher([], { proxyGroups: parseProxyGroups(`dc=${p.url()}; res=${p.url()}#other`) });
    const error = await f.fetch({ ...page('site-1.test'), proxy: 'mobile' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FetchError);
    expect(error).toMatchObject({
      kind: 'proxy_group',
      retryable: true,
      message: 'this crawler has no proxy group "mobile" (CRAWLER_PROXY_GROUPS: it has dc, res)',
    });
    expect(p.targets).toEqual([]);
    expect(seen).toHaveLength(0);
  });

  test('robots.txt goes through the group of the crawl that asked for it', async () => {
    const [plain, b] = [await proxy(), await proxy()];
    const kept = new Map<string, string>();
    const store = { get: async (o: string) => kept.get(o), set: async (o: string, v: string) => void kept.set(o, v) };
    const robots = new RobotsCache({
      store,
      fetcher: fetcher([plain.url()], { proxyGroups: parseProxyGroups(`dc=${b.url()}`) }),
    });
    expect((await robots.check(`http://site-9.test:${port}/private/x`, 'ua', 'dc')).allowed).toBe(false);
    expect(b.targets).toEqual(['site-9.test']);
    expect(plain.targets).toEqual([]);
  });
});

describe('robots.txt through the proxies', () => {
  /** The fleet-wide robots.txt store, in memory: what it is asked to keep is the point here. */
  const memoryStore = () => {
    const kept = new Map<string, string>();
    return { kept, get: async (o: string) => kept.get(o), set: async (o: string, v: string) => void kept.set(o, v) };
  };

  test('robots.txt is fetched through the proxy and obeyed', async () => {
    const p = await proxy({ credentials: CREDENTIALS });
    const store = memoryStore();
    const robots = new RobotsCache({ store, fetcher: fetcher([p.url()]) });
    expect((await robots.check(`http://site-4.test:${port}/private/x`, 'ua')).allowed).toBe(false);
    expect((await robots.check(`http://site-4.test:${port}/public`, 'ua')).allowed).toBe(true);
    expect(p.targets).toEqual(['site-4.test']);
    expect(store.kept.size).toBe(1);
  });

  test('a proxy failure on robots.txt fails the check with the proxy’s reason and caches nothing', async () => {
    const p = await proxy({ credentials: CREDENTIALS });
    const store = memoryStore();
    const f = fetcher([p.url({ username: 'crawler', password: 'wr0ng-pa55' })]);
    const robots = new RobotsCache({ store, fetcher: f });
    await expect(robots.check(`http://site-4.test:${port}/public`, 'ua')).rejects.toMatchObject({ kind: 'proxy_auth' });
    expect(store.kept.size).toBe(0);
    expect(robots.checkNow(`http://site-4.test:${port}/public`, 'ua')).toBeUndefined();
  });
});

describe('proxy failures', () => {
  test('an unreachable proxy fails proxy_connect (retryable), named without its credentials', async () => {
    const p = await proxy();
    await p.kill();
    const f = fetcher([p.url(CREDENTIALS)]);
    const e = await fetchError(f, page('site-1.test').url);
    expect(e.kind).toBe('proxy_connect');
    expect(e.retryable).toBe(true);
    expect(e.message).toBe(`cannot reach proxy ${p.name} (ECONNREFUSED)`);
    expect(e.message).not.toContain(CREDENTIALS.password);
  });

  test('a proxy broken in itself (its own 500) fails proxy_error, and is passed over for a working one', async () => {
    const broken = await proxy({ broken: true });
    const alone = fetcher([broken.url()]);
    const e = await fetchError(alone, page('site-1.test').url);
    expect(e.kind).toBe('proxy_error');
    expect(e.retryable).toBe(true);
    expect(e.message).toBe(`proxy ${broken.name} answered the tunnel request with 500`);

    const good = await proxy();
    const outcomes: string[] = [];
    const f = fetcher([broken.url(), good.url()], { onProxyOutcome: (p, o) => outcomes.push(`${p} ${o}`) });
    const results = await Promise.all(DOMAINS.slice(0, 10).map((d) => f.fetch(page(d))));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(good.targets).toHaveLength(10);
    // Each request is told per proxy, by name: every page answered through `good`, `broken` failing in between.
    expect(outcomes.filter((o) => o === `${good.name} ok`)).toHaveLength(10);
    const fromBroken = outcomes.filter((o) => o.startsWith(`${broken.name} `));
    expect(fromBroken.length).toBeGreaterThan(0);
    expect(new Set(fromBroken)).toEqual(new Set([`${broken.name} proxy_error`]));
    expect(outcomes).toHaveLength(10 + fromBroken.length);
  });

  test('a site no proxy can reach fails proxy_connect after every proxy was tried, and the proxies stay in use', async () => {
    const [a, b] = [await proxy(), await proxy()];
    const f = fetcher([a.url(), b.url()]);
    // A port nobody listens on: proxy-chain drops the tunnel without an answer, as a dying proxy would.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const e = await fetchError(f, `http://site-2.test:${deadPort}/`);
    expect(e.kind).toBe('proxy_connect');
    expect(e.retryable).toBe(true);
    expect([a.targets, b.targets]).toEqual([['site-2.test'], ['site-2.test']]);
    // One failure each rests neither: the next domains are still split over both.
    await Promise.all(DOMAINS.slice(0, 10).map((d) => f.fetch(page(d))));
    expect([a.targets.length, b.targets.length]).toEqual([6, 6]);
  });

  test('a proxy killed mid-run: its requests move to the other proxy and every page is fetched', async () => {
    const [a, b] = [await proxy(), await proxy()];
    const f = fetcher([a.url(), b.url()]);
    const domains = DOMAINS.slice(0, 40);
    // Slow pages: the kill lands while requests through `a` wait for their response headers.
    const firstWave = Promise.all(domains.map((d) => f.fetch(page(d, '/slow/1'))));
    await expect.poll(() => seen.length, { timeout: 5000, interval: 10 }).toBeGreaterThanOrEqual(30);
    const throughA = a.targets.length;
    expect(throughA).toBeGreaterThan(0);
    await a.kill();
    const first = await firstWave;
    // The kill landed mid-flight: requests the site had already received through `a` were sent again through `b`.
    expect(seen.filter((s) => s.url === '/slow/1').length).toBeGreaterThan(domains.length);
    const second = await Promise.all(domains.map((d) => f.fetch(page(d, '/slow/2'))));
    expect([...first, ...second].map((r) => r.status)).toEqual(Array(80).fill(200));
    // The domains of `a` moved to `b`: it tunnelled to every domain (a tunnel serves a domain's later requests).
    expect(new Set(b.targets)).toEqual(new Set(domains));
    expect(a.targets).toHaveLength(throughA);
    const pages = new Set(seen.map((s) => `${s.host}${s.url}`));
    for (const d of domains) {
      expect(pages.has(`${d}:${port}/slow/1`)).toBe(true);
      expect(pages.has(`${d}:${port}/slow/2`)).toBe(true);
    }
  });

  test('three proxies share 300 domains evenly (±20 %)', async () => {
    const three = [await proxy(), await proxy(), await proxy()];
    const f = fetcher(three.map((p) => p.url()));
    for (let i = 0; i < DOMAINS.length; i += 30)
      await Promise.all(DOMAINS.slice(i, i + 30).map((d) => f.fetch(page(d))));
    const counts = three.map((p) => p.targets.length);
    expect(counts.reduce((a, b) => a + b)).toBe(300);
    for (const n of counts) expect(Math.abs(n - 100)).toBeLessThanOrEqual(20);
  });
});

describe('the SSRF guard behind a proxy', () => {
  test('private targets are refused before the proxy sees them, though the proxy could reach them', async () => {
    const p = await proxy({ hostMap: { ...HOST_MAP, 'localhost.test': '127.0.0.1' } });
    const f = fetcher([p.url()], { resolve: { ...HOST_MAP, 'localhost.test': '127.0.0.1' } });
    for (const url of [
      `http://private.test:${port}/`, // a name the crawler resolves to loopback
      `http://127.0.0.1:${port}/`, // a loopback literal
      `http://[::1]:${port}/`,
      'http://169.254.169.254/latest/meta-data/', // the metadata service
      `http://10.0.0.1:${port}/`,
    ]) {
      const e = await fetchError(f, url);
      expect(e.kind, url).toBe('blocked_address');
    }
    expect(p.targets).toEqual([]);
    expect(seen).toHaveLength(0);

    // The proxy itself (on loopback, operator configuration) is allowed, and reaches private.test when allowed.
    const open = fetcher([p.url()], { allowPrivateNetworks: true });
    expect((await open.fetch(page('private.test'))).status).toBe(200);
    expect(p.targets).toEqual(['private.test']);
  });

  test('a redirect to a private target is refused at that hop', async () => {
    const p = await proxy();
    const f = fetcher([p.url()]);
    const redirecting = createServer((_req, res) => {
      res.writeHead(302, { location: `http://private.test:${port}/` });
      res.end();
    });
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
    try {
      const e = await fetchError(f, `http://site-3.test:${(redirecting.address() as AddressInfo).port}/`);
      expect(e.kind).toBe('blocked_address');
      expect(p.targets).toEqual(['site-3.test']);
    } finally {
      redirecting.closeAllConnections();
      await new Promise((resolve) => redirecting.close(resolve));
    }
  });
});

describe('an https:// proxy (TLS to the proxy)', () => {
  let proxyCert: { key: Buffer; cert: Buffer };
  const defaultCas = tls.getCACertificates('default');
  beforeAll(() => {
    proxyCert = selfSigned(certDir, 'proxy', ['localhost']);
    // The proxy's certificate is verified against the default CAs (NODE_EXTRA_CA_CERTS where an operator adds one):
    // this test process trusts the one it made, as such an operator would.
    tls.setDefaultCACertificates([...defaultCas, proxyCert.cert.toString()]);
  });
  afterAll(() => tls.setDefaultCACertificates(defaultCas));

  test('http and https targets go through it, its credentials only inside its TLS', async () => {
    const p = await proxy({ credentials: CREDENTIALS, tls: proxyCert });
    expect(p.url()).toMatch(/^https:\/\/crawler:.*@localhost:\d+$/);
    const f = fetcher([p.url()]);
    const plain = await f.fetch(page('site-1.test', '/over-tls'));
    expect(plain.text).toContain(`site-1.test:${port}/over-tls`);
    const secure = await f.fetch({ url: `https://secure.test:${tlsPort}/tls-in-tls`, userAgent: '' });
    expect(secure.text).toContain(`secure.test:${tlsPort}/tls-in-tls`);
    expect(p.targets).toEqual(['site-1.test', 'secure.test']);
    expect(seen.every((s) => s.headers['proxy-authorization'] === undefined)).toBe(true);
  });

  test('a wrong password fails proxy_auth', async () => {
    const p = await proxy({ credentials: CREDENTIALS, tls: proxyCert });
    const e = await fetchError(
      fetcher([p.url({ username: 'crawler', password: 'wr0ng-tls' })]),
      page('site-1.test').url,
    );
    expect(e.kind).toBe('proxy_auth');
    expect(e.message).toBe(`proxy ${p.name} refused the credentials (407)`);
  });

  test('a proxy whose certificate is not trusted fails proxy_connect, charged to the proxy, never sent the password', async () => {
    const untrusted = selfSigned(certDir, 'untrusted', ['localhost']);
    const p = await proxy({ credentials: CREDENTIALS, tls: untrusted });
    const good = await proxy({ credentials: CREDENTIALS });
    const outcomes: string[] = [];
    const alone = fetcher([p.url()], { onProxyOutcome: (name, o) => outcomes.push(`${name} ${o}`) });
    const e = await fetchError(alone, page('site-1.test').url);
    expect(e.kind).toBe('proxy_connect');
    expect(e.message).toBe(`cannot reach proxy ${p.name} (DEPTH_ZERO_SELF_SIGNED_CERT)`);
    expect(outcomes).toEqual([`${p.name} proxy_connect`]);
    expect(p.refused()).toBe(0);
    expect(p.targets).toEqual([]);
    // ...and its requests move to a proxy that works.
    const f = fetcher([p.url(), good.url()]);
    const results = await Promise.all(DOMAINS.slice(0, 6).map((d) => f.fetch(page(d))));
    expect(results.map((r) => r.status)).toEqual(Array(6).fill(200));
    expect(good.targets).toHaveLength(6);
  });
});

describe('a socks5:// proxy', () => {
  test('http and https targets go through it, the proxy given the address the crawler checked', async () => {
    const p = await socks({ credentials: CREDENTIALS });
    const f = fetcher([p.url()]);
    const plain = await f.fetch(page('site-1.test', '/via-socks'));
    expect(plain.status).toBe(200);
    expect(plain.text).toContain(`site-1.test:${port}/via-socks`);
    const secure = await f.fetch({ url: `https://secure.test:${tlsPort}/tls-via-socks`, userAgent: '' });
    expect(secure.text).toContain(`secure.test:${tlsPort}/tls-via-socks`);
    // microsocks connected to the addresses, never resolving a name itself: there is no second lookup to rebind.
    await expect.poll(() => p.targets).toEqual([`127.0.0.1:${port}`, `127.0.0.1:${tlsPort}`]);
    expect(JSON.stringify([plain, secure])).not.toContain(CREDENTIALS.password);
  });

  test('an IPv6 target is asked for by its address too', async () => {
    const p = await socks();
    const v6 = createServer(handler);
    await new Promise<void>((resolve) => v6.listen(0, '::1', resolve));
    try {
      const v6Port = (v6.address() as AddressInfo).port;
      const f = fetcher([p.url()], { allowPrivateNetworks: true, resolve: { 'v6.test': '::1' } });
      expect((await f.fetch({ url: `http://v6.test:${v6Port}/six`, userAgent: '' })).text).toContain('/six');
      expect((await f.fetch({ url: `http://[::1]:${v6Port}/literal`, userAgent: '' })).text).toContain('/literal');
      await expect.poll(() => p.targets).toEqual([`::1:${v6Port}`, `::1:${v6Port}`]);
    } finally {
      v6.closeAllConnections();
      await new Promise((resolve) => v6.close(resolve));
    }
  });

  test('many requests share its tunnels, each domain sticking to its session, split evenly over two', async () => {
    const [a, b] = [await socks(), await socks()];
    const f = fetcher([a.url(), b.url()]);
    for (let round = 0; round < 3; round++)
      await Promise.all(DOMAINS.slice(0, 20).map((d) => f.fetch(page(d, `/r${round}`))));
    expect(seen).toHaveLength(60);
    await expect.poll(() => a.targets.length + b.targets.length).toBeGreaterThanOrEqual(20);
    expect(new Set(seen.map((s) => s.host)).size).toBe(20);
    expect(Math.abs(a.targets.length - b.targets.length)).toBeLessThanOrEqual(4);
  });

  test('a wrong password fails proxy_auth at once, the password in no message', async () => {
    const p = await socks({ credentials: CREDENTIALS });
    const f = fetcher([p.url({ username: 'crawler', password: 'wr0ng-socks' })]);
    const errors = await Promise.all(DOMAINS.slice(0, 5).map((d) => fetchError(f, page(d).url)));
    for (const e of errors) {
      expect(e.kind).toBe('proxy_auth');
      expect(e.retryable).toBe(false);
      expect(e.message).toBe(`proxy ${p.name} refused the credentials (SOCKS5)`);
      expect(JSON.stringify({ message: e.message, stack: e.stack })).not.toContain('wr0ng-socks');
    }
    expect(seen).toHaveLength(0);
  });

  test('a proxy that requires credentials we do not have fails proxy_auth', async () => {
    const p = await socks({ credentials: CREDENTIALS });
    const e = await fetchError(fetcher([`socks5://${p.name}`]), page('site-1.test').url);
    expect(e).toMatchObject({ kind: 'proxy_auth', message: `proxy ${p.name} requires authentication (SOCKS5)` });
  });

  test('a dead proxy fails proxy_connect and its requests move to the other one', async () => {
    const [dead, live] = [await socks(), await socks()];
    await dead.kill();
    const alone = await fetchError(fetcher([dead.url()]), page('site-1.test').url);
    expect(alone).toMatchObject({ kind: 'proxy_connect', message: `cannot reach proxy ${dead.name} (ECONNREFUSED)` });
    const f = fetcher([dead.url(), live.url()]);
    const results = await Promise.all(DOMAINS.slice(0, 8).map((d) => f.fetch(page(d))));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
  });

  test('a site the proxy cannot reach is the site’s failure (connect), not the proxy’s', async () => {
    const p = await socks();
    const outcomes: string[] = [];
    const f = fetcher([p.url()], { onProxyOutcome: (name, o) => outcomes.push(`${name} ${o}`) });
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const e = await fetchError(f, `http://site-2.test:${deadPort}/`);
    expect(e.kind).toBe('connect');
    expect(e.message).toMatch(/^ECONNREFUSED: connection refused \(SOCKS5 reply 5\)/);
    expect(outcomes).toEqual([]);
    // The proxy was not charged: it still serves.
    expect((await f.fetch(page('site-2.test'))).status).toBe(200);
  });

  test('private targets are refused before the proxy sees them, and a rebinding answer cannot reach one', async () => {
    const p = await socks();
    const f = fetcher([p.url()]);
    for (const url of [`http://private.test:${port}/`, `http://127.0.0.1:${port}/`, 'http://169.254.169.254/']) {
      expect((await fetchError(f, url)).kind, url).toBe('blocked_address');
    }
    // A name public when the route checks it and loopback when the connection is made: the connector's own lookup
    // (the one whose address the proxy is given) refuses it.
    let answers = 0;
    const rebinding = ((_host: string, _o: unknown, cb: (e: null, a: { address: string; family: number }[]) => void) =>
      cb(null, [{ address: answers++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 }])) as never;
    const route = new ProxyRoute({
      proxies: parseProxies(p.url()),
      allowPrivate: false,
      lookup: guardedLookup(false, {}, rebinding),
      connections: 1,
      headersTimeoutMs: 2000,
      bodyTimeoutMs: 2000,
      connectTimeoutMs: 2000,
      verifyTls: false,
    });
    try {
      const url = new URL(`http://rebind.test:${port}/`);
      await expect(
        route.request(url, { origin: url.origin, path: '/', method: 'GET', headers: {} }),
      ).rejects.toMatchObject({ kind: 'blocked_address' });
      expect(answers).toBe(2);
    } finally {
      await route.close();
    }
    expect(p.targets).toEqual([]);
    expect(seen).toHaveLength(0);
  });
});
