/**
 * The body budget (lib/crawl/fetch/body-budget.ts) on real fetches over loopback: while the bodies in flight fill the
 * process's budget, a new fetch waits before it sends anything, and starts as soon as one of them finishes; a fetch
 * aborted while it waits ends with the abort's reason and takes no room. A body held by its page (`holdBody`) counts
 * until released: a body read meanwhile pauses rather than overrun the budget, and when only bodies being read fill
 * it, one is cut with `memory_budget`. Each decoded byte costs BODY_BYTE_COST (2).
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BodyBudget } from '../../lib/crawl/fetch/body-budget.ts';
import { UndiciFetcher } from '../../lib/crawl/fetch/fetcher.ts';

describe('the body budget of a real fetcher', () => {
  let server: Server;
  let base: string;
  /** Responses of /slow, held open after their first 64 KiB until the test ends them. */
  const held: ServerResponse[] = [];
  const arrived: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      arrived.push(req.url ?? '');
      if (req.url?.startsWith('/pair')) {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.write(Buffer.alloc(32 * 1024, 3));
        held.push(res);
        return;
      }
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
    const budget = new BodyBudget(128 * 1024);
    const fetcher = new UndiciFetcher({ allowPrivateNetworks: true, bodyBudget: budget });
    try {
      const slow = fetcher.fetch(request('/slow/1'));
      await waitFor(() => budget.used >= 128 * 1024);
      expect(budget.share).toBeGreaterThanOrEqual(1);
      const small = fetcher.fetch(request('/small'));
      await new Promise((r) => setTimeout(r, 200));
      // Still waiting: the server never saw it.
      expect(arrived).not.toContain('/small');
      expect(budget.waits).toBe(1);
      (held.shift() as ServerResponse).end();
      const first = await slow;
      expect(first.body.length).toBe(64 * 1024);
      expect(first.truncated).toBe(false);
      const second = await small;
      expect(second.text).toContain('small');
      expect(arrived).toContain('/small');
      expect(budget.used).toBe(0);
    } finally {
      await fetcher.close();
    }
  });

  test('a fetch aborted while it waits for room rejects with the reason and takes none', async () => {
    const budget = new BodyBudget(128 * 1024);
    const fetcher = new UndiciFetcher({ allowPrivateNetworks: true, bodyBudget: budget });
    try {
      const slow = fetcher.fetch(request('/slow/2'));
      await waitFor(() => budget.used >= 128 * 1024);
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

  test('a body held by its page counts until released: a body read meanwhile pauses, then ends whole', async () => {
    const budget = new BodyBudget(192 * 1024);
    const fetcher = new UndiciFetcher({ allowPrivateNetworks: true, bodyBudget: budget });
    try {
      const first = fetcher.fetch({ ...request('/slow/3'), holdBody: true });
      await waitFor(() => held.length === 1);
      (held.shift() as ServerResponse).end();
      const page = await first;
      // Read, and still counted: its page holds it.
      expect(budget.used).toBe(128 * 1024);
      const second = fetcher.fetch(request('/slow/4'));
      await waitFor(() => held.length === 1);
      await waitFor(() => budget.pauses === 1);
      (held.shift() as ServerResponse).end();
      await new Promise((r) => setTimeout(r, 100));
      expect(budget.cuts).toBe(0);
      page.release?.();
      const body = await second;
      expect(body).toMatchObject({ truncated: false });
      expect(body.body.length).toBe(64 * 1024);
      expect(budget.used).toBe(0);
    } finally {
      await fetcher.close();
    }
  });

  test('when only bodies being read fill the budget and all wait, the one holding the most is cut (memory_budget)', async () => {
    const budget = new BodyBudget(128 * 1024);
    const fetcher = new UndiciFetcher({ allowPrivateNetworks: true, bodyBudget: budget });
    try {
      const a = fetcher.fetch({ ...request('/pair/a'), holdBody: true });
      const b = fetcher.fetch({ ...request('/pair/b'), holdBody: true });
      // Both have read their first 32 KiB (64 KiB of cost each): the budget is full of bodies being read.
      await waitFor(() => held.length === 2 && budget.used === 128 * 1024);
      for (const r of held.splice(0)) r.end(Buffer.alloc(32 * 1024, 4));
      await waitFor(() => budget.cuts === 1);
      const cut = await Promise.race([a, b]);
      expect(cut).toMatchObject({ truncated: true, cut: 'memory_budget' });
      expect(cut.body.length).toBe(32 * 1024);
      // Its page is done: the other body goes on and ends whole.
      cut.release?.();
      const [ra, rb] = await Promise.all([a, b]);
      const whole = ra === cut ? rb : ra;
      expect(whole).toMatchObject({ truncated: false });
      expect(whole.cut).toBeUndefined();
      expect(whole.body.length).toBe(64 * 1024);
      whole.release?.();
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
