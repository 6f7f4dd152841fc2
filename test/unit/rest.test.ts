/**
 * The REST API's router with in-memory fakes and a fake clock: every status code, the envelope, waiting for
 * a stored reply, polling, stats and heartbeats; and the API Gateway adapter around it.
 */
import { describe, expect, it, vi } from 'vitest';

// Ahead of the handler module: its Powertools logger and metrics read the environment at import.
import '../helpers/silent-powertools.ts';

import { restHandler } from '../../functions/rest/handler.ts';
import { decodeHttpApiEvent, type HttpApiEvent } from '../../functions/rest/http-api.ts';
import type { SlotLoss, StateLossRecord } from '../../lib/ports.ts';
import type { RestContext, RestOptions } from '../../lib/rest/context.ts';
import type { Envelope, RestResponse } from '../../lib/rest/envelope.ts';
import { checkHostAndOrigin, defaultAllowedHosts } from '../../lib/rest/host-check.ts';
import { isJsonContentType } from '../../lib/rest/input.ts';
import { createRestRouter } from '../../lib/rest/router.ts';
import { MAX_REQUEST_BYTES } from '../../lib/schemas/index.ts';
import { lambdaContext } from '../helpers/events.ts';
import { TEST_NODE_ID, TEST_NOW, type TestContext, testContext } from '../helpers/fakes.ts';

/** A REST context of fakes: the monitors' test context, switchable health probes, and a clock that `sleep` advances. */
interface RestTest {
  ctx: RestContext & Pick<TestContext, 'sink' | 'replies' | 'stats' | 'log'>;
  /** The fake clock (epoch ms). */
  clock: { now: number };
  /** Every `sleep` the router asked for, in ms. */
  sleeps: number[];
  /** Called after each sleep (after the clock moved): tests store a reply from here. */
  onSleep: (count: number) => Promise<void> | void;
  up: { kafka: boolean | 'hang'; redis: boolean | 'hang' };
  /** Writes the request counts held by the router (they are written off the request path). */
  flush(): Promise<void>;
  /** Sends `content-type: application/json` unless `headers` says otherwise. */
  call(
    method: string,
    path: string,
    body?: string | object | Uint8Array,
    headers?: Record<string, string | undefined>,
  ): Promise<RestResponse & { json: Envelope }>;
}

function restTest(options: RestOptions = {}, startedAtAgoMs = 0): RestTest {
  const clock = { now: TEST_NOW };
  const up: RestTest['up'] = { kafka: true, redis: true };
  const probe = (which: 'kafka' | 'redis') => async () => {
    if (up[which] === 'hang') return new Promise<void>(() => {});
    if (!up[which]) throw new Error(`${which} unreachable`);
  };
  const sleeps: number[] = [];
  const ctx: RestTest['ctx'] = {
    ...testContext({ now: () => clock.now }),
    health: { kafka: probe('kafka'), redis: probe('redis') },
    startedAt: TEST_NOW - startedAtAgoMs,
    options: { probeTimeoutMs: 20, ...options },
    sleep: async (ms) => {
      sleeps.push(ms);
      clock.now += ms;
      await t.onSleep(sleeps.length);
    },
  };
  // One router per test, as an adapter builds one per context; it reads `ctx` on every call, so tests may
  // swap parts of it afterwards.
  const router = createRestRouter(ctx);
  const t: RestTest = {
    ctx,
    clock,
    sleeps,
    onSleep: () => {},
    up,
    flush: () => router.flushStats(),
    async call(method, path, body, headers = { 'content-type': 'application/json' }) {
      const bytes =
        body === undefined || body instanceof Uint8Array
          ? body
          : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
      const response = await router({ method, path, headers, body: bytes });
      return { ...response, json: JSON.parse(response.body) as Envelope };
    },
  };
  return t;
}

const crawl = { url: 'http://example.com/start', appid: 'app1', crawlid: 'c1' };
const info = { action: 'info', appid: 'app1', uuid: 'u-1', spiderid: 'link', crawlid: 'c1' };
const storedReply = { server_time: 1, uuid: 'u-1', appid: 'app1', crawlid: 'c1', total_pending: 3 };

describe('GET / (health)', () => {
  it('answers 200 GREEN with Scrapy Cluster fields at the top level and the same report as data', async () => {
    const t = restTest({}, 125_400);
    const r = await t.call('GET', '/');
    const report = {
      kafka_connected: true,
      redis_connected: true,
      uptime_sec: 125,
      my_id: TEST_NODE_ID,
      node_health: 'GREEN',
    };
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(r.json).toEqual({ ...report, status: 'SUCCESS', data: report, error: null });
  });

  it('answers YELLOW when only Redis answers, YELLOW when a Kafka probe hangs past the bound, RED with neither', async () => {
    const t = restTest();
    t.up.kafka = false;
    expect((await t.call('GET', '/')).json).toMatchObject({
      kafka_connected: false,
      redis_connected: true,
      node_health: 'YELLOW',
    });
    t.up.kafka = 'hang';
    expect((await t.call('GET', '/')).json).toMatchObject({ kafka_connected: false, node_health: 'YELLOW' });
    t.up.redis = false;
    const r = await t.call('GET', '/');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ kafka_connected: false, redis_connected: false, node_health: 'RED' });
  });

  it('answers POST / with the health report too, as Scrapy Cluster did', async () => {
    const r = await restTest().call('POST', '/', '');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ node_health: 'GREEN', status: 'SUCCESS' });
  });

  it('answers RED with the reason while frontier state loss is not acknowledged; POST /ack-lost makes it GREEN', async () => {
    const t = restTest();
    const loss: SlotLoss = {
      tag: '{k:f:link:0}',
      epoch: 'e1',
      at: TEST_NOW,
      reason: 'frontier partition {k:f:link:0} was emptied',
    };
    let ackedAt: number | undefined;
    const record = async (): Promise<StateLossRecord> => ({
      losses: [loss],
      open: ackedAt === undefined || loss.at > ackedAt ? [loss] : [],
      ...(ackedAt === undefined ? {} : { ackedAt }),
    });
    t.ctx.lostState = {
      record,
      async ack(nowMs) {
        ackedAt = nowMs;
        return record();
      },
    };

    const red = (await t.call('GET', '/')).json as unknown as Record<string, unknown>;
    expect(red).toMatchObject({ kafka_connected: true, redis_connected: true, node_health: 'RED' });
    expect(red.reason).toBe('frontier state lost (not acknowledged): frontier partition {k:f:link:0} was emptied');
    expect(red.state_lost).toEqual([
      { tag: '{k:f:link:0}', lost_at: Math.floor(TEST_NOW / 1000), reason: loss.reason },
    ]);

    t.clock.now += 1000;
    const ack = await t.call('POST', '/ack-lost', '');
    expect(ack.status).toBe(200);
    expect(ack.json).toMatchObject({ status: 'SUCCESS', data: { acknowledged: 1 } });
    const green = (await t.call('GET', '/')).json as unknown as Record<string, unknown>;
    expect(green.node_health).toBe('GREEN');
    expect(green.state_lost).toBeUndefined();
    expect(green.reason).toBeUndefined();
  });

  it('answers POST /ack-lost 503 when the node has no state record', async () => {
    expect((await restTest().call('POST', '/ack-lost', '')).status).toBe(503);
  });
});

describe('routing', () => {
  it('answers an unknown path 404 in the envelope', async () => {
    const r = await restTest().call('GET', '/nope');
    expect(r.status).toBe(404);
    expect(r.json).toEqual({
      status: 'FAILURE',
      data: null,
      error: { message: 'The desired endpoint does not exist' },
    });
  });

  it('answers a wrong method 405 with Allow, and lists both methods of /', async () => {
    const t = restTest();
    const feed = await t.call('GET', '/feed');
    expect(feed.status).toBe(405);
    expect(feed.headers.allow).toBe('POST');
    expect(feed.json).toMatchObject({
      status: 'FAILURE',
      data: null,
      error: { message: expect.stringContaining('POST') },
    });
    const index = await t.call('DELETE', '/');
    expect(index.status).toBe(405);
    expect(index.headers.allow).toBe('GET, POST');
  });

  it('ignores a query string and one trailing slash', async () => {
    const t = restTest();
    expect((await t.call('POST', '/feed/?x=1', crawl)).status).toBe(200);
    expect((await t.call('GET', '/?verbose')).status).toBe(200);
  });

  it('answers 500 in the envelope when a route fails unexpectedly, and logs it', async () => {
    const t = restTest();
    t.ctx.spiders = {
      has() {
        throw new TypeError('spider registry broken');
      },
    } as unknown as ReadonlySet<string>;
    const r = await t.call('POST', '/feed', crawl);
    expect(r.status).toBe(500);
    expect(r.json).toMatchObject({ status: 'FAILURE', error: { cause: 'spider registry broken' } });
    expect(t.ctx.log.at('error')).toHaveLength(1);
  });
});

describe('POST /feed', () => {
  it('produces a crawl request to <p>.incoming keyed by appid, with defaults filled, and answers data null', async () => {
    const t = restTest();
    const r = await t.call('POST', '/feed', { url: 'example.com/start', appid: 'app1', crawlid: 'c1' });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'SUCCESS', data: null, error: null });
    expect(t.ctx.sink.keys('demo.incoming')).toEqual(['app1']);
    expect(t.ctx.sink.values('demo.incoming')).toEqual([
      {
        url: 'http://example.com/start',
        appid: 'app1',
        crawlid: 'c1',
        spiderid: 'link',
        priority: 1,
        maxdepth: 0,
        expires: 0,
      },
    ]);
    expect(t.sleeps).toEqual([]);
  });

  it('answers non-JSON 400 invalid_json, and an empty body too, producing nothing', async () => {
    const t = restTest();
    for (const body of ['{"url": ', '']) {
      const r = await t.call('POST', '/feed', body);
      expect(r.status).toBe(400);
      expect(r.json).toMatchObject({
        status: 'FAILURE',
        data: null,
        error: { message: 'The payload must be valid JSON.', kind: 'invalid_json', details: [{ path: '' }] },
      });
    }
    expect(t.ctx.sink.sendCalls).toBe(0);
  });

  it('answers attrs nested 10,000 levels deep 400 at /attrs, producing nothing (it was a 500 from a stack overflow)', async () => {
    const t = restTest();
    const body = `{"url":"http://example.com/","appid":"app1","crawlid":"c1","attrs":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
    const r = await t.call('POST', '/feed', body);
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({
      kind: 'schema',
      details: [{ path: '/attrs', message: 'must not nest deeper than 32 levels' }],
    });
    expect(t.ctx.sink.sendCalls).toBe(0);
  });

  it('answers a body that is not UTF-8 400 invalid_json', async () => {
    const r = await restTest().call('POST', '/feed', new Uint8Array([0x7b, 0xff, 0x7d]));
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({
      kind: 'invalid_json',
      details: [{ path: '', message: 'is not valid UTF-8' }],
    });
  });

  it('answers a schema violation 400 with every rejection detail, producing nothing', async () => {
    const t = restTest();
    const r = await t.call('POST', '/feed', { ...crawl, priority: 500, crazykey: 1 });
    expect(r.status).toBe(400);
    expect(r.json.status).toBe('FAILURE');
    expect(r.json.data).toBeNull();
    expect(r.json.error).toMatchObject({ message: 'JSON did not validate against schema.', kind: 'schema' });
    expect(r.json.error?.cause).toContain('/priority');
    expect(r.json.error?.details).toEqual(
      expect.arrayContaining([
        { path: '/crazykey', message: 'is not an allowed field' },
        { path: '/priority', message: 'must be <= 100' },
      ]),
    );
    expect(t.ctx.sink.sendCalls).toBe(0);
  });

  it('answers an unknown spider and an unclassifiable request 400 with their kinds', async () => {
    const t = restTest();
    const spider = await t.call('POST', '/feed', { ...crawl, spiderid: 'nope' });
    expect(spider.status).toBe(400);
    expect(spider.json.error).toMatchObject({ kind: 'unknown_spider', details: [{ path: '/spiderid' }] });
    const unknown = await t.call('POST', '/feed', { hello: 'world' });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error?.kind).toBe('unknown_type');
  });

  it('answers a body one byte over the limit 413, and one at the limit is read', async () => {
    const t = restTest({ maxBodyBytes: 200 });
    const over = await t.call('POST', '/feed', 'x'.repeat(201));
    expect(over.status).toBe(413);
    expect(over.json).toMatchObject({ status: 'FAILURE', data: null, error: { kind: 'too_large' } });
    const at = await t.call('POST', '/feed', JSON.stringify(crawl).padEnd(200, ' '));
    expect(at.status).toBe(200);
  });

  it('answers a body over the default 1 MiB limit 413 on every route', async () => {
    const t = restTest();
    const big = new Uint8Array(MAX_REQUEST_BYTES + 1);
    for (const path of ['/feed', '/poll', '/']) expect((await t.call('POST', path, big)).status).toBe(413);
    expect(t.ctx.sink.sendCalls).toBe(0);
  });

  it('waits for the stored reply, reading it every 100 ms, and answers it as data', async () => {
    const t = restTest();
    t.onSleep = async (n) => {
      if (n === 3) await t.ctx.replies.put('u-1', JSON.stringify(storedReply), 300, 'app1');
    };
    const r = await t.call('POST', '/feed', info);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'SUCCESS', data: storedReply, error: null });
    expect(t.sleeps).toEqual([100, 100, 100]);
    expect(t.ctx.sink.values('demo.incoming')).toEqual([info]);
    expect(t.ctx.replies.uuids()).toEqual([]);
  });

  it("never answers with a reply stored under the same uuid before the request, even another app's", async () => {
    const t = restTest();
    const old = { stats: 'queue', uuid: 'u-1', appid: 'testapp', queues: { total_backlog: 7 } };
    await t.ctx.replies.put('u-1', JSON.stringify(old), 300, 'testapp');
    await t.ctx.replies.put('u-1', JSON.stringify({ ...storedReply, total_pending: 99 }), 300, 'app1');
    t.onSleep = async (n) => {
      if (n === 1)
        await t.ctx.replies.put('u-1', JSON.stringify({ ...old, queues: { total_backlog: 8 } }), 300, 'testapp');
      if (n === 2) await t.ctx.replies.put('u-1', JSON.stringify(storedReply), 300, 'app1');
    };
    const r = await t.call('POST', '/feed', info);
    expect(r.json).toEqual({ status: 'SUCCESS', data: storedReply, error: null });
    expect(t.sleeps).toEqual([100, 100]);
    // testapp's replies stay for testapp's /poll.
    expect((await t.call('POST', '/poll', { poll_id: 'u-1' })).json.data).toMatchObject({ appid: 'testapp' });
  });

  it('answers poll_id, not an older reply of its own app, when no new reply comes', async () => {
    const t = restTest({ waitForResponseMs: 300 });
    await t.ctx.replies.put('u-1', JSON.stringify({ ...storedReply, total_pending: 99 }), 300, 'app1');
    const r = await t.call('POST', '/feed', info);
    expect(r.json).toEqual({ status: 'SUCCESS', data: { poll_id: 'u-1' }, error: null });
  });

  it('answers {"poll_id"} after WAIT_FOR_RESPONSE_TIME without a reply, and a later reply stays for /poll', async () => {
    const t = restTest({ waitForResponseMs: 5000 });
    const r = await t.call('POST', '/feed', info);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'SUCCESS', data: { poll_id: 'u-1' }, error: null });
    expect(t.sleeps).toHaveLength(50);
    expect(t.clock.now - TEST_NOW).toBe(5000);
    await t.ctx.replies.put('u-1', JSON.stringify(storedReply), 300, 'app1');
    const polled = await t.call('POST', '/poll', { poll_id: 'u-1' });
    expect(polled.json.data).toEqual(storedReply);
  });

  it('with a wait of 0 reads the reply once and answers poll_id at once', async () => {
    const t = restTest({ waitForResponseMs: 0 });
    const r = await t.call('POST', '/feed', { uuid: 'u-s', appid: 'app1', stats: 'queue' });
    expect(r.json.data).toEqual({ poll_id: 'u-s' });
    expect(t.sleeps).toEqual([]);
  });

  it('waits for stats and domain config requests too, and never sleeps past the deadline', async () => {
    const t = restTest({ waitForResponseMs: 250 });
    const stats = await t.call('POST', '/feed', { uuid: 'u-s', appid: 'app1' });
    expect(stats.json.data).toEqual({ poll_id: 'u-s' });
    expect(t.sleeps).toEqual([100, 100, 50]);
    const domain = await t.call('POST', '/feed', {
      uuid: 'u-d',
      appid: 'app1',
      domain: 'example.com',
      action: 'domain-remove',
    });
    expect(domain.json.data).toEqual({ poll_id: 'u-d' });
  });

  it('answers 500 "Unable to connect to Kafka" when producing fails', async () => {
    const t = restTest();
    t.ctx.sink.down = true;
    const r = await t.call('POST', '/feed', crawl);
    expect(r.status).toBe(500);
    expect(r.json).toEqual({
      status: 'FAILURE',
      data: null,
      error: { message: 'Unable to connect to Kafka', cause: expect.stringContaining('fake sink down') },
    });
  });

  it('answers 500 when Kafka does not acknowledge within the send bound', async () => {
    const t = restTest({ sendTimeoutMs: 20 });
    t.ctx.sink.send = () => new Promise(() => {});
    const r = await t.call('POST', '/feed', crawl);
    expect(r.status).toBe(500);
    expect(r.json.error).toEqual({ message: 'Unable to connect to Kafka', cause: 'Kafka did not answer within 20 ms' });
  });

  it('answers 500 "Unable to connect to Redis" with the poll_id when the reply cannot be read', async () => {
    const t = restTest();
    t.ctx.replies.down = true;
    const r = await t.call('POST', '/feed', info);
    expect(r.status).toBe(500);
    expect(r.json).toMatchObject({
      status: 'FAILURE',
      data: { poll_id: 'u-1' },
      error: { message: 'Unable to connect to Redis' },
    });
    expect(t.ctx.sink.values('demo.incoming')).toHaveLength(1);
  });
});

describe('POST /poll', () => {
  it('answers a stored reply once, then 404', async () => {
    const t = restTest();
    await t.ctx.replies.put('u-1', JSON.stringify(storedReply), 300, 'app1');
    const first = await t.call('POST', '/poll', { poll_id: 'u-1' });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ status: 'SUCCESS', data: storedReply, error: null });
    const second = await t.call('POST', '/poll', { poll_id: 'u-1' });
    expect(second.status).toBe(404);
    expect(second.json).toEqual({
      status: 'FAILURE',
      data: null,
      error: { message: 'Could not find matching poll_id' },
    });
  });

  it('answers an invalid poll request 400 with details, and non-JSON 400', async () => {
    const t = restTest();
    const missing = await t.call('POST', '/poll', { id: 'u-1' });
    expect(missing.status).toBe(400);
    expect(missing.json.error?.details).toEqual([
      { path: '/id', message: 'is not an allowed field' },
      { path: '/poll_id', message: 'is required' },
    ]);
    const long = await t.call('POST', '/poll', { poll_id: 'x'.repeat(101) });
    expect(long.json.error?.details).toEqual([{ path: '/poll_id', message: 'must be 1 to 100 characters long' }]);
    const notObject = await t.call('POST', '/poll', '["u-1"]');
    expect(notObject.json.error).toMatchObject({
      kind: 'schema',
      details: [{ path: '', message: 'must be an object' }],
    });
    const garbage = await t.call('POST', '/poll', 'poll_id=u-1');
    expect(garbage.status).toBe(400);
    expect(garbage.json.error?.kind).toBe('invalid_json');
  });

  it('answers 500 "Unable to connect to Redis" when Redis is down', async () => {
    const t = restTest();
    t.ctx.replies.down = true;
    const r = await t.call('POST', '/poll', { poll_id: 'u-1' });
    expect(r.status).toBe(500);
    expect(r.json.error).toMatchObject({ message: 'Unable to connect to Redis' });
  });
});

describe('JSON content type of POST /feed and /poll', () => {
  it('takes application/json with parameters in any case, and +json types', () => {
    for (const value of [
      'application/json',
      'application/json; charset=utf-8',
      'Application/JSON;Charset=UTF-8',
      '  application/json  ',
      'application/vnd.foo+json',
      'application/problem+json; charset=utf-8',
    ]) {
      expect(isJsonContentType(value), value).toBe(true);
    }
  });

  it('refuses text/plain, forms, multipart, other types, look-alikes and no content type at all', () => {
    for (const value of [
      undefined,
      '',
      'text/plain',
      'text/plain;charset=UTF-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'text/json',
      'application/jsonp',
      'application/json-seq',
      'application/+json',
      'application/json, text/plain',
      'application/vnd.foo+json/x',
    ]) {
      expect(isJsonContentType(value), String(value)).toBe(false);
    }
  });

  it('answers a valid crawl sent as text/plain 400 "The payload must be valid JSON." and produces nothing', async () => {
    const t = restTest();
    const r = await t.call('POST', '/feed', crawl, { 'content-type': 'text/plain;charset=UTF-8' });
    expect(r.status).toBe(400);
    expect(r.json).toEqual({
      status: 'FAILURE',
      data: null,
      error: {
        message: 'The payload must be valid JSON.',
        cause: expect.stringContaining('Content-Type application/json'),
        kind: 'invalid_json',
        details: [
          { path: '', message: 'must be sent with Content-Type application/json (got "text/plain;charset=UTF-8")' },
        ],
      },
    });
    expect(t.ctx.sink.sendCalls).toBe(0);
    await t.flush();
    expect(t.ctx.stats.lifetime('rest:fail')).toBe(1);
    expect(t.ctx.stats.lifetime('rest:plugin:crawl')).toBe(0);
  });

  it('answers a stop sent without a content type, or as a form, 400 and produces nothing', async () => {
    const t = restTest();
    const stop = { action: 'stop', appid: 'app1', uuid: 'u-stop', spiderid: 'link', crawlid: 'c1' };
    const none = await t.call('POST', '/feed', stop, {});
    expect(none.status).toBe(400);
    expect(none.json.error?.details).toEqual([
      { path: '', message: 'must be sent with Content-Type application/json (got none)' },
    ]);
    const form = await t.call('POST', '/feed', stop, { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(400);
    expect(form.json.error?.message).toBe('The payload must be valid JSON.');
    expect(t.ctx.sink.sendCalls).toBe(0);
  });

  it('answers POST /poll as text/plain 400 and leaves the stored reply in place', async () => {
    const t = restTest();
    await t.ctx.replies.put('u-1', JSON.stringify(storedReply), 300, 'app1');
    const r = await t.call('POST', '/poll', { poll_id: 'u-1' }, { 'content-type': 'text/plain' });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ message: 'The payload must be valid JSON.', kind: 'invalid_json' });
    expect(t.ctx.replies.uuids()).toEqual(['u-1']);
  });

  it('serves charset parameters, upper case and +json types as JSON', async () => {
    const t = restTest();
    for (const type of ['application/json; charset=utf-8', 'APPLICATION/JSON', 'application/vnd.crawl+json']) {
      expect((await t.call('POST', '/feed', crawl, { 'content-type': type })).status, type).toBe(200);
    }
    expect(t.ctx.sink.values('demo.incoming')).toHaveLength(3);
  });

  it('still answers JSON that fails the schema with the schema rejection, not the content type one', async () => {
    const r = await restTest().call(
      'POST',
      '/feed',
      { ...crawl, priority: 500 },
      {
        'content-type': 'application/json; charset=utf-8',
      },
    );
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ message: 'JSON did not validate against schema.', kind: 'schema' });
  });

  it('leaves GET / and POST / (health) without a content type alone', async () => {
    const t = restTest();
    expect((await t.call('GET', '/', undefined, {})).status).toBe(200);
    expect((await t.call('POST', '/', 'x', { 'content-type': 'text/plain' })).status).toBe(200);
  });
});

describe('Host and Origin check of the local server', () => {
  const allowed = defaultAllowedHosts('127.0.0.1', 5343);

  it('allows loopback names with the port by default, and the bound address when it is not loopback', () => {
    expect(allowed).toEqual(['127.0.0.1:5343', 'localhost:5343', '[::1]:5343']);
    expect(defaultAllowedHosts('::1', 5343)).toEqual(['127.0.0.1:5343', 'localhost:5343', '[::1]:5343']);
    expect(defaultAllowedHosts('192.168.1.20', 8080)).toEqual([
      '127.0.0.1:8080',
      'localhost:8080',
      '[::1]:8080',
      '192.168.1.20:8080',
    ]);
    expect(defaultAllowedHosts('fd00::5', 8080)).toContain('[fd00::5]:8080');
    expect(defaultAllowedHosts('0.0.0.0', 8080)).toHaveLength(3);
    expect(defaultAllowedHosts('::', 8080)).toHaveLength(3);
    // Clients leave out the default port.
    expect(defaultAllowedHosts('127.0.0.1', 80)).toEqual(expect.arrayContaining(['127.0.0.1:80', 'localhost']));
  });

  it('serves every allowed Host, in any case, without an Origin (curl, Python clients)', () => {
    for (const host of ['127.0.0.1:5343', 'localhost:5343', 'LOCALHOST:5343', '[::1]:5343']) {
      expect(checkHostAndOrigin({ host }, allowed), host).toBeUndefined();
    }
  });

  it('refuses a foreign Host 421 with a message naming it and the hosts served (DNS rebinding)', () => {
    const r = checkHostAndOrigin({ host: 'evil.example:5343' }, allowed);
    expect(r?.status).toBe(421);
    expect(r?.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(r?.body ?? '')).toEqual({
      status: 'FAILURE',
      data: null,
      error: {
        message:
          'Host "evil.example:5343" is not served here: this server answers only to 127.0.0.1:5343, ' +
          'localhost:5343, [::1]:5343 (protection against DNS rebinding)',
      },
    });
  });

  it('refuses a loopback name on another port, a bare name, and a missing or empty Host 421', () => {
    for (const host of ['127.0.0.1:9999', 'localhost', 'evil.example', '127.0.0.1.nip.io:5343', '', undefined]) {
      expect(checkHostAndOrigin({ host }, allowed)?.status, String(host)).toBe(421);
    }
    expect(JSON.parse(checkHostAndOrigin({}, allowed)?.body ?? '').error.message).toMatch(/^A Host header is required/);
  });

  it('serves a same-origin request (http, or https behind a proxy) and refuses a foreign Origin 403', () => {
    const host = '127.0.0.1:5343';
    expect(checkHostAndOrigin({ host, origin: 'http://127.0.0.1:5343' }, allowed)).toBeUndefined();
    // The page opened as localhost posting to 127.0.0.1 is another origin, but both name this server.
    expect(checkHostAndOrigin({ host, origin: 'http://localhost:5343' }, allowed)).toBeUndefined();
    expect(checkHostAndOrigin({ host, origin: 'https://127.0.0.1:5343' }, allowed)).toBeUndefined();
    const r = checkHostAndOrigin({ host, origin: 'http://evil.example' }, allowed);
    expect(r?.status).toBe(403);
    expect(JSON.parse(r?.body ?? '').error.message).toBe(
      'Cross-origin request refused: Origin "http://evil.example" is not this server\'s own ' +
        '(http://127.0.0.1:5343, http://localhost:5343, http://[::1]:5343); requests without Origin are not affected',
    );
  });

  it('refuses Origin null, another port, another scheme, a path and a list 403', () => {
    const host = '127.0.0.1:5343';
    for (const origin of [
      'null',
      '',
      'http://127.0.0.1:5344',
      'http://127.0.0.1',
      'ftp://127.0.0.1:5343',
      'http://127.0.0.1:5343/',
      'http://127.0.0.1:5343, http://evil.example',
    ]) {
      expect(checkHostAndOrigin({ host, origin }, allowed)?.status, origin).toBe(403);
    }
  });

  it('checks the Host before the Origin, and caps an echoed value', () => {
    expect(checkHostAndOrigin({ host: 'evil.example', origin: 'http://evil.example' }, allowed)?.status).toBe(421);
    const long = checkHostAndOrigin({ host: `${'a'.repeat(5000)}.example` }, allowed);
    expect(long?.body.length).toBeLessThan(400);
  });

  it('takes a custom list: a proxy name is served, the defaults no longer are', () => {
    const custom = ['crawl.internal', '127.0.0.1:5343'];
    expect(checkHostAndOrigin({ host: 'crawl.internal', origin: 'https://crawl.internal' }, custom)).toBeUndefined();
    expect(checkHostAndOrigin({ host: 'localhost:5343' }, custom)?.status).toBe(421);
    expect(checkHostAndOrigin({ host: 'crawl.internal', origin: 'http://localhost:5343' }, custom)?.status).toBe(403);
  });
});

describe('stats and heartbeat', () => {
  it('counts rest:total for every request, rest:fail for failures and rest:plugin:<type> for valid feeds', async () => {
    const t = restTest({ waitForResponseMs: 0 });
    await t.call('POST', '/feed', crawl);
    await t.call('POST', '/feed', crawl);
    await t.call('POST', '/feed', info);
    await t.call('POST', '/feed', '{');
    await t.call('GET', '/nope');
    await t.call('GET', '/');
    await t.flush();
    expect(t.ctx.stats.lifetime('rest:total')).toBe(6);
    expect(t.ctx.stats.lifetime('rest:fail')).toBe(2);
    expect(t.ctx.stats.lifetime('rest:plugin:crawl')).toBe(2);
    expect(t.ctx.stats.lifetime('rest:plugin:action')).toBe(1);
  });

  it('beats as kind rest at most once per heartbeat interval', async () => {
    const t = restTest({ heartbeatEveryMs: 30_000 });
    const beat = vi.spyOn(t.ctx.stats, 'beat');
    await t.call('GET', '/');
    await t.call('GET', '/');
    t.clock.now += 30_000;
    await t.call('GET', '/');
    await t.flush();
    expect(beat.mock.calls.map((c) => [c[0], c[1], c[2]])).toEqual([
      ['rest', TEST_NODE_ID, TEST_NOW],
      ['rest', TEST_NODE_ID, TEST_NOW + 30_000],
    ]);
    expect(await t.ctx.stats.live('rest', t.clock.now, 300_000)).toEqual([TEST_NODE_ID]);
  });

  it('answers as usual when the stats store is down, logs a warning, and writes the counts once it is back', async () => {
    const t = restTest();
    t.ctx.stats.down = true;
    const r = await t.call('POST', '/feed', crawl);
    expect(r.status).toBe(200);
    await t.flush();
    expect(new Set(t.ctx.log.at('warn').map((l) => l.message))).toEqual(new Set(['rest: stats update failed']));
    expect(t.ctx.stats.lifetime('rest:total')).toBe(0);
    t.ctx.stats.down = false;
    await t.flush();
    expect(t.ctx.stats.lifetime('rest:total')).toBe(1);
    expect(t.ctx.stats.lifetime('rest:plugin:crawl')).toBe(1);
  });
});

describe('API Gateway HTTP API adapter', () => {
  const event = (overrides: Partial<HttpApiEvent> = {}): HttpApiEvent => ({
    version: '2.0',
    routeKey: '$default',
    rawPath: '/feed',
    rawQueryString: '',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(crawl),
    isBase64Encoded: false,
    requestContext: { http: { method: 'POST', path: '/feed' }, stage: '$default', requestId: 'r1' },
    ...overrides,
  });

  it('decodes a base64 body and strips a named stage from the path', () => {
    const request = decodeHttpApiEvent(
      event({
        rawPath: '/prod/poll',
        body: Buffer.from('{"poll_id":"u"}').toString('base64'),
        isBase64Encoded: true,
        headers: { 'Content-Type': 'text/plain' },
        requestContext: { http: { method: 'post', path: '/prod/poll' }, stage: 'prod' },
      }),
    );
    expect(request).toEqual({
      method: 'POST',
      path: '/poll',
      headers: { 'content-type': 'text/plain' },
      body: Buffer.from('{"poll_id":"u"}'),
    });
    expect(
      decodeHttpApiEvent(
        event({ rawPath: '/prod', requestContext: { http: { method: 'GET', path: '/prod' }, stage: 'prod' } }),
      ).path,
    ).toBe('/');
  });

  it('runs the router behind middy and answers an HTTP API result', async () => {
    const t = restTest();
    const handler = restHandler(() => Promise.resolve(t.ctx));
    const result = await handler(event(), lambdaContext('rest'));
    expect(result).toEqual({
      statusCode: 200,
      headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
      body: JSON.stringify({ status: 'SUCCESS', data: null, error: null }),
      isBase64Encoded: false,
    });
    const invalid = await handler(event({ body: '{' }), lambdaContext('rest'));
    expect(invalid.statusCode).toBe(400);
    expect(t.ctx.sink.values('demo.incoming')).toHaveLength(1);
  });

  it('answers a text/plain feed 400 "The payload must be valid JSON." on Lambda too, producing nothing', async () => {
    const t = restTest();
    const handler = restHandler(() => Promise.resolve(t.ctx));
    const result = await handler(event({ headers: { 'Content-Type': 'text/plain' } }), lambdaContext('rest'));
    expect(result.statusCode).toBe(400);
    expect(JSON.parse(result.body)).toMatchObject({
      status: 'FAILURE',
      error: { message: 'The payload must be valid JSON.', kind: 'invalid_json' },
    });
    expect(t.ctx.sink.sendCalls).toBe(0);
  });
});
