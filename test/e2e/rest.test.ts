/**
 * The REST API as a client uses it: real HTTP (`fetch`) to the node:http server of `crawl-cluster local`,
 * on an ephemeral port, over the REST deps of the Lambda (functions/rest/deps.ts) pointed at the test
 * cluster's Kafka topics and Redis prefix, with the real monitors behind them.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRestDeps, type RestDeps } from '../../functions/rest/deps.ts';
import type { Variables } from '../../lib/config/index.ts';
import { silentLog } from '../../lib/ports.ts';
import type { RestOptions } from '../../lib/rest/context.ts';
import type { Envelope } from '../../lib/rest/envelope.ts';
import { type RestServer, startRestServer } from '../../localstack/runtime/rest-server.ts';
import { type Collector, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { uniqueName, waitUntil } from '../helpers/services.ts';

interface Answer {
  status: number;
  headers: Headers;
  json: Envelope<Record<string, unknown> | null> & Record<string, unknown>;
}

async function call(server: RestServer, method: string, path: string, body?: string | object): Promise<Answer> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, json: (await response.json()) as Answer['json'] };
}

/**
 * A request over node:http with exactly these headers (fetch does not let a test set `Host`), as a browser
 * or a rebound page would send it. No keep-alive: each request is on a connection of its own.
 */
function raw(
  server: RestServer,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string | object,
): Promise<Omit<Answer, 'headers'>> {
  return new Promise((resolve, reject) => {
    const req = request(`${server.url}${path}`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        } catch (error) {
          reject(error);
        }
      });
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body));
  });
}

describe('REST API over HTTP against a local cluster', () => {
  let t: TestCluster;
  const opened: { deps: RestDeps; server: RestServer }[] = [];
  let rest: RestServer;
  /** The same API answering poll_id at once, for the poll path. */
  let impatient: RestServer;

  async function serve(vars: Variables, options: RestOptions = {}): Promise<RestServer> {
    const deps = createRestDeps('rest-e2e', silentLog, vars, options);
    const server = await startRestServer({ context: deps.ctx, port: 0 });
    opened.push({ deps, server });
    return server;
  }

  beforeAll(async () => {
    t = await startTestCluster();
    rest = await serve(t.vars);
    impatient = await serve(t.vars, { waitForResponseMs: 0 });
  });
  afterAll(async () => {
    for (const { deps, server } of opened) {
      await server.close();
      await deps.close();
    }
    await t?.stop();
  });

  test('GET / is GREEN with Kafka and Redis connected', async () => {
    const r = await call(rest, 'GET', '/');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      kafka_connected: true,
      redis_connected: true,
      node_health: 'GREEN',
      uptime_sec: expect.any(Number),
      status: 'SUCCESS',
      data: { node_health: 'GREEN' },
    });
  });

  test('a fed crawl is answered data null and queued in Redis by the kafka-monitor', async () => {
    const crawlid = uniqueName('c');
    const r = await call(rest, 'POST', '/feed', { url: 'http://example.com/rest', appid: 'app-rest', crawlid });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'SUCCESS', data: null, error: null });
    const info = await waitUntil('the crawl to be queued', () =>
      t.deps.ctx.frontier.crawlInfo('link', 'app-rest', crawlid),
    );
    expect(info.queued).toBe(1);
    expect(info.settings).toMatchObject({ appid: 'app-rest', crawlid, spiderid: 'link', priority: 1 });
  });

  test('a fed info request is answered with the real reply within the wait', async () => {
    const crawlid = uniqueName('c');
    await call(rest, 'POST', '/feed', { url: 'http://info.example.com/', appid: 'app-rest', crawlid });
    await waitUntil('the crawl to be queued', () => t.deps.ctx.frontier.crawlInfo('link', 'app-rest', crawlid));
    const uuid = uniqueName('u');
    const started = Date.now();
    const r = await call(rest, 'POST', '/feed', { action: 'info', appid: 'app-rest', uuid, crawlid, spiderid: 'link' });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      status: 'SUCCESS',
      error: null,
      data: {
        server_time: expect.any(Number),
        uuid,
        appid: 'app-rest',
        crawlid,
        spiderid: 'link',
        total_pending: 1,
        total_domains: 1,
        domains: { 'example.com': { low_priority: 1, high_priority: 1, total: 1 } },
      },
    });
  });

  test('a reply that comes after the wait is answered by /poll once, then 404', async () => {
    const uuid = uniqueName('u');
    const fed = await call(impatient, 'POST', '/feed', { uuid, appid: 'app-rest', stats: 'rest' });
    expect(fed.status).toBe(200);
    expect(fed.json).toEqual({ status: 'SUCCESS', data: { poll_id: uuid }, error: null });
    const polled = await waitUntil('the reply to be stored', async () => {
      const r = await call(rest, 'POST', '/poll', { poll_id: uuid });
      return r.status === 200 ? r : undefined;
    });
    expect(polled.json.status).toBe('SUCCESS');
    expect(polled.json.data).toMatchObject({ stats: 'rest', uuid, appid: 'app-rest', total: expect.any(Object) });
    // This file's REST requests were counted before the reply was built.
    expect((polled.json.data?.total as { lifetime?: number } | undefined)?.lifetime).toBeGreaterThan(0);
    const again = await call(rest, 'POST', '/poll', { poll_id: uuid });
    expect(again.status).toBe(404);
    expect(again.json).toEqual({
      status: 'FAILURE',
      data: null,
      error: { message: 'Could not find matching poll_id' },
    });
  });

  test('invalid JSON is answered 400 invalid_json', async () => {
    const r = await call(rest, 'POST', '/feed', '{"url": "http://example.com/", ');
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({
      status: 'FAILURE',
      data: null,
      error: { message: 'The payload must be valid JSON.', kind: 'invalid_json' },
    });
  });

  test('a schema violation is answered 400 with the rejection details', async () => {
    const r = await call(rest, 'POST', '/feed', {
      url: 'http://example.com/',
      appid: 'app-rest',
      crawlid: 'c',
      maxdepth: 9,
    });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({
      message: 'JSON did not validate against schema.',
      kind: 'schema',
      details: [{ path: '/maxdepth', message: 'must be <= 3' }],
    });
  });

  test('a 2 MiB body is answered 413 and the server keeps serving', async () => {
    const body = JSON.stringify({
      url: 'http://example.com/',
      appid: 'app-rest',
      crawlid: 'big',
      attrs: { pad: 'x'.repeat(2 * 1024 * 1024) },
    });
    const r = await call(rest, 'POST', '/feed', body);
    expect(r.status).toBe(413);
    expect(r.json).toMatchObject({ status: 'FAILURE', error: { kind: 'too_large' } });
    expect((await call(rest, 'GET', '/')).status).toBe(200);
  });

  test('an unknown path is 404 and a wrong method 405 with Allow', async () => {
    expect((await call(rest, 'GET', '/nope')).status).toBe(404);
    const r = await call(rest, 'GET', '/poll');
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('POST');
  });

  test('requests are counted in rest:* stats within a flush interval and the node beats as kind rest', async () => {
    const stats = t.deps.ctx.stats;
    // Counts are written off the request path, once per second (lib/rest/stats-tally.ts).
    const counts = await waitUntil('the counts to be written', async () => {
      const read = await stats.read(['rest:total', 'rest:fail', 'rest:plugin:crawl'], Date.now());
      return (read['rest:total']?.lifetime ?? 0) >= 10 ? read : undefined;
    });
    expect(counts['rest:total']?.lifetime).toBeGreaterThanOrEqual(10);
    expect(counts['rest:fail']?.lifetime).toBeGreaterThanOrEqual(4);
    expect(counts['rest:plugin:crawl']?.lifetime).toBeGreaterThanOrEqual(2);
    expect((await stats.live('rest', Date.now(), 300_000)).some((id) => id.startsWith('rest-e2e@'))).toBe(true);
  });

  test('with Redis and Kafka unreachable, / is RED, /feed and /poll answer 500 with a message', async () => {
    const down = await serve(
      { ...t.vars, REDIS_PORT: 1, REDIS_CLUSTER: false, KAFKA_BROKERS: '127.0.0.1:1', KAFKA_CONNECT_TIMEOUT_MS: 200 },
      { sendTimeoutMs: 2000 },
    );
    const health = await call(down, 'GET', '/');
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ kafka_connected: false, redis_connected: false, node_health: 'RED' });
    const fed = await call(down, 'POST', '/feed', { url: 'http://example.com/', appid: 'app-rest', crawlid: 'c' });
    expect(fed.status).toBe(500);
    expect(fed.json).toMatchObject({ status: 'FAILURE', data: null, error: { message: 'Unable to connect to Kafka' } });
    const polled = await call(down, 'POST', '/poll', { poll_id: 'u' });
    expect(polled.status).toBe(500);
    expect(polled.json.error).toMatchObject({ message: 'Unable to connect to Redis', cause: expect.any(String) });
  });

  describe('refusing what a web page in a local browser sends (CSRF, DNS rebinding)', () => {
    const appid = 'app-csrf';
    /** Everything produced to `<p>.incoming` (stopped with the cluster). */
    let incoming: Collector;
    beforeAll(async () => {
      incoming = await t.collect(t.topics.incoming);
    });

    /**
     * Feeds a valid JSON crawl as a marker after the refused requests and waits for it on `<p>.incoming`:
     * the same appid is the same partition, so anything produced before it would have arrived first. Then
     * checks that no message of `refused` (crawlids, or a stop's uuid) arrived there, and no such crawl was
     * queued.
     */
    async function expectNeverProduced(refused: string[]): Promise<void> {
      const marker = uniqueName('marker');
      const fed = await call(rest, 'POST', '/feed', { url: 'http://example.com/m', appid, crawlid: marker });
      expect(fed.status).toBe(200);
      await incoming.waitFor((m) => m.crawlid === marker, 'the marker crawl on incoming');
      const leaked = incoming.messages.filter(
        (m) => refused.includes(m.crawlid as string) || refused.includes(m.uuid as string),
      );
      expect(leaked).toEqual([]);
      await waitUntil('the marker crawl to be queued', () => t.deps.ctx.frontier.crawlInfo('link', appid, marker));
      for (const crawlid of refused) {
        expect(await t.deps.ctx.frontier.crawlInfo('link', appid, crawlid), crawlid).toBeUndefined();
      }
    }

    test('a crawl and a stop POSTed as text/plain (a no-cors page) are answered 400 and never reach Kafka', async () => {
      const victim = uniqueName('victim');
      await call(rest, 'POST', '/feed', { url: 'http://example.com/victim', appid, crawlid: victim });
      await waitUntil('the crawl to be queued', () => t.deps.ctx.frontier.crawlInfo('link', appid, victim));

      const crawlid = uniqueName('plain');
      const plain = await raw(
        rest,
        'POST',
        '/feed',
        { host: new URL(rest.url).host, 'content-type': 'text/plain;charset=UTF-8' },
        { url: 'http://example.com/plain', appid, crawlid },
      );
      expect(plain.status).toBe(400);
      expect(plain.json).toMatchObject({
        status: 'FAILURE',
        data: null,
        error: { message: 'The payload must be valid JSON.', kind: 'invalid_json' },
      });
      const uuid = uniqueName('u');
      const stop = await fetch(`${rest.url}/feed`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify({ action: 'stop', appid, crawlid: victim, spiderid: 'link', uuid }),
      });
      expect(stop.status).toBe(400);
      expect(((await stop.json()) as Envelope).error?.message).toBe('The payload must be valid JSON.');

      await expectNeverProduced([crawlid, uuid]);
      expect((await t.deps.ctx.frontier.crawlInfo('link', appid, victim))?.queued).toBe(1);
    });

    test('Host: evil.example (DNS rebinding) is answered 421 on /, /ui, the dashboard data and /feed', async () => {
      const crawlid = uniqueName('rebound');
      for (const host of ['evil.example', `evil.example:${rest.port}`]) {
        for (const path of ['/', '/ui', '/ui/api/overview?appid=app-rest', '/ui/api/fleet']) {
          const r = await raw(rest, 'GET', path, { host });
          expect(r.status, `${host} ${path}`).toBe(421);
          expect(r.json).toEqual({
            status: 'FAILURE',
            data: null,
            error: { message: expect.stringMatching(/^Host "evil\.example(:\d+)?" is not served here/) },
          });
        }
      }
      const fed = await raw(
        rest,
        'POST',
        '/feed',
        { host: `evil.example:${rest.port}`, 'content-type': 'application/json' },
        { url: 'http://example.com/rebound', appid, crawlid },
      );
      expect(fed.status).toBe(421);
      await expectNeverProduced([crawlid]);
    });

    test('a cross-origin POST /feed with Origin http://evil.example is answered 403 and never reaches Kafka', async () => {
      const crawlid = uniqueName('xorigin');
      const r = await raw(
        rest,
        'POST',
        '/feed',
        { host: new URL(rest.url).host, origin: 'http://evil.example', 'content-type': 'application/json' },
        { url: 'http://example.com/xorigin', appid, crawlid },
      );
      expect(r.status).toBe(403);
      expect(r.json).toEqual({
        status: 'FAILURE',
        data: null,
        error: { message: expect.stringContaining('Origin "http://evil.example" is not this server\'s own') },
      });
      await expectNeverProduced([crawlid]);
    });

    test('a same-origin POST /feed with Origin http://127.0.0.1:PORT, and one via localhost, are queued', async () => {
      const viaIp = uniqueName('same');
      const viaName = uniqueName('same');
      const ip = await raw(
        rest,
        'POST',
        '/feed',
        { host: `127.0.0.1:${rest.port}`, origin: `http://127.0.0.1:${rest.port}`, 'content-type': 'application/json' },
        { url: 'http://example.com/same', appid, crawlid: viaIp },
      );
      expect(ip).toEqual({ status: 200, json: { status: 'SUCCESS', data: null, error: null } });
      const name = await raw(
        rest,
        'POST',
        '/feed',
        {
          host: `localhost:${rest.port}`,
          origin: `http://localhost:${rest.port}`,
          'content-type': 'application/json; charset=utf-8',
        },
        { url: 'http://example.com/same', appid, crawlid: viaName },
      );
      expect(name.status).toBe(200);
      for (const crawlid of [viaIp, viaName]) {
        const info = await waitUntil('the crawl to be queued', () =>
          t.deps.ctx.frontier.crawlInfo('link', appid, crawlid),
        );
        expect(info.queued).toBe(1);
      }
    });
  });
});
