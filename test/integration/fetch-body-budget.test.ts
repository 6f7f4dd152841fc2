/**
 * The body budget (lib/crawl/body-budget.ts) on real fetches over loopback: while the bodies being read fill the
 * process's budget, a new fetch waits before it sends anything, and starts as soon as one of them finishes; a fetch
 * aborted while it waits ends with the abort's reason and takes no room.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BodyBudget } from '../../lib/crawl/body-budget.ts';
import { UndiciFetcher } from '../../lib/crawl/fetch.ts';

describe('the body budget of a real fetcher', () => {
  let server: Server;
  let base: string;
  /** Responses of /slow, held open after their first 64 KiB until the test ends them. */
  const held: ServerResponse[] = [];
  const arrived: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      arrived.push(req.url ?? '');
      if (req.url?.startsWith('/slow')) {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.write(Buffer.alloc(64 * 1024, 1));
        held.push(res);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<p>small</p>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const r of held) r.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const request = (path: string) => ({ url: `${base}${path}`, userAgent: 'budget-test' });

  test('a fetch waits, unsent, while bodies being read fill the budget, and starts when one finishes', async () => {
    const budget = new BodyBudget(64 * 1024);
    const fetcher = new UndiciFetcher({ allowPrivateNetworks: true, bodyBudget: budget });
    try {
      const slow = fetcher.fetch(request('/slow/1'));
      await waitFor(() => budget.used >= 64 * 1024);
      expect(budget.share).toBeGreaterThanOrEqual(1);
      const small = fetcher.fetch(request('/small'));
      await new Promise((r) => setTimeout(r, 200));
      // Still waiting: the server never saw it.
      expect(arrived).not.toContain('/small');
      expect(budget.waits).toBe(1);
      (held.shift() as ServerResponse).end(Buffer.alloc(1000, 2));
      const first = await slow;
      expect(first.body.length).toBe(64 * 1024 + 1000);
      const second = await small;
      expect(second.text).toContain('small');
      expect(arrived).toContain('/small');
      expect(budget.used).toBe(0);
    } finally {
      await fetcher.close();
    }
  });

  test('a fetch aborted while it waits for room rejects with the reason and takes none', async () => {
    const budget = new BodyBudget(64 * 1024);
    const fetcher = new UndiciFetcher({ allowPrivateNetworks: true, bodyBudget: budget });
    try {
      const slow = fetcher.fetch(request('/slow/2'));
      await waitFor(() => budget.used >= 64 * 1024);
      const abort = new AbortController();
      const waiting = fetcher.fetch(request('/small?aborted'), abort.signal);
      abort.abort(new Error('stopping'));
      await expect(waiting).rejects.toThrow('stopping');
      expect(arrived).not.toContain('/small?aborted');
      (held.shift() as ServerResponse).end();
      await slow;
      expect(budget.used).toBe(0);
    } finally {
      await fetcher.close();
    }
  });
});

async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}
