/**
 * The local REST server's bounds against real Redis and Kafka (localstack/runtime/rest-server.ts): past the
 * in-flight bound and past the connection bound a request is answered 503 with Retry-After at once, in the
 * API's envelope, and served again once a slot frees; a client slow to send its headers is cut with 408.
 * Requests are held in flight deterministically: the
 * Redis health probe runs a BLPOP on a key of this test, on a connection of its own, until the test pushes.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRestDeps, type RestDeps } from '../../functions/rest/deps.ts';
import { config, type Variables } from '../../lib/config/index.ts';
import { silentLog } from '../../lib/ports.ts';
import type { RedisClient } from '../../lib/redis/client.ts';
import type { RestContext } from '../../lib/rest/context.ts';
import { type RestServer, startRestServer } from '../../localstack/runtime/rest-server.ts';
import { standaloneRedis, uniqueName, waitUntil } from '../helpers/services.ts';

/** Answer time well under the probe's hold (the held requests wait until the test releases them). */
const QUICK_MS = 1000;

describe('REST server bounds', () => {
  let deps: RestDeps;
  let blocker: RedisClient;
  let pusher: RedisClient;
  const gate = uniqueName('rest-gate');
  let entered = 0;
  const servers: RestServer[] = [];
  /** The servers' warnings, with their fields. */
  const warnings: { message: string; fields?: Record<string, unknown> }[] = [];

  beforeAll(() => {
    const base = config();
    const vars: Variables = {
      ...base,
      KAFKA_BROKERS: `127.0.0.1:${base.CRAWL_KAFKA_PORT}`,
      KAFKA_TOPIC_PREFIX: uniqueName('rest'),
      REDIS_HOST: '127.0.0.1',
      REDIS_PORT: base.CRAWL_REDIS_PORT,
      REDIS_CLUSTER: false,
      REDIS_KEY_PREFIX: uniqueName('rest'),
    };
    deps = createRestDeps('rest-admission', silentLog, vars);
    blocker = standaloneRedis();
    pusher = standaloneRedis();
  });
  afterAll(async () => {
    for (const server of servers) await server.close();
    await pusher?.del(gate);
    blocker?.disconnect();
    pusher?.disconnect();
    await deps?.close();
  });

  /** A server whose Redis probe (every `GET /`) waits for one push to the gate. */
  async function serve(bounds: {
    maxInFlight?: number;
    maxConnections?: number;
    headersTimeoutMs?: number;
  }): Promise<RestServer> {
    const context: RestContext = {
      ...deps.ctx,
      health: {
        kafka: deps.ctx.health.kafka,
        redis: async () => {
          entered += 1;
          await blocker.blpop(gate, 0);
        },
      },
      options: { probeTimeoutMs: 60_000 },
    };
    const server = await startRestServer({
      context,
      port: 0,
      retryAfterSec: 2,
      log: (level, message, fields) => {
        if (level === 'warn') warnings.push({ message, fields });
      },
      ...bounds,
    });
    servers.push(server);
    return server;
  }

  /** Lets `n` held (or future) Redis probes answer. */
  async function release(n: number): Promise<void> {
    await pusher.rpush(gate, ...Array.from({ length: n }, () => 'go'));
  }

  it('answers 503 with Retry-After at once past the in-flight bound, and serves again when a slot frees', async () => {
    // GET / calls share a running probe (lib/rest/health.ts), so one held probe holds one request here.
    const server = await serve({ maxInFlight: 1 });
    entered = 0;
    const held = fetch(`${server.url}/`);
    await waitUntil('a request in flight', () => entered === 1);

    const started = Date.now();
    const refused = await fetch(`${server.url}/`);
    expect(Date.now() - started).toBeLessThan(QUICK_MS);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('2');
    expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await refused.json()).toEqual({
      status: 'FAILURE',
      data: null,
      error: {
        message: 'The REST service is overloaded (1 request already being handled, its limit); retry after 2 seconds',
        cause: 'REST_MAX_IN_FLIGHT',
      },
    });
    // The refused request never reached the router.
    expect(entered).toBe(1);
    const warned = await waitUntil('the overload warning', () =>
      warnings.find((w) => w.message.startsWith('rest: overloaded')),
    );
    expect(warned.fields).toMatchObject({ in_flight: 1, connections: 0, dropped: 0 });

    await release(1);
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ redis_connected: true });
    await release(1);
    expect((await fetch(`${server.url}/`)).status).toBe(200);
  });

  it('answers the first request of a connection past the connection bound 503 and closes it', async () => {
    const server = await serve({ maxConnections: 2 });
    const idle = await Promise.all([open(server), open(server)]);
    const extra = await open(server);
    const started = Date.now();
    const answer = await exchange(extra, server);
    expect(Date.now() - started).toBeLessThan(QUICK_MS);
    expect(answer.head).toMatch(/^HTTP\/1\.1 503 /);
    expect(answer.head).toMatch(/\r\nretry-after: 2\r\n/i);
    expect(answer.head).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 'FAILURE', error: { cause: 'REST_MAX_CONNECTIONS' } });
    expect(answer.closed).toBe(true);

    // One of the idle connections goes away: a new one is served.
    idle[0]?.destroy();
    await release(1);
    await waitUntil(
      'a new connection to be served',
      async () => {
        const retry = await exchange(await open(server), server);
        return retry.head.startsWith('HTTP/1.1 200 ') ? retry : undefined;
      },
      5000,
    );
    for (const socket of idle) socket.destroy();
  });

  it('answers 408 and closes a connection whose headers do not arrive within headersTimeoutMs', async () => {
    const server = await serve({ headersTimeoutMs: 500 });
    const slow = await open(server);
    let text = '';
    slow.setEncoding('utf8');
    slow.on('data', (chunk: string) => {
      text += chunk;
    });
    const started = Date.now();
    slow.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n`);
    await closed(slow);
    // The bound is checked every second.
    expect(Date.now() - started).toBeLessThan(500 + 1000 + QUICK_MS);
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
  });
});

function closed(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed) resolve();
    else socket.once('close', () => resolve());
  });
}

function open(server: RestServer): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Sends `GET /` on a raw connection and reads the answer until the server closes it or it is complete. */
function exchange(socket: Socket, server: RestServer): Promise<{ head: string; body: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const done = (closed: boolean) => {
      const at = text.indexOf('\r\n\r\n');
      resolve({ head: text.slice(0, at + 2), body: text.slice(at + 4), closed });
    };
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
      const at = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)\r\n/i.exec(text.slice(0, at + 2));
      if (at >= 0 && length && Buffer.byteLength(text.slice(at + 4)) >= Number(length[1])) {
        // Give a closing server the chance to close before answering whether it did.
        socket.once('close', () => done(true));
        setTimeout(() => done(socket.destroyed || socket.readyState !== 'open'), 200);
      }
    });
    socket.once('error', reject);
    socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`);
  });
}
