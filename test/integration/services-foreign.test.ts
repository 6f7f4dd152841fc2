/**
 * `services up` beside a service it did not start on the port (a developer's own Redis or Kafka): it uses it, and
 * says so loudly, naming the port, that it is not ours and the variable that moves ours. A loopback listener stands
 * for the foreign service; the spec's own probe calls it compatible, as `redis-cli ping` or a Kafka metadata call
 * would for a real one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bringUp, type ServiceSpec } from '../../localstack/services/processes.ts';

describe('services up with a compatible service it did not start on the port', () => {
  let server: Server;
  let port: number;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'services-foreign-'));
    server = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('uses it, reports it external, and prints a WARN line naming the port, that it is not ours and the variable', async () => {
    let started = false;
    const spec: ServiceSpec = {
      name: 'redis',
      what: 'Redis',
      port,
      pidFile: join(dir, 'redis.pid'),
      marker: join(dir, 'redis-server'),
      out: join(dir, 'redis.log'),
      portVariable: 'CRAWL_REDIS_PORT',
      timeoutMs: 5000,
      foreign: async () => undefined,
      start: async () => {
        started = true;
        throw new Error('must not start a second Redis on a taken port');
      },
      ready: async () => true,
    };
    const lines: string[] = [];

    const status = await bringUp(spec, (m) => lines.push(m));

    expect(started).toBe(false);
    expect(status).toEqual({ name: 'redis', state: 'external', address: `127.0.0.1:${port}` });
    const warn = lines.find((l) => l.startsWith('WARN '));
    expect(warn, lines.join('\n')).toBeDefined();
    expect(warn).toContain(`WARN redis: port ${port} already has a Redis that is not ours`);
    expect(warn).toContain('`services down` will not stop it');
    expect(warn).toContain('set CRAWL_REDIS_PORT to a free port');
  });
});
