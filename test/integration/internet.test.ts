/**
 * The simulated internet served (localstack/site/internet-server.ts): each host on its own loopback address, robots.txt
 * per host, pages of the size and link set the model says, errors as the model says (500; 503 and 429 with
 * Retry-After on odd requests; resets), a dead host that never answers and a drip host that answers slowly. Also from
 * a child process.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractLinks } from '../../lib/crawl/extract/links.ts';
import { type Internet, startInternet, startInternetProcess } from '../../localstack/site/internet-server.ts';

const OPTIONS = {
  ...{ seed: 7, hosts: 20, pages: 400, medianLatencyMs: 5, dripMs: 600, deadShare: 0.05, dripShare: 0.05 },
  ...{ e500Share: 0.03, e503Share: 0.03, e429Share: 0.03, resetShare: 0.03 },
};

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  ms: number;
}

/** GET `path` from `address:port` with Host `host`; rejects on a reset, resolves `undefined` after `timeoutMs`. */
function get(address: string, port: number, host: string, path: string, timeoutMs = 3000): Promise<Answer | undefined> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: address, port, path, headers: { host: `${host}:${port}` }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          ms: Date.now() - started,
        }),
      );
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => {
      req.destroy();
      resolve(undefined);
    });
    req.on('error', reject);
    req.end();
  });
}

let web: Internet;
beforeAll(async () => {
  web = await startInternet(OPTIONS);
});
afterAll(async () => {
  await web.close();
});

const fetchPage = (n: number, timeoutMs?: number) => {
  const h = web.hostOf(n);
  return get(h.address, web.port, h.name, web.page(n).path, timeoutMs);
};
const find = (f: (n: number) => boolean) => {
  const n = Array.from({ length: web.pages }, (_, i) => i).find(f);
  if (n === undefined) throw new Error('no such page in the fixture');
  return n;
};
const okHost = (n: number) => web.hostOf(n).kind === 'ok';

describe('simulated internet server', () => {
  it('serves each page on its own host address, of about its size, with the links the model gives', async () => {
    const n = find((i) => okHost(i) && web.page(i).error === 'none');
    const a = await fetchPage(n);
    expect(a?.status).toBe(200);
    expect(a?.body.length).toBeGreaterThanOrEqual(web.page(n).bytes * 0.9);
    expect(a?.body.length).toBeLessThan(web.page(n).bytes * 1.15 + 4000);
    const links = extractLinks(a?.body ?? '', web.url(n)).map((l) => l.url);
    for (const m of web.linksOf(n)) expect(links).toContain(web.url(m));
    // Another host's address does not serve it.
    const other = web.hosts[(web.hostOf(n).index + 1) % web.hosts.length];
    const wrong = await get(other?.address ?? '', web.port, other?.name ?? '', web.page(n).path);
    expect(wrong?.status).toBe(404);
  });

  it('serves robots.txt per host', async () => {
    for (const h of web.hosts.filter((x) => x.kind !== 'dead').slice(0, 5)) {
      const a = await get(h.address, web.port, h.name, '/robots.txt');
      expect(a?.status).toBe(200);
      expect(a?.body).toBe(web.robotsTxt(h.index));
    }
  });

  it('answers 500 always, 503 and 429 (Retry-After) on odd requests, and resets', async () => {
    const e500 = find((i) => okHost(i) && web.page(i).error === 'e500');
    expect((await fetchPage(e500))?.status).toBe(500);
    expect((await fetchPage(e500))?.status).toBe(500);
    const e503 = find((i) => okHost(i) && web.page(i).error === 'e503');
    expect((await fetchPage(e503))?.status).toBe(503);
    expect((await fetchPage(e503))?.status).toBe(200);
    const e429 = find((i) => okHost(i) && web.page(i).error === 'e429');
    const first = await fetchPage(e429);
    expect(first?.status).toBe(429);
    expect(first?.headers['retry-after']).toBe('1');
    expect((await fetchPage(e429))?.status).toBe(200);
    const reset = find((i) => okHost(i) && web.page(i).error === 'reset');
    await expect(fetchPage(reset)).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(web.hits.get(`${web.hostOf(e503).name}${web.page(e503).path}`)).toBe(2);
  });

  it('has a dead host that never answers and a drip host that answers slowly', async () => {
    const dead = find((i) => web.hostOf(i).kind === 'dead');
    expect(await fetchPage(dead, 500)).toBeUndefined();
    const h = web.hostOf(dead);
    expect(await get(h.address, web.port, h.name, '/robots.txt', 500)).toBeUndefined();
    const drip = find((i) => web.hostOf(i).kind === 'drip' && web.page(i).error === 'none');
    const a = await fetchPage(drip);
    expect(a?.status).toBe(200);
    expect(a?.ms).toBeGreaterThanOrEqual(OPTIONS.dripMs * 0.8);
  });

  it('serves the same internet from a child process', async () => {
    const child = await startInternetProcess(OPTIONS);
    try {
      const n = find((i) => okHost(i) && web.page(i).error === 'none');
      const h = child.hostOf(n);
      const a = await get(h.address, child.port, h.name, child.page(n).path);
      const b = await fetchPage(n);
      expect(a?.status).toBe(200);
      expect(a?.body.replaceAll(`:${child.port}/`, ':PORT/')).toBe(b?.body.replaceAll(`:${web.port}/`, ':PORT/'));
      expect((await child.readHits()).get(`${h.name}${child.page(n).path}`)).toBe(1);
    } finally {
      await child.close();
    }
  });
});
