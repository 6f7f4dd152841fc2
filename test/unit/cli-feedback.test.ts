/**
 * What the CLI tells a person about failures and replies (issue 34 items 2 and 4): the pure parts, without Kafka.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { PRIORITY_NOTE, printInfo, printStats } from '../../cli/action-commands.ts';
import { CrawlTally, failureReason } from '../../cli/crawl-tally.ts';
import { FeedAnswers, refusalLine } from '../../cli/feed-wait.ts';
import { positiveOrZeroSeconds } from '../../cli/options.ts';
import { createOutput } from '../../cli/output.ts';

/** An Output whose stdout lines are collected. */
function captured(): { out: ReturnType<typeof createOutput>; lines: () => string[] } {
  let text = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { out: createOutput(false, sink, sink as unknown as typeof process.stderr), lines: () => text.split('\n') };
}

describe('failureReason', () => {
  it('names an HTTP error once when the exception already says it', () => {
    expect(
      failureReason({ status_code: 503, status_msg: 'Service Unavailable', exception: 'HTTP 503 Service Unavailable' }),
    ).toBe('HTTP 503 Service Unavailable');
  });

  it('keeps the status before an exception that does not name it', () => {
    expect(failureReason({ status_code: 200, status_msg: 'OK', exception: 'body too large' })).toBe(
      'HTTP 200 OK: body too large',
    );
  });

  it('says only the exception of a page without a response', () => {
    expect(failureReason({ status_code: null, exception: 'robots.txt disallows this URL' })).toBe(
      'robots.txt disallows this URL',
    );
  });

  it('says so when a failed page carries no reason', () => {
    expect(failureReason({ success: false })).toBe('no reason given');
  });
});

describe('CrawlTally: failures', () => {
  const request = { appid: 'a', crawlid: 'c', url: 'http://a/' };
  const notice = { action: 'complete', total_pages: 0, total_failed: 3 };

  it('groups failed pages by reason, most frequent first, with the first URL of each', () => {
    const tally = new CrawlTally(() => 0);
    tally.page({ url: 'http://a/1', success: false, exception: 'blocked_address: 10.0.0.1' });
    tally.page({ url: 'http://a/2', success: false, exception: 'robots.txt disallows this URL' });
    tally.page({ url: 'http://a/3', success: false, exception: 'robots.txt disallows this URL' });
    tally.page({ url: 'http://a/3', success: false, exception: 'robots.txt disallows this URL' });
    const s = tally.summary(request, 'demo', { kind: 'complete', notice });
    expect(s.failures).toEqual([
      { reason: 'robots.txt disallows this URL', count: 2, example: 'http://a/2' },
      { reason: 'blocked_address: 10.0.0.1', count: 1, example: 'http://a/1' },
    ]);
  });

  it('sums up a completed crawl whose every page failed as failed, and one with a page done as complete', () => {
    const failing = new CrawlTally(() => 0);
    failing.page({ url: 'http://a/1', success: false, exception: 'x' });
    expect(failing.summary(request, 'demo', { kind: 'complete', notice }).status).toBe('failed');

    const mixed = new CrawlTally(() => 0);
    mixed.page({ url: 'http://a/1', success: false, exception: 'x' });
    mixed.page({ url: 'http://a/2', success: true });
    const s = mixed.summary(request, 'demo', { kind: 'complete', notice });
    expect(s.status).toBe('complete');
    expect(s.failures).toHaveLength(1);
    // Nothing failed: no failures field.
    expect(new CrawlTally(() => 0).summary(request, 'demo', { kind: 'complete', notice }).failures).toBeUndefined();
  });

  it('keeps at most 20 distinct reasons and counts the rest as other reasons', () => {
    const tally = new CrawlTally(() => 0);
    for (let i = 0; i < 25; i++) tally.page({ url: `http://a/${i}`, success: false, exception: `reason ${i}` });
    const s = tally.summary(request, 'demo', { kind: 'complete', notice });
    expect(s.failures).toHaveLength(21);
    expect(s.failures?.find((f) => f.reason === 'other reasons')?.count).toBe(5);
  });
});

describe('FeedAnswers (what feed hears back)', () => {
  const crawl = { line: 2, appid: 'app', crawlid: 'c1' };
  const stats = { line: 3, appid: 'app', uuid: 'u1' };

  it('matches a rejection of a crawl request by appid and crawlid, once, and one of a uuid request by uuid', () => {
    const answers = new FeedAnswers([crawl, stats]);
    expect(answers.offer({ appid: 'app', crawlid: 'other', error: 'duplicate' })).toBeUndefined();
    expect(answers.offer({ appid: 'other', crawlid: 'c1', error: 'duplicate' })).toBeUndefined();
    const refusal = answers.offer({
      appid: 'app',
      crawlid: 'c1',
      error: 'duplicate',
      details: [{ path: '/url', message: 'seen' }],
    });
    expect(refusal).toMatchObject({ line: 2, appid: 'app', crawlid: 'c1', rejection: { error: 'duplicate' } });
    // The same rejection read again on the other topic.
    expect(answers.offer({ appid: 'app', crawlid: 'c1', error: 'duplicate' })).toBeUndefined();
    expect(answers.offer({ appid: 'app', uuid: 'u1', error: 'schema', details: [] })).toMatchObject({ uuid: 'u1' });
    expect(answers.refusals).toHaveLength(2);
    expect(refusalLine(answers.refusals[0] as NonNullable<typeof refusal>)).toBe(
      'line 2: rejected by the cluster (appid=app crawlid=c1): duplicate: /url seen',
    );
  });

  it('is settled once every request heard back: a reply to each uuid, a refusal of each crawl request', () => {
    const answers = new FeedAnswers([crawl, stats]);
    expect(answers.settled()).toBe(false);
    // A reply that is not a rejection answers the uuid without refusing it.
    expect(answers.offer({ appid: 'app', uuid: 'u1', stats: 'queue' })).toBeUndefined();
    expect(answers.settled()).toBe(false);
    answers.offer({ appid: 'app', crawlid: 'c1', error: 'stopped' });
    expect(answers.settled()).toBe(true);
    expect(answers.refusals.map((r) => r.rejection.error)).toEqual(['stopped']);
  });

  it('ignores a page or notice of the crawl (no error)', () => {
    const answers = new FeedAnswers([crawl]);
    expect(answers.offer({ appid: 'app', crawlid: 'c1', action: 'complete' })).toBeUndefined();
    expect(answers.settled()).toBe(false);
  });
});

describe('printStats and printInfo', () => {
  it('names a queue on its total row only, its domains under it', () => {
    const { out, lines } = captured();
    printStats(out, {
      stats: 'queue',
      appid: 'cli',
      server_time: 0,
      queues: {
        total_backlog: 3,
        queue_link: {
          spider_backlog: 3,
          num_domains: 2,
          domains: [
            { domain: 'a.example', backlog: 2 },
            { domain: 'b.example', backlog: 1 },
          ],
        },
      },
    });
    const table = lines().filter((l) => l.includes('example') || l.startsWith('queue_'));
    expect(table).toEqual([
      expect.stringMatching(/^queue_link\s+\(2 domains\)\s+3$/),
      expect.stringMatching(/^\s+a\.example\s+2$/),
      expect.stringMatching(/^\s+b\.example\s+1$/),
    ]);
  });

  it('counts the domains the reply left out as more domains (it lists only the busiest)', () => {
    const { out, lines } = captured();
    printStats(out, {
      stats: 'queue',
      appid: 'cli',
      server_time: 0,
      queues: {
        total_backlog: 5000,
        queue_link: { spider_backlog: 5000, num_domains: 2500, domains: [{ domain: 'a.example', backlog: 2 }] },
      },
    });
    expect(lines()).toContainEqual(expect.stringMatching(/\.\.\. 2499 more domains/));
  });

  it('says under the info table that the priorities are the seed one, 10 lower per hop', () => {
    const { out, lines } = captured();
    printInfo(out, {
      appid: 'cli',
      crawlid: 'c',
      spiderid: 'link',
      total_pending: 1,
      total_domains: 1,
      domains: { 'a.example': { low_priority: -19, high_priority: -19, total: 1 } },
    });
    expect(lines()).toContain(PRIORITY_NOTE);
    expect(PRIORITY_NOTE).toContain('10 lower per link hop');
  });
});

describe('positiveOrZeroSeconds (feed --wait)', () => {
  it('takes 0 and positive numbers, and refuses the rest', () => {
    expect(positiveOrZeroSeconds('0')).toBe(0);
    expect(positiveOrZeroSeconds('2.5')).toBe(2.5);
    for (const bad of ['', '-1', 'x', 'Infinity'])
      expect(() => positiveOrZeroSeconds(bad)).toThrow('must be a number of seconds >= 0');
  });
});
