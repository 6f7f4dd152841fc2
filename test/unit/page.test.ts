import { describe, expect, it, vi } from 'vitest';
import { fitPageMessage, pageMessage } from '../../lib/crawl/crawler/page-message.ts';
import {
  BINARY_ENCODING,
  buildPage,
  failedPage,
  type PageRequest,
  pageTimestamp,
  pythonCodec,
  titleCaseHeader,
} from '../../lib/crawl/page.ts';
import type { FetchResult, PageItem } from '../../lib/crawl/types.ts';
import { CONTRACT_PAGE_FIELDS, EXT_PAGE_FIELDS } from '../helpers/contract.ts';

const NOW = Date.UTC(2026, 10, 22, 10, 0, 0, 7);

function request(overrides: Partial<PageRequest> = {}): PageRequest {
  return {
    url: 'http://a.example/',
    depth: 1,
    priority: -9,
    retries: 0,
    spiderid: 'link',
    crawl: {
      appid: 'app',
      crawlid: 'c1',
      spiderid: 'link',
      priority: 1,
      maxdepth: 2,
      expires: 0,
      attrs: { customer: 42 },
    },
    ...overrides,
  };
}

function response(overrides: Partial<FetchResult> = {}): FetchResult {
  const text = '<html><body>héllo</body></html>';
  return {
    requestUrl: 'http://a.example/',
    url: 'https://a.example/home',
    status: 200,
    statusText: 'OK',
    headers: { 'content-type': ['text/html; charset=utf-8'], 'set-cookie': ['a=1', 'b=2'] },
    requestHeaders: { 'user-agent': ['crawl-cluster/1.0'] },
    body: Buffer.from(text, 'utf8'),
    text,
    encoding: 'utf-8',
    truncated: false,
    redirects: ['http://a.example/'],
    fetchedMs: 123,
    ...overrides,
  };
}

/** Every field the CONTRACT's page example has, plus our Ext fields. */
const CONTRACT_FIELDS = [...CONTRACT_PAGE_FIELDS, ...EXT_PAGE_FIELDS];

describe('buildPage', () => {
  const links = [{ url: 'http://a.example/x', text: 'x' }];

  it('fills every CONTRACT field from the request, the crawl and the response', () => {
    const page = buildPage(request(), response(), links, { base64: false, success: true, retryTimes: 2, now: NOW });
    for (const field of CONTRACT_FIELDS) expect(page, field).toHaveProperty(field);
    expect(page).toEqual({
      appid: 'app',
      crawlid: 'c1',
      spiderid: 'link',
      url: 'http://a.example/',
      response_url: 'https://a.example/home',
      status_code: 200,
      status_msg: 'OK',
      response_headers: { 'Content-Type': ['text/html; charset=utf-8'], 'Set-Cookie': ['a=1', 'b=2'] },
      request_headers: { 'User-Agent': ['crawl-cluster/1.0'] },
      body: '<html><body>héllo</body></html>',
      encoding: 'utf-8',
      links,
      attrs: { customer: 42 },
      success: true,
      timestamp: '2026-11-22T10:00:00.007',
      depth: 1,
      fetched_ms: 123,
      retry_times: 2,
    });
  });

  it('serializes to JSON without losing fields (no undefined values)', () => {
    const page = buildPage(request(), response(), links, { base64: false, success: true, now: NOW });
    expect(Object.keys(JSON.parse(JSON.stringify(page))).sort()).toEqual([...CONTRACT_FIELDS].sort());
  });

  it('sends the text itself without body_encoding when base64 mode is off', () => {
    const page = buildPage(request(), response(), [], { base64: false, success: true, now: NOW });
    expect(page.body_encoding).toBeUndefined();
    expect(JSON.parse(JSON.stringify(page))).not.toHaveProperty('body_encoding');
  });

  it('sends the response bytes base64-encoded in base64 mode, with their charset as encoding', () => {
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9]);
    const page = buildPage(request(), response({ body: latin1, text: 'café', encoding: 'windows-1252' }), [], {
      base64: true,
      success: true,
      now: NOW,
    });
    expect(page.body).toBe(latin1.toString('base64'));
    expect(Buffer.from(page.body, 'base64')).toEqual(latin1);
    expect(page.encoding).toBe('windows-1252');
    expect(page.body_encoding).toBe('base64');
  });

  it.each([false, true])(
    'sends a binary body (no text) as base64 with encoding latin-1 and body_encoding "base64" (base64 mode %s)',
    (base64) => {
      const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      const page = buildPage(request(), response({ body: png, text: undefined, encoding: undefined }), [], {
        base64,
        success: true,
        now: NOW,
      });
      expect(page.body).toBe(png.toString('base64'));
      expect(page).toMatchObject({ encoding: BINARY_ENCODING, body_encoding: 'base64' });
      // kafkadump.py dump -d: base64.b64decode(body).decode(encoding); Latin-1 gives one character per byte.
      // (Buffer's 'latin1' is ISO-8859-1 as Python's codec is; TextDecoder's label means windows-1252.)
      const decoded = Buffer.from(page.body, 'base64').toString('latin1');
      expect([...decoded].map((c) => c.charCodeAt(0))).toEqual([...png]);
      expect(JSON.parse(JSON.stringify(page))).toMatchObject({ encoding: 'latin-1', body_encoding: 'base64' });
    },
  );

  it('sends a body in a charset Python has no codec for (x-user-defined) as binary: its bytes, latin-1', () => {
    const bytes = Buffer.from([0x41, 0xf0, 0x42]);
    const page = buildPage(request(), response({ body: bytes, text: 'A\uf7f0B', encoding: 'x-user-defined' }), [], {
      base64: false,
      success: true,
      now: NOW,
    });
    expect(page).toMatchObject({ body: bytes.toString('base64'), encoding: 'latin-1', body_encoding: 'base64' });
  });

  it('names the charset as a Python codec (clients call body.decode(encoding))', () => {
    const page = buildPage(request(), response({ encoding: 'x-mac-cyrillic' }), [], {
      base64: false,
      success: true,
      now: NOW,
    });
    expect(page.encoding).toBe('mac-cyrillic');
  });

  it('sends header names Title-Case as Scrapy does, every value kept', () => {
    const page = buildPage(
      request(),
      response({
        headers: { etag: ['"x"'], 'x-request-id': ['r1'], 'www-authenticate': ['Basic', 'Bearer'] },
        requestHeaders: { accept: ['text/html'], 'accept-encoding': ['gzip'] },
      }),
      [],
      { base64: false, success: true, now: NOW },
    );
    expect(page.response_headers).toEqual({
      Etag: ['"x"'],
      'X-Request-Id': ['r1'],
      'Www-Authenticate': ['Basic', 'Bearer'],
    });
    expect(page.request_headers).toEqual({ Accept: ['text/html'], 'Accept-Encoding': ['gzip'] });
  });

  it('echoes null as attrs when the crawl has none, and the spider type that handled the request', () => {
    const base = request();
    const { attrs: _, ...crawl } = base.crawl;
    const page = buildPage({ ...base, crawl, spiderid: 'wandering' }, response(), [], {
      base64: false,
      success: true,
      now: NOW,
    });
    expect(page.attrs).toBeNull();
    expect(JSON.parse(JSON.stringify(page))).toHaveProperty('attrs', null);
    expect(page.spiderid).toBe('wandering');
  });

  it('takes the crawl’s spider type when the request names none, and its retries as retry_times', () => {
    const { spiderid: _, ...rest } = request({ retries: 3 });
    const page = buildPage(rest, response(), [], { base64: false, success: true, now: NOW });
    expect(page.spiderid).toBe('link');
    expect(page.retry_times).toBe(3);
  });

  it('flags a body the fetcher cut and says why and where: at MAX_BODY_BYTES or for the memory budget', () => {
    const body = Buffer.alloc(4096, 'a');
    const cut = response({ truncated: true, cut: 'max_body_bytes', body, text: body.toString() });
    const page = buildPage(request(), cut, [], { base64: false, success: true, now: NOW });
    expect(page).toMatchObject({ body_truncated: true, body_cut: 'max_body_bytes', body_cut_bytes: 4096 });
    const budget = buildPage(request(), { ...cut, cut: 'memory_budget' }, [], { base64: false, success: true });
    expect(budget).toMatchObject({ body_truncated: true, body_cut: 'memory_budget', body_cut_bytes: 4096 });
    const whole = buildPage(request(), response(), [], { base64: false, success: true });
    expect(whole).not.toHaveProperty('body_truncated');
    expect(whole).not.toHaveProperty('body_cut');
    expect(whole).not.toHaveProperty('body_cut_bytes');
  });
});

describe('failedPage', () => {
  it('builds a success:false page with the exception and no response fields', () => {
    const page = failedPage(request({ retries: 3 }), 'timeout: no response in 10000 ms', undefined, false, NOW);
    for (const field of CONTRACT_FIELDS) expect(page, field).toHaveProperty(field);
    expect(page).not.toHaveProperty('body_encoding');
    expect(page).toMatchObject({
      appid: 'app',
      crawlid: 'c1',
      url: 'http://a.example/',
      response_url: 'http://a.example/',
      success: false,
      exception: 'timeout: no response in 10000 ms',
      status_code: null,
      status_msg: '',
      response_headers: {},
      request_headers: {},
      body: '',
      encoding: 'utf-8',
      links: [],
      attrs: { customer: 42 },
      retry_times: 3,
      fetched_ms: 0,
      timestamp: '2026-11-22T10:00:00.007',
    });
  });

  it('carries the last status code and its standard reason phrase when given a code', () => {
    const page = failedPage(request(), 'retries exhausted', 503, false, NOW);
    expect(page.status_code).toBe(503);
    expect(page.status_msg).toBe('Service Unavailable');
    expect(page.success).toBe(false);
  });

  it('carries the last response’s status, reason phrase, headers and body when given the response', () => {
    const last = response({
      status: 502,
      statusText: 'Bad Gateway From Proxy',
      text: 'oops',
      body: Buffer.from('oops'),
    });
    const page = failedPage(request(), 'HTTP 502', last, true, NOW);
    expect(page).toMatchObject({
      status_code: 502,
      status_msg: 'Bad Gateway From Proxy',
      body: Buffer.from('oops').toString('base64'),
      encoding: 'utf-8',
      body_encoding: 'base64',
      response_headers: { 'Content-Type': ['text/html; charset=utf-8'], 'Set-Cookie': ['a=1', 'b=2'] },
      success: false,
      exception: 'HTTP 502',
      links: [],
    });
  });
});

describe('titleCaseHeader', () => {
  it.each([
    ['content-type', 'Content-Type'],
    ['x-request-id', 'X-Request-Id'],
    ['www-authenticate', 'Www-Authenticate'],
    ['x-xss-protection', 'X-Xss-Protection'],
    ['etag', 'Etag'],
    ['content-md5', 'Content-Md5'],
    ['p3p', 'P3P'],
    ['x-b3-traceid', 'X-B3-Traceid'],
    ['a1b', 'A1B'],
    ['X-FORWARDED-FOR', 'X-Forwarded-For'],
    ['x_y', 'X_Y'],
    ['te', 'Te'],
    ['', ''],
  ])('%s → %s (Python str.title())', (name, expected) => {
    expect(titleCaseHeader(name)).toBe(expected);
  });
});

describe('pythonCodec', () => {
  it('keeps WHATWG names Python knows and maps the ones it does not', () => {
    expect(pythonCodec('utf-8')).toBe('utf-8');
    expect(pythonCodec('windows-1252')).toBe('windows-1252');
    expect(pythonCodec('shift_jis')).toBe('shift_jis');
    expect(pythonCodec('iso-8859-8-i')).toBe('iso-8859-8');
    expect(pythonCodec('windows-874')).toBe('cp874');
    expect(pythonCodec('x-mac-cyrillic')).toBe('mac-cyrillic');
    expect(pythonCodec('x-user-defined')).toBeNull();
  });
});

describe('pageTimestamp', () => {
  it('formats UTC as YYYY-MM-DDTHH:mm:ss.SSS without a zone', () => {
    expect(pageTimestamp(Date.UTC(2026, 0, 2, 3, 4, 5, 60))).toBe('2026-01-02T03:04:05.060');
    expect(pageTimestamp(Date.now())).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$/);
  });
});

describe('fitPageMessage', () => {
  const bytes = (s: string | undefined) => Buffer.byteLength(String(s));

  it('says a body cut to fit the message apart from one the fetcher cut (body_message_cut), keeping body_cut', () => {
    const text = 'x'.repeat(50_000);
    const fetched = response({ text, body: Buffer.from(text), truncated: true, cut: 'max_body_bytes' });
    const page = buildPage(request(), fetched, [], { base64: false, success: true, now: NOW });
    const fitted = JSON.parse(String(fitPageMessage(page, 20_000, false)));
    expect(fitted).toMatchObject({
      body_truncated: true,
      body_message_cut: true,
      body_cut: 'max_body_bytes',
      body_cut_bytes: 50_000,
    });
    const fits = buildPage(request(), fetched, [], { base64: false, success: true, now: NOW });
    const sent = JSON.parse(String(fitPageMessage(fits, 1_000_000, false)));
    expect(sent).toMatchObject({ body_truncated: true, body_cut: 'max_body_bytes' });
    expect(sent).not.toHaveProperty('body_message_cut');
  });

  it('returns the page unchanged when it fits', () => {
    const page = buildPage(request(), response(), [], { base64: false, success: true, now: NOW });
    expect(fitPageMessage(page, 1_000_000, false)).toBe(JSON.stringify(page));
  });

  it('cuts a body of multi-byte and escaped characters to fit exactly under the limit, never mid-pair', () => {
    const text = '😀"\n'.repeat(50_000);
    const page = buildPage(request(), response({ text }), [], { base64: false, success: true, now: NOW });
    const value = fitPageMessage(page, 20_000, false);
    expect(bytes(value)).toBeLessThanOrEqual(20_000);
    const fitted = JSON.parse(String(value));
    expect(fitted.body_truncated).toBe(true);
    expect(text.startsWith(fitted.body)).toBe(true);
    expect(fitted.body.isWellFormed()).toBe(true);
    expect(bytes(value)).toBeGreaterThan(15_000);
  });

  it('cuts a base64 body to whole quads so what is left still decodes', () => {
    const page = buildPage(request(), response({ text: undefined, body: Buffer.alloc(30_000, 7) }), [], {
      base64: false,
      success: true,
      now: NOW,
    });
    expect(page.body_encoding).toBe('base64');
    const fitted = JSON.parse(String(fitPageMessage(page, 10_000, true)));
    expect(fitted.body.length % 4).toBe(0);
    expect(Buffer.from(fitted.body, 'base64').every((b: number) => b === 7)).toBe(true);
  });

  it('keeps links before body, then cuts links, then attrs; undefined when nothing can fit', () => {
    const links = Array.from({ length: 5000 }, (_, i) => ({ url: `http://a.example/${i}`, text: `link ${i}` }));
    const page = buildPage(request(), response(), links, { base64: false, success: true, now: NOW });
    const fitted = JSON.parse(String(fitPageMessage(page, 50_000, false)));
    expect(fitted.body).toBe('');
    expect(fitted.links_truncated).toBe(true);
    expect(fitted.links).toEqual(links.slice(0, fitted.links.length));

    const withAttrs = { ...page, links: [], attrs: { big: 'a'.repeat(60_000) } };
    const noAttrs = JSON.parse(String(fitPageMessage(withAttrs, 20_000, false)));
    expect(noAttrs).toMatchObject({ attrs: {}, attrs_truncated: true });

    const nullAttrs = { ...page, links: [], attrs: null, body: 'b'.repeat(60_000) };
    const fittedNull = JSON.parse(String(fitPageMessage(nullAttrs, 20_000, false)));
    expect(fittedNull).toMatchObject({ attrs: null, body_truncated: true });
    expect(fittedNull).not.toHaveProperty('attrs_truncated');
    const hugeUrl = { ...nullAttrs, url: 'http://a.example/'.padEnd(30_000, 'x') };
    expect(fitPageMessage(hugeUrl, 20_000, false)).toBeUndefined();

    expect(fitPageMessage({ ...page, url: 'http://a.example/'.padEnd(30_000, 'x') }, 20_000, false)).toBeUndefined();
  });

  it('keys the message by crawlid, whole or cut, so the crawls of one app spread over the firehose', async () => {
    const small = buildPage(request(), response({ text: 'x' }), [], { base64: false, success: true, now: NOW });
    const big = buildPage(request(), response({ text: 'x'.repeat(60_000) }), [], {
      base64: false,
      success: true,
      now: NOW,
    });
    for (const page of [small, big]) {
      const message = await pageMessage(page, { maxBytes: 20_000, base64: false, bodyKey: () => 'k' });
      expect(message.key).toBe(page.crawlid);
      expect(message.key).not.toBe(page.appid);
    }
    expect(
      JSON.parse(String((await pageMessage(big, { maxBytes: 20_000, base64: false, bodyKey: () => 'k' })).value)),
    ).toMatchObject({ body_truncated: true });
  });

  it('serializes a page over the limit whole only once on the way to its message', async () => {
    const page = buildPage(request(), response({ text: 'x'.repeat(60_000) }), [], {
      base64: false,
      success: true,
      now: NOW,
    });
    // The spider's data is serialized with every serialization of the whole page (and of its bare copy).
    let serialized = 0;
    const toJSON = () => {
      serialized++;
      return { n: 1 };
    };
    page.data = { toJSON } as unknown as PageItem['data'];
    const expected = fitPageMessage(structuredClone({ ...page, data: { n: 1 } }), 20_000, false);
    const message = await pageMessage(page, { maxBytes: 20_000, base64: false, bodyKey: () => 'k' });
    expect(String(message.value)).toBe(expected);
    // A body longer than the limit is over it without a check: the bare page's size, the fitted value.
    expect(serialized).toBe(2);
    serialized = 0;
    expect(fitPageMessage(page, 20_000, false, true)).toBe(expected);
    expect(serialized).toBe(2);
  });

  it('stores a bomb body as fetched and never serializes it whole (NULs take 6 JSON bytes a character)', async () => {
    const body = Buffer.alloc(2 * 1024 * 1024);
    const fetched = response({ body, text: body.toString('latin1'), truncated: true, cut: 'max_body_bytes' });
    const page = buildPage(request(), fetched, [], { base64: false, success: true, now: NOW });
    const stored: Buffer[] = [];
    const bodyStore = {
      put: async (_key: string, b: Buffer) => {
        stored.push(b);
        return 's3://bucket/k';
      },
    };
    let longest = 0;
    const stringify = JSON.stringify;
    const spy = vi.spyOn(JSON, 'stringify').mockImplementation((...args: Parameters<typeof stringify>) => {
      const out = stringify(...args);
      longest = Math.max(longest, out?.length ?? 0);
      return out;
    });
    try {
      const message = await pageMessage(page, {
        maxBytes: 100_000,
        base64: false,
        bodyStore,
        bodyKey: () => 'k',
        response: fetched,
      });
      expect(message.value.length).toBeLessThanOrEqual(100_000);
      const sent = JSON.parse(String(message.value));
      expect(sent).toMatchObject({
        body_ref: 's3://bucket/k',
        body_truncated: true,
        body_message_cut: true,
        body_cut: 'max_body_bytes',
        body_cut_bytes: body.length,
      });
    } finally {
      spy.mockRestore();
    }
    expect(stored).toEqual([body]);
    // Prefixes of the body as long as the message may be are serialized, never the 2 MiB body (12 MB of JSON).
    expect(longest).toBeLessThan(1_000_000);
  });
});
