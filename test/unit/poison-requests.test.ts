/**
 * Hostile requests (docs/design.md §10) against the validation edge and the kafka-monitor: each gets a visible,
 * bounded rejection and never fails the batch as if Redis or Kafka were down.
 */
import { describe, expect, it } from 'vitest';
import { MAX_DETAIL_CHARS, MAX_REJECTION_DETAILS, SchemaValidationError } from '../../lib/errors.ts';
import type { CrawlRef, EnqueueOutcome, QueueRequest } from '../../lib/frontier-model.ts';
import { handleIncoming, MAX_ECHOED_ID_CHARS } from '../../lib/monitor/kafka-monitor.ts';
import { MAX_ATTRS_BYTES, MAX_REQUEST_DEPTH } from '../../lib/schemas/bounds.ts';
import { parseRequest, validateRequest } from '../../lib/schemas/index.ts';
import { recordsOf } from '../helpers/events.ts';
import { FakeFrontier } from '../helpers/fake-frontier.ts';
import { testContext } from '../helpers/fakes.ts';

const INCOMING = 'demo.incoming';
const REJECTED = 'demo.rejected';
const FIREHOSE = 'demo.outbound_firehose';

const crawl = (fields: Record<string, unknown> = {}) => ({
  appid: 'testapp',
  crawlid: 'c1',
  url: 'http://example.com/',
  ...fields,
});

/** `{"a":{"a":...}}` nested `levels` deep, built as text (building it as an object and stringifying would overflow). */
function nestedJson(levels: number): string {
  return `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
}

function rejectionOf(run: () => unknown): SchemaValidationError {
  try {
    run();
  } catch (error) {
    if (error instanceof SchemaValidationError) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

describe('request bounds (parseRequest)', () => {
  it('rejects attrs nested 10,000 levels deep with one short detail at /attrs, without overflowing the stack', () => {
    const raw = `{"appid":"testapp","crawlid":"c1","url":"http://example.com/","attrs":${nestedJson(10_000)}}`;
    const e = rejectionOf(() => parseRequest(raw));
    expect(e.kind).toBe('schema');
    expect(e.details).toEqual([{ path: '/attrs', message: `must not nest deeper than ${MAX_REQUEST_DEPTH} levels` }]);
  });

  it(`accepts attrs nested just within ${MAX_REQUEST_DEPTH} levels`, () => {
    const raw = `{"appid":"testapp","crawlid":"c1","url":"http://example.com/","attrs":${nestedJson(MAX_REQUEST_DEPTH - 2)}}`;
    expect(parseRequest(raw).type).toBe('crawl');
  });

  it.each([
    ['crawlid', '{"appid":"testapp","crawlid":"c\\ud800","url":"http://example.com/"}', '/crawlid'],
    ['appid', '{"appid":"app\\udfff","crawlid":"c1","url":"http://example.com/"}', '/appid'],
    [
      'an attrs value',
      '{"appid":"testapp","crawlid":"c1","url":"http://e.com/","attrs":{"k":["x","\\ud83d"]}}',
      '/attrs/k/1',
    ],
  ])('rejects a lone surrogate in %s, pointing at it', (_, raw, path) => {
    const e = rejectionOf(() => parseRequest(raw));
    expect(e.details).toEqual([{ path, message: 'must be well-formed Unicode (it has a lone surrogate)' }]);
  });

  it('rejects a lone surrogate in an attrs key, naming the key', () => {
    const e = rejectionOf(() =>
      parseRequest('{"appid":"testapp","crawlid":"c1","url":"http://e.com/","attrs":{"\\ud800x":1}}'),
    );
    expect(e.details[0]?.path).toBe('/attrs/\uFFFDx');
    expect(e.details[0]?.message).toContain('name must be well-formed');
  });

  it('accepts a well-formed surrogate pair (an emoji) in attrs', () => {
    expect(
      parseRequest('{"appid":"testapp","crawlid":"c1","url":"http://e.com/","attrs":{"k":"\\ud83d\\ude00"}}').type,
    ).toBe('crawl');
  });

  it('rejects attrs over 64 KiB as JSON, saying its size', () => {
    const e = rejectionOf(() => validateRequest(crawl({ attrs: { blob: 'x'.repeat(MAX_ATTRS_BYTES) } })));
    expect(e.details).toEqual([
      { path: '/attrs', message: `must be at most ${MAX_ATTRS_BYTES} bytes as JSON, not ${MAX_ATTRS_BYTES + 11}` },
    ]);
  });

  it('rejects 101 allow_regex patterns and a 2,000-character one', () => {
    const many = Array.from({ length: 101 }, (_, i) => `x${i}`);
    expect(rejectionOf(() => validateRequest(crawl({ allow_regex: many }))).details[0]).toMatchObject({
      path: '/allow_regex',
    });
    expect(rejectionOf(() => validateRequest(crawl({ deny_regex: ['a'.repeat(2000)] }))).details[0]).toMatchObject({
      path: '/deny_regex/0',
    });
  });

  it('cuts 90,000 unknown-field details to 20 and a count, each detail short', () => {
    const fields = Object.fromEntries(Array.from({ length: 90_000 }, (_, i) => [`f${i}`, 1]));
    const e = rejectionOf(() => parseRequest(JSON.stringify(crawl({ ['z'.repeat(1000)]: 1, ...fields }))));
    expect(e.details).toHaveLength(MAX_REJECTION_DETAILS + 1);
    expect(e.details.at(-1)).toEqual({ path: '', message: `and ${90_001 - MAX_REJECTION_DETAILS} more problems` });
    for (const d of e.details) expect(d.path.length).toBeLessThanOrEqual(MAX_DETAIL_CHARS + 1);
  });
});

describe('handleIncoming with hostile requests', () => {
  it('rejects a 600 KB appid without echoing it or using it as the Kafka key', async () => {
    const ctx = testContext();
    const value = JSON.stringify({ ...crawl(), appid: 'a'.repeat(600_000), uuid: 'u1' });
    const result = await handleIncoming(ctx, recordsOf(INCOMING, [value]));
    expect(result).toMatchObject({ failures: [], rejected: 1 });
    const [r] = ctx.sink.values(REJECTED);
    expect(r?.appid).toBeUndefined();
    expect(ctx.sink.keys(REJECTED)).toEqual([null]);
    expect(ctx.sink.messages(REJECTED)[0]?.value.length).toBeLessThan(16_384);
    // Without an echoable appid nobody waits on outbound for it.
    expect(ctx.sink.values(FIREHOSE)).toEqual([]);
  });

  it(`echoes an appid of up to ${MAX_ECHOED_ID_CHARS} characters that is merely too long for the schema`, async () => {
    const ctx = testContext();
    const appid = 'b'.repeat(41);
    await handleIncoming(ctx, recordsOf(INCOMING, [{ ...crawl(), appid, uuid: 'u2' }]));
    expect(ctx.sink.values(REJECTED)[0]).toMatchObject({ appid, uuid: 'u2', error: 'schema' });
    expect(ctx.sink.keys(FIREHOSE)).toEqual([appid]);
  });

  it('echoes the crawlid and spiderid of any rejected request, and sends one with appid and crawlid to outbound', async () => {
    const ctx = testContext();
    const request = { ...crawl(), crawlid: 'c-bad', spiderid: 'link', priority: 101 };
    await handleIncoming(ctx, recordsOf(INCOMING, [request]));
    const [r] = ctx.sink.values(REJECTED);
    expect(r).toMatchObject({ error: 'schema', appid: 'testapp', crawlid: 'c-bad', spiderid: 'link' });
    expect(r?.uuid).toBeUndefined();
    // Its client follows the crawl on outbound, not the rejected topic.
    expect(ctx.sink.values(FIREHOSE)).toEqual([r]);
  });

  it(`echoes no crawlid or spiderid over ${MAX_ECHOED_ID_CHARS} characters or not a string`, async () => {
    const ctx = testContext();
    const value = JSON.stringify({ ...crawl(), crawlid: 'c'.repeat(600_000), spiderid: 7 });
    await handleIncoming(ctx, recordsOf(INCOMING, [value]));
    const [r] = ctx.sink.values(REJECTED);
    expect(r).toMatchObject({ error: 'schema', appid: 'testapp' });
    expect(r?.crawlid).toBeUndefined();
    expect(r?.spiderid).toBeUndefined();
    expect(ctx.sink.messages(REJECTED)[0]?.value.length).toBeLessThan(16_384);
  });

  it('rejects deeply nested attrs as a schema error, and the valid crawl behind it in the batch is queued', async () => {
    const ctx = testContext();
    const deep = `{"appid":"testapp","crawlid":"c1","url":"http://example.com/","attrs":${nestedJson(10_000)}}`;
    const result = await handleIncoming(ctx, recordsOf(INCOMING, [deep, crawl({ crawlid: 'ok' })]));
    expect(result.failures).toEqual([]);
    expect(result.rejected).toBe(1);
    expect(result.crawl.queued).toBe(1);
    expect(ctx.frontier.queued('link', 'testapp', 'ok')).toHaveLength(1);
  });

  it('keeps a rejection of 90,000 unknown fields under 16 KiB', async () => {
    const ctx = testContext();
    const fields = Object.fromEntries(Array.from({ length: 90_000 }, (_, i) => [`field_${i}`, i]));
    await handleIncoming(ctx, recordsOf(INCOMING, [JSON.stringify(crawl(fields))]));
    const [m] = ctx.sink.messages(REJECTED);
    expect(Buffer.byteLength(String(m?.value))).toBeLessThan(16_384);
  });

  it('rejects as unprocessable the one record Redis refuses with a script error, and queues the rest of the batch', async () => {
    class PoisonFrontier extends FakeFrontier {
      override async enqueue(
        spider: string,
        items: { crawl: CrawlRef; request: QueueRequest }[],
        now?: number,
      ): Promise<EnqueueOutcome[]> {
        if (items.some((i) => i.crawl.crawlid === 'bad')) {
          throw Object.assign(new Error('ERR user_script:1: Expected value but found invalid unicode escape'), {
            name: 'ReplyError',
          });
        }
        return super.enqueue(spider, items, now);
      }
    }
    const ctx = testContext({ frontier: new PoisonFrontier() });
    const records = recordsOf(INCOMING, [crawl({ crawlid: 'a' }), crawl({ crawlid: 'bad' }), crawl({ crawlid: 'b' })]);
    const result = await handleIncoming(ctx, records);
    expect(result.failures).toEqual([]);
    expect(result.crawl.queued).toBe(2);
    expect(result.rejected).toBe(1);
    const [r] = ctx.sink.values(REJECTED);
    expect(r).toMatchObject({ error: 'unprocessable', source: { offset: records[1]?.offset } });
    expect(String(((r?.details ?? []) as { message: string }[])[0]?.message)).toContain('invalid unicode escape');
  });

  it('fails (for redelivery) rather than rejects when Redis is unreachable', async () => {
    const ctx = testContext();
    ctx.frontier.down = true;
    const result = await handleIncoming(ctx, recordsOf(INCOMING, [crawl()]));
    expect(result.failures).toHaveLength(1);
    expect(result.rejected).toBe(0);
  });
});
