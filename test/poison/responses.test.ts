/**
 * Poison tier, responses (issue 30, defect 13): a crawler worker PROCESS crawls, through the real local cluster,
 * pages whose responses fail the same way on every fetch (10,000 Set-Cookie headers, a header the HTTP parser
 * refuses, a body that does not decompress) and a site whose robots.txt redirects to itself. Each malformed page is
 * fetched once and yields one `success:false` page naming why; the page behind the looping robots.txt is fetched.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Collector, completeNotice, crawlPages, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { type CrawlerProcess, startCrawlerProcess } from '../helpers/crawler-process.ts';
import { waitUntil } from '../helpers/services.ts';

const APPID = 'poisonresponses';
/** Serves the malformed pages, and a robots.txt that allows everything. */
const SITE = 'malformed.test';
/** Serves `/page`, behind a robots.txt that redirects to itself. */
const LOOP = 'robots-loop.test';

/** The malformed pages of {@link SITE}, each with what its page's `exception` must name. */
const MALFORMED: [path: string, reason: RegExp][] = [
  ['/set-cookie-10k', /^bad_response: response headers larger than \d+ bytes \(UND_ERR_HEADERS_OVERFLOW\)/],
  ['/bad-header-token', /^bad_response: .*Invalid header token/],
  ['/gzip-corrupt', /^bad_response: body does not decode as gzip/],
];

const crawlidOf = (path: string) => `malformed${path.replaceAll('/', '-')}`;

describe('malformed responses and a looping robots.txt through the local cluster', () => {
  let t: TestCluster;
  let server: Server;
  let port: number;
  let worker: CrawlerProcess;
  let pages: Collector;
  let outbound: Collector;
  /** Requests received per `host path`. */
  const hits = new Map<string, number>();
  const url = (host: string, path: string) => `http://${host}:${port}${path}`;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const host = (req.headers.host ?? '').split(':')[0] ?? '';
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      hits.set(`${host} ${path}`, (hits.get(`${host} ${path}`) ?? 0) + 1);
      if (host === LOOP && path === '/robots.txt') return void res.writeHead(301, { location: '/robots.txt' }).end();
      if (path === '/robots.txt')
        return void res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\n');
      if (path === '/set-cookie-10k') {
        res.setHeader(
          'set-cookie',
          Array.from({ length: 10_000 }, (_, i) => `c${i}=v; Path=/`),
        );
        return void res.writeHead(200, { 'content-type': 'text/html' }).end('<p>never read</p>');
      }
      // node:http would refuse to send this header, so it goes on the socket as is.
      if (path === '/bad-header-token')
        return void req.socket.end('HTTP/1.1 200 OK\r\nBad Header: x\r\nContent-Length: 2\r\n\r\nok');
      if (path === '/gzip-corrupt')
        return void res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end('not gzip');
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body><p>fine</p></body></html>');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;

    t = await startTestCluster({
      ALLOW_PRIVATE_NETWORKS: true,
      QUEUE_HITS: 1000,
      QUEUE_WINDOW: 1,
      // Fast retries: a page that is retried shows up as several fetches well within the test's time.
      RETRY_BASE_DELAY_MS: 100,
      LOG_LEVEL: 'ERROR',
    });
    pages = await t.collect(t.topics.crawledFirehose);
    outbound = await t.collect(t.topics.outboundFirehose);
    worker = startCrawlerProcess(t.vars, {
      CRAWLER_HOST_MAP: `${SITE}=127.0.0.1,${LOOP}=127.0.0.1`,
      CRAWLER_CONCURRENCY: 4,
    });
    const crawls = [
      ...MALFORMED.map(([path]) => ({ url: url(SITE, path), crawlid: crawlidOf(path) })),
      { url: url(LOOP, '/page'), crawlid: 'robots-loop' },
    ];
    await t.feed(crawls.map((c) => ({ ...c, appid: APPID, maxdepth: 0 })));
    await Promise.all(crawls.map((c) => completeNotice(outbound, c.crawlid, 120_000)));
    // The page topic's collector may lag the notices.
    await waitUntil(
      'every page on the firehose',
      () => crawls.every((c) => crawlPages(pages, c.crawlid).length > 0),
      30_000,
    );
  }, 240_000);
  afterAll(async () => {
    await worker?.stop();
    await t?.stop();
    server?.closeAllConnections();
    server?.close();
  });

  test.each(MALFORMED)('%s is fetched once and yields one success:false page naming why', (path, reason) => {
    const got = crawlPages(pages, crawlidOf(path));
    expect(got, worker.output().slice(-2000)).toHaveLength(1);
    expect(got[0]).toMatchObject({ success: false, status_code: null });
    expect(String(got[0]?.exception)).toMatch(reason);
    expect(hits.get(`${SITE} ${path}`)).toBe(1);
  });

  test('a page whose robots.txt redirects to itself is fetched: robots.txt is unavailable, so all is allowed', () => {
    expect(crawlPages(pages, 'robots-loop'), worker.output().slice(-2000)).toMatchObject([
      { success: true, status_code: 200 },
    ]);
    expect(hits.get(`${LOOP} /page`)).toBe(1);
    expect(hits.get(`${LOOP} /robots.txt`)).toBe(1);
  });
});
