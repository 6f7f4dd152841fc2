import { describe, expect, it } from 'vitest';
import { handleIncoming } from '../../lib/monitor/kafka-monitor.ts';
import {
  type LoggedRejection,
  REJECTION_LOG_LINES,
  REJECTION_LOG_WINDOW_MS,
  RejectionLog,
} from '../../lib/monitor/rejection-log.ts';
import type { Log } from '../../lib/ports.ts';
import { recordsOf } from '../helpers/events.ts';
import { testContext } from '../helpers/fakes.ts';

function warnings(): Log & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info() {}, error() {}, warn: (m) => lines.push(m) };
}

const rejection = (offset: number): LoggedRejection => ({
  error: 'unknown_spider',
  details: [{ path: '/spiderid', message: 'no spider "nosuch"' }],
  appid: 'cli',
  crawlid: 'c1',
  source: { topic: 'p.incoming', partition: 0, offset },
});

describe('RejectionLog (one WARN line per rejected request, rate-limited)', () => {
  it('logs a rejection in one line: its ids, kind, first detail and where it was read', () => {
    const log = warnings();
    new RejectionLog(log).note(rejection(7), 0);

    expect(log.lines).toEqual([
      'rejected a request (appid=cli crawlid=c1): unknown_spider: /spiderid no spider "nosuch" [p.incoming/0@7]',
    ]);
  });

  it(`logs ${REJECTION_LOG_LINES} per window, then counts the rest in one line with the first after the window`, () => {
    const log = warnings();
    const r = new RejectionLog(log);
    for (let i = 0; i < REJECTION_LOG_LINES + 5; i++) r.note(rejection(i), 1000 + i);
    expect(log.lines).toHaveLength(REJECTION_LOG_LINES);

    r.note(rejection(99), 1000 + REJECTION_LOG_WINDOW_MS);

    expect(log.lines).toHaveLength(REJECTION_LOG_LINES + 2);
    expect(log.lines.at(-2)).toMatch(/^5 more requests rejected in 60 s were not logged one by one; see them with: /);
    expect(log.lines.at(-1)).toContain('[p.incoming/0@99]');
  });
});

describe('handleIncoming logs its rejections', () => {
  it('warns once per rejected record, naming its crawl', async () => {
    const ctx = testContext();
    const bad = { appid: 'testapp', crawlid: 'c-warn', url: 'http://example.com/', priority: 101 };

    await handleIncoming(ctx, recordsOf('demo.incoming', [bad]));

    const lines = ctx.log.at('warn').map((l) => l.message);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^rejected a request \(appid=testapp crawlid=c-warn\): schema: \/priority must be <= 100/);
  });
});
