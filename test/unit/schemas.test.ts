import { describe, expect, it } from 'vitest';
import { registrableDomain } from '../../lib/crawl/domain.ts';
import { BUILT_IN_SPIDERS } from '../../lib/crawl/spiders/index.ts';
import { SchemaValidationError } from '../../lib/errors.ts';
import type { CrawlRequest } from '../../lib/schemas/index.ts';
import { classifyRequest, parseRequest, validateRequest } from '../../lib/schemas/index.ts';

const crawl = (fields: Record<string, unknown> = {}) => ({
  appid: 'app',
  crawlid: 'c1',
  url: 'http://example.com/',
  ...fields,
});
const action = (fields: Record<string, unknown> = {}) => ({
  uuid: 'u1',
  appid: 'app',
  spiderid: 'link',
  action: 'info',
  ...fields,
});
const stats = (fields: Record<string, unknown> = {}) => ({ uuid: 'u1', appid: 'app', stats: 'all', ...fields });
const domain = (fields: Record<string, unknown> = {}) => ({
  uuid: 'u1',
  appid: 'app',
  domain: 'ebay.com',
  action: 'domain-update',
  hits: 10,
  window: 60,
  ...fields,
});

/** Runs `fn`, which must throw a SchemaValidationError, and returns it. */
function rejectionOf(fn: () => unknown): SchemaValidationError {
  try {
    fn();
  } catch (error) {
    if (error instanceof SchemaValidationError) return error;
    throw error;
  }
  throw new Error('expected a SchemaValidationError, but nothing was thrown');
}

function validCrawl(value: unknown): CrawlRequest {
  const result = validateRequest(value);
  if (result.type !== 'crawl') throw new Error(`expected a crawl request, got ${result.type}`);
  return result.request;
}

const paths = (error: SchemaValidationError) => error.details.map((d) => d.path);

function expectSchemaRejection(value: unknown, path: string): SchemaValidationError {
  const error = rejectionOf(() => validateRequest(value));
  expect(error.kind).toBe('schema');
  expect(paths(error)).toContain(path);
  return error;
}

describe('validateRequest: crawl bounds', () => {
  it.each([
    ['priority', 1],
    ['priority', 100],
    ['maxdepth', 0],
    ['maxdepth', 3],
    ['domain_max_pages', 0],
    ['domain_max_pages', 2000],
    ['expires', 0],
    ['expires', 1_900_000_000],
    ['appid', 'a'.repeat(3)],
    ['appid', 'a'.repeat(40)],
    ['crawlid', 'c'],
    ['crawlid', 'c'.repeat(40)],
    ['useragent', 'u'.repeat(3)],
    ['useragent', 'u'.repeat(1000)],
    ['cookie', 'a=b'],
    ['cookie', `a=${'b'.repeat(998)}`],
  ])('accepts %s = %j at the bound', (field, value) => {
    const { request } = validateRequest(crawl({ [field]: value }));
    expect(request).toMatchObject({ [field]: value });
  });

  it.each([
    ['priority', 0, 'must be >= 1'],
    ['priority', 101, 'must be <= 100'],
    ['priority', 1.5, 'must be integer'],
    ['priority', '5', 'must be integer'],
    ['maxdepth', -1, 'must be >= 0'],
    ['maxdepth', 4, 'must be <= 3'],
    ['domain_max_pages', -1, 'must be >= 0'],
    ['domain_max_pages', 2001, 'must be <= 2000'],
    ['expires', -1, 'must be >= 0'],
    ['appid', 'a'.repeat(2), 'must NOT have fewer than 3 characters'],
    ['appid', 'a'.repeat(41), 'must NOT have more than 40 characters'],
    ['crawlid', '', 'must NOT have fewer than 1 characters'],
    ['crawlid', 'c'.repeat(41), 'must NOT have more than 40 characters'],
    ['useragent', 'u'.repeat(2), 'must NOT have fewer than 3 characters'],
    ['useragent', 'u'.repeat(1001), 'must NOT have more than 1000 characters'],
    ['useragent', 'bot\r\nX-Injected: 1', 'must not contain control characters'],
    ['cookie', 'a=', 'must NOT have fewer than 3 characters'],
    ['cookie', `a=${'b'.repeat(999)}`, 'must NOT have more than 1000 characters'],
    ['attrs', [], 'must be object'],
  ])('rejects %s = %j with "%s"', (field, value, message) => {
    const error = expectSchemaRejection(crawl({ [field]: value }), `/${field}`);
    expect(error.details).toContainEqual({ path: `/${field}`, message });
  });

  it('rejects a missing url, appid and crawlid, naming each', () => {
    const error = rejectionOf(() => validateRequest({ url: 'http://example.com/' }));
    expect(error.kind).toBe('schema');
    expect(error.details).toEqual([
      { path: '/appid', message: 'is required' },
      { path: '/crawlid', message: 'is required' },
    ]);
  });

  it('reports every violation at once, not just the first', () => {
    const error = expectSchemaRejection(crawl({ priority: 0, maxdepth: 9 }), '/priority');
    expect(paths(error)).toEqual(['/priority', '/maxdepth']);
  });

  it('rejects an unknown field and names it', () => {
    const error = expectSchemaRejection(crawl({ foo: 1 }), '/foo');
    expect(error.details).toEqual([{ path: '/foo', message: 'is not an allowed field' }]);
  });

  it.each(['allowed_domains', 'allow_regex', 'deny_regex', 'deny_extensions'])(
    'rejects duplicate entries in %s',
    (field) => {
      const error = expectSchemaRejection(crawl({ [field]: ['a', 'b', 'a'] }), `/${field}`);
      expect(error.details[0]?.message).toMatch(/duplicate items/);
    },
  );

  it('rejects a non-string entry in allowed_domains at its index', () => {
    expectSchemaRejection(crawl({ allowed_domains: ['ebay.com', 3] }), '/allowed_domains/1');
  });
});

describe('validateRequest: crawl headers', () => {
  const headers = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`x-h${i}`, 'v']));

  it('accepts 50 headers', () => {
    expect(Object.keys(validCrawl(crawl({ headers: headers(50) })).headers ?? {})).toHaveLength(50);
  });

  it('rejects 51 headers', () => {
    expectSchemaRejection(crawl({ headers: headers(51) }), '/headers');
  });

  it('rejects a header name that is not an HTTP token, pointing at the header', () => {
    const error = expectSchemaRejection(crawl({ headers: { 'Bad Name': 'v' } }), '/headers/Bad Name');
    expect(error.details).toHaveLength(1);
    expect(error.details[0]?.message).toMatch(/^name must be an HTTP token/);
  });

  it('rejects a header value with a line break', () => {
    const error = expectSchemaRejection(crawl({ headers: { 'x-a': 'v\r\nx-b: w' } }), '/headers/x-a');
    expect(error.details[0]?.message).toBe('must not contain control characters');
  });

  it('rejects a header value that is not a string', () => {
    expectSchemaRejection(crawl({ headers: { 'x-a': 1 } }), '/headers/x-a');
  });
});

describe('validateRequest: crawl url', () => {
  it.each([
    ['example.com/x', 'http://example.com/x'],
    ['example.com', 'http://example.com'],
    ['localhost:8080/x', 'http://localhost:8080/x'],
    ['//example.com/x', 'http://example.com/x'],
  ])('prepends http:// to the bare host %j', (url, expected) => {
    expect(validCrawl(crawl({ url })).url).toBe(expected);
  });

  it.each(['http://example.com/a?b=c#d', 'https://example.com/', 'HTTPS://Example.com:8443/'])(
    'keeps the http(s) URL %j as given',
    (url) => {
      expect(validCrawl(crawl({ url })).url).toBe(url);
    },
  );

  it.each([
    ['ftp://example.com/file', 'ftp:'],
    ['javascript:alert(1)', 'javascript:'],
    ['mailto:someone@example.com', 'mailto:'],
    ['file:///etc/passwd', 'file:'],
  ])('rejects the non-http URL %j', (url, scheme) => {
    const error = expectSchemaRejection(crawl({ url }), '/url');
    expect(error.details).toEqual([{ path: '/url', message: `must be an http or https URL, not ${scheme}` }]);
  });

  it.each(['http://', 'http://exa mple.com/', 'http://[::1/'])('rejects the unparseable URL %j', (url) => {
    const error = expectSchemaRejection(crawl({ url }), '/url');
    expect(error.details[0]?.message).toMatch(/^must be an absolute http\(s\) URL/);
  });

  it('accepts a URL of 2048 characters and rejects one of 2049', () => {
    const base = 'http://example.com/';
    expect(() => validateRequest(crawl({ url: base + 'a'.repeat(2048 - base.length) }))).not.toThrow();
    expectSchemaRejection(crawl({ url: base + 'a'.repeat(2049 - base.length) }), '/url');
  });

  it('rejects a bare host that is too long once http:// is prepended', () => {
    const error = expectSchemaRejection(crawl({ url: `example.com/${'a'.repeat(2030)}` }), '/url');
    expect(error.details[0]?.message).toBe('must NOT have more than 2048 characters');
  });
});

describe('validateRequest: crawl regexes', () => {
  it('accepts regexes that compile', () => {
    expect(() =>
      validateRequest(crawl({ allow_regex: ['^https?://[^/]+/news/'], deny_regex: ['\\.pdf$'] })),
    ).not.toThrow();
  });

  it('rejects an allow_regex entry that does not compile, pointing at its index', () => {
    const error = expectSchemaRejection(crawl({ allow_regex: ['ok', '(unclosed'] }), '/allow_regex/1');
    expect(error.details).toHaveLength(1);
    expect(error.details[0]?.message).toMatch(/^must be a valid RE2 regular expression .*missing closing \)/);
  });

  it('rejects lookaround and backreferences, which RE2 cannot match in linear time, saying so', () => {
    const error = expectSchemaRejection(crawl({ allow_regex: ['a(?=b)', '(a)\\1'] }), '/allow_regex/0');
    expect(error.details.map((d) => d.path)).toEqual(['/allow_regex/0', '/allow_regex/1']);
    expect(error.details[0]?.message).toContain('no lookaround or backreferences');
  });

  it("accepts Python's inline flags, as Scrapy Cluster's clients wrote them", () => {
    expect(validateRequest(crawl({ allow_regex: ['(?i)/Products/'] })).type).toBe('crawl');
  });

  it('rejects a deny_regex entry that does not compile', () => {
    expectSchemaRejection(crawl({ deny_regex: ['[z-a]'] }), '/deny_regex/0');
  });
});

describe('validateRequest: spiders', () => {
  const spiders = BUILT_IN_SPIDERS;

  it('has the link, wandering, sitemap and browser spiders built in', () => {
    expect([...BUILT_IN_SPIDERS].sort()).toEqual(['browser', 'link', 'sitemap', 'wandering']);
  });

  it('accepts a crawl for the wandering spider', () => {
    expect(validateRequest(crawl({ spiderid: 'wandering' }), { spiders }).request).toMatchObject({
      spiderid: 'wandering',
    });
  });

  it('rejects a crawl for an unknown spider as unknown_spider, naming the known types', () => {
    const error = rejectionOf(() => validateRequest(crawl({ spiderid: 'nope' }), { spiders }));
    expect(error.kind).toBe('unknown_spider');
    expect(paths(error)).toEqual(['/spiderid']);
    expect(error.details[0]?.message).toBe(
      'must be a spider type this cluster runs (link, wandering, sitemap, browser), not "nope"; a type is known once a crawler serving it has started (with none running, this request starts one: send it again in a few minutes)',
    );
  });

  it('rejects an action for an unknown spider as unknown_spider', () => {
    const error = rejectionOf(() => validateRequest(action({ spiderid: 'nope' }), { spiders }));
    expect(error.kind).toBe('unknown_spider');
    expect(paths(error)).toEqual(['/spiderid']);
  });

  it('leaves the spider type to the kafka-monitor when no set is given (a client cannot know the fleet’s plugins)', () => {
    expect(validateRequest(crawl({ spiderid: 'products' })).request).toMatchObject({ spiderid: 'products' });
  });

  it('checks spiders against the set passed in options', () => {
    const spiders = new Set(['custom']);
    expect(validateRequest(crawl({ spiderid: 'custom' }), { spiders }).request).toMatchObject({ spiderid: 'custom' });
    expect(rejectionOf(() => validateRequest(crawl(), { spiders })).kind).toBe('unknown_spider');
  });
});

describe('validateRequest: defaults and copying', () => {
  it('fills the crawl defaults and adds no optional field', () => {
    expect(validateRequest(crawl())).toEqual({
      type: 'crawl',
      request: { ...crawl(), spiderid: 'link', priority: 1, maxdepth: 0, expires: 0 },
    });
  });

  it('fills the stats default "all"', () => {
    expect(validateRequest({ uuid: 'u1', appid: 'app', stats: 'queue' }).request).toMatchObject({ stats: 'queue' });
    expect(validateRequest(stats()).request).toEqual(stats());
  });

  it('fills the domain config defaults', () => {
    expect(validateRequest({ uuid: 'u1', appid: 'app', domain: 'ebay.com', action: 'blacklist-update' })).toEqual({
      type: 'domain',
      request: {
        uuid: 'u1',
        appid: 'app',
        domain: 'ebay.com',
        action: 'blacklist-update',
        hits: 0,
        window: 0,
        scale: 1,
      },
    });
  });

  it('returns a new object and leaves the input, nested objects included, unchanged', () => {
    const input = { ...crawl({ url: 'example.com' }), attrs: { nested: { a: 1 } }, allowed_domains: ['example.com'] };
    const before = structuredClone(input);
    const request = validCrawl(input);
    expect(input).toEqual(before);
    expect(request).not.toBe(input);
    expect(request.attrs).toEqual(input.attrs);
    expect(request.attrs).not.toBe(input.attrs);
    expect(request.allowed_domains).not.toBe(input.allowed_domains);
  });

  it('leaves a domain config input unchanged when it lower-cases the domain', () => {
    const input = domain({ domain: 'EBay.COM' });
    expect(validateRequest(input).request).toMatchObject({ domain: 'ebay.com' });
    expect(input.domain).toBe('EBay.COM');
  });
});

describe('classifyRequest', () => {
  it.each([
    ['crawl', crawl()],
    ['action', action()],
    ['action', action({ action: 'stop', crawlid: 'c1' })],
    ['stats', stats()],
    ['domain', domain()],
  ] as const)('classifies a %s request by its shape', (type, value) => {
    expect(classifyRequest(value)).toBe(type);
    expect(validateRequest(value).type).toBe(type);
  });

  it('classifies a domain action without a domain as a domain config request', () => {
    expect(classifyRequest({ uuid: 'u1', appid: 'app', action: 'domain-remove' })).toBe('domain');
  });

  it('classifies by the first matching rule, so the types never overlap', () => {
    expect(classifyRequest({ ...crawl(), action: 'stop', stats: 'all', domain: 'ebay.com' })).toBe('crawl');
    expect(classifyRequest({ ...stats(), domain: 'ebay.com', action: 'info' })).toBe('domain');
    expect(classifyRequest({ ...stats(), action: 'info' })).toBe('stats');
  });

  it.each([
    ['an object without a type field', { appid: 'app' }],
    ['an unknown action', { uuid: 'u1', appid: 'app', action: 'pause' }],
    ['an array', [crawl()]],
    ['null', null],
    ['a string', 'http://example.com/'],
  ])('returns undefined for %s', (_, value) => {
    expect(classifyRequest(value)).toBeUndefined();
  });
});

describe('validateRequest: request types', () => {
  it('rejects a request of no known type as unknown_type, saying what each type needs', () => {
    const error = rejectionOf(() => validateRequest({ uuid: 'u1', appid: 'app', action: 'pause' }));
    expect(error.kind).toBe('unknown_type');
    expect(error.details.map((d) => d.message).join('\n')).toMatch(
      /"url"[\s\S]*"info" or "stop"[\s\S]*"stats"[\s\S]*"domain"/,
    );
  });

  it('rejects a non-object as a schema error on the whole document', () => {
    const error = rejectionOf(() => validateRequest([crawl()]));
    expect(error.kind).toBe('schema');
    expect(error.details).toEqual([{ path: '', message: 'must be an object' }]);
  });

  it.each([
    ['action', action({ foo: 1 })],
    ['stats', stats({ foo: 1 })],
    ['domain', domain({ foo: 1 })],
  ])('rejects an unknown field in a %s request', (_, value) => {
    expectSchemaRejection(value, '/foo');
  });
});

describe('validateRequest: action', () => {
  it('accepts info without crawlid (the whole app)', () => {
    expect(validateRequest(action()).request).toEqual(action());
  });

  it('accepts stop with a crawlid', () => {
    expect(validateRequest(action({ action: 'stop', crawlid: 'c1' })).request).toMatchObject({ crawlid: 'c1' });
  });

  it('rejects stop without crawlid', () => {
    const error = expectSchemaRejection(action({ action: 'stop' }), '/crawlid');
    expect(error.details).toEqual([{ path: '/crawlid', message: 'is required when action is "stop"' }]);
  });

  it('rejects an action without spiderid', () => {
    const { spiderid: _, ...value } = action();
    expectSchemaRejection(value, '/spiderid');
  });

  it.each([
    ['uuid', '', false],
    ['uuid', 'u', true],
    ['uuid', 'u'.repeat(40), true],
    ['uuid', 'u'.repeat(41), false],
    ['appid', 'ap', false],
    ['appid', 'a'.repeat(41), false],
    ['crawlid', '', false],
    ['crawlid', 'c'.repeat(41), false],
  ])('checks %s = %j (accepted: %s)', (field, value, accepted) => {
    const request = action({ [field]: value });
    if (accepted) expect(() => validateRequest(request)).not.toThrow();
    else expectSchemaRejection(request, `/${field}`);
  });
});

describe('validateRequest: stats', () => {
  it.each(['kafka-monitor', 'redis-monitor', 'crawler', 'spider', 'machine', 'queue', 'rest', 'all'])(
    'accepts stats %j',
    (type) => {
      expect(validateRequest(stats({ stats: type })).request).toMatchObject({ stats: type });
    },
  );

  it('rejects an unknown stats type, listing the allowed ones', () => {
    const error = expectSchemaRejection(stats({ stats: 'everything' }), '/stats');
    expect(error.details[0]?.message).toMatch(/^must be one of "kafka-monitor", .*"all"$/);
  });

  it('rejects a uuid over 40 characters', () => {
    expectSchemaRejection(stats({ uuid: 'u'.repeat(41) }), '/uuid');
  });
});

describe('validateRequest: domain config', () => {
  it.each([0, 0.5, 1.0])('accepts scale %j', (scale) => {
    expect(validateRequest(domain({ scale })).request).toMatchObject({ scale });
  });

  it.each([1.1, -0.1])('rejects scale %j', (scale) => {
    expectSchemaRejection(domain({ scale }), '/scale');
  });

  it.each(['hits', 'window'])('rejects a negative %s', (field) => {
    expectSchemaRejection(domain({ action: 'domain-remove', [field]: -1 }), `/${field}`);
  });

  it.each(['hits', 'window'])('rejects domain-update with %s 0', (field) => {
    const error = expectSchemaRejection(domain({ [field]: 0 }), `/${field}`);
    expect(error.details).toEqual([{ path: `/${field}`, message: 'must be >= 1 when action is "domain-update"' }]);
  });

  it('rejects domain-update without hits and window, naming both', () => {
    const error = rejectionOf(() =>
      validateRequest({ uuid: 'u1', appid: 'app', domain: 'ebay.com', action: 'domain-update' }),
    );
    expect(error.kind).toBe('schema');
    expect(paths(error)).toEqual(['/hits', '/window']);
  });

  it('accepts hits and window 0 for the other actions', () => {
    for (const act of ['domain-remove', 'blacklist-update', 'blacklist-remove']) {
      expect(() => validateRequest(domain({ action: act, hits: 0, window: 0 }))).not.toThrow();
    }
  });

  it('rejects an unknown domain action', () => {
    expectSchemaRejection(domain({ action: 'domain-purge' }), '/action');
  });

  it('rejects a domain action without a domain, naming the missing field', () => {
    const { domain: _, ...value } = domain();
    expectSchemaRejection(value, '/domain');
  });

  it('lower-cases the domain and converts an internationalised one to punycode', () => {
    expect(validateRequest(domain({ domain: 'EBay.Co.UK' })).request).toMatchObject({ domain: 'ebay.co.uk' });
    expect(validateRequest(domain({ domain: 'Bücher.de' })).request).toMatchObject({ domain: 'xn--bcher-kva.de' });
  });

  // Scrapy Cluster's schema takes any string; a throttle for a loopback or intranet site must be possible (issue 34).
  it.each([
    ['127.0.0.1', '127.0.0.1', '127.0.0.1'],
    ['localhost', 'localhost', 'localhost'],
    ['Intranet', 'intranet', 'intranet'],
    ['build_box', 'build_box', 'build_box'],
    ['::1', '::1', '::1'],
    ['[2001:DB8::1]', '2001:db8::1', '2001:db8::1'],
    ['ebay.com.', 'ebay.com', 'ebay.com'],
    ['ebay.com:8080', 'ebay.com', 'ebay.com'],
    ['www.ebay.com', 'www.ebay.com', 'ebay.com'],
    ['shop.example.co.uk', 'shop.example.co.uk', 'example.co.uk'],
    ['svc.internal', 'svc.internal', 'svc.internal'],
  ])('accepts %j as the host %j, which the crawler throttles under %j', (value, host, key) => {
    const { domain: validated } = validateRequest(domain({ domain: value })).request as { domain: string };
    expect(validated).toBe(host);
    // The redis-monitor keys it by registrable domain: the key the crawler gives a URL on that host.
    const inUrl = value.includes(':') && !value.startsWith('[') && !value.includes('.') ? `[${value}]` : value;
    expect(registrableDomain(validated)).toBe(key);
    expect(registrableDomain(`http://${inUrl}/page`)).toBe(key);
  });

  it.each(['http://ebay.com', 'ebay.com/x', 'ebay.com?x', 'ex%41mple.com', 'not a domain', '-ebay.com', 'a..b', ''])(
    'rejects %j, which is not a host',
    (value) => {
      expectSchemaRejection(domain({ domain: value }), '/domain');
    },
  );
});

describe('parseRequest', () => {
  it('parses a JSON string', () => {
    expect(parseRequest(JSON.stringify(crawl())).type).toBe('crawl');
  });

  it('parses UTF-8 bytes, including non-ASCII text', () => {
    const bytes = new TextEncoder().encode(JSON.stringify(crawl({ attrs: { title: 'Grüße' } })));
    expect(parseRequest(bytes).request).toMatchObject({ attrs: { title: 'Grüße' } });
  });

  it('rejects invalid UTF-8 bytes as invalid_json', () => {
    const bytes = new Uint8Array([
      ...new TextEncoder().encode('{"appid":"'),
      0xc3,
      0x28,
      ...new TextEncoder().encode('"}'),
    ]);
    const error = rejectionOf(() => parseRequest(bytes));
    expect(error.kind).toBe('invalid_json');
    expect(error.details).toEqual([{ path: '', message: 'is not valid UTF-8' }]);
  });

  it.each(['{', '{"appid": "app",}', "{'appid': 'app'}", ''])(
    'rejects the malformed JSON %j with the parser message',
    (raw) => {
      const error = rejectionOf(() => parseRequest(raw));
      expect(error.kind).toBe('invalid_json');
      expect(error.details[0]?.path).toBe('');
      expect(error.details[0]?.message).toMatch(/JSON/);
    },
  );

  it.each([['[]'], ['42'], ['null'], ['"http://example.com/"'], ['true']])('rejects the non-object JSON %s', (raw) => {
    const error = rejectionOf(() => parseRequest(raw));
    expect(error.kind).toBe('schema');
    expect(error.details).toEqual([{ path: '', message: 'must be an object' }]);
  });

  it('rejects a message over 1 MiB by default as too_large', () => {
    const raw = JSON.stringify(crawl({ attrs: { pad: 'x'.repeat(1024 * 1024) } }));
    const error = rejectionOf(() => parseRequest(raw));
    expect(error.kind).toBe('too_large');
    expect(error.details[0]?.path).toBe('');
  });

  it('accepts a message of exactly maxBytes and rejects one byte more', () => {
    const raw = JSON.stringify(crawl());
    const size = Buffer.byteLength(raw);
    expect(parseRequest(raw, { maxBytes: size }).type).toBe('crawl');
    expect(rejectionOf(() => parseRequest(raw, { maxBytes: size - 1 })).kind).toBe('too_large');
  });

  it('counts bytes, not characters, in a string', () => {
    const raw = JSON.stringify(crawl({ attrs: { t: 'ü'.repeat(10) } }));
    expect(rejectionOf(() => parseRequest(raw, { maxBytes: raw.length })).kind).toBe('too_large');
  });

  it('rejects an oversized byte message before decoding it', () => {
    const bytes = new Uint8Array(64).fill(0xff);
    expect(rejectionOf(() => parseRequest(bytes, { maxBytes: 10 })).kind).toBe('too_large');
  });

  it('passes the spiders option through to validation', () => {
    const raw = JSON.stringify(crawl({ spiderid: 'custom' }));
    expect(rejectionOf(() => parseRequest(raw, { spiders: BUILT_IN_SPIDERS })).kind).toBe('unknown_spider');
    expect(parseRequest(raw, { spiders: new Set(['custom']) }).type).toBe('crawl');
  });

  it('puts the kind and the paths in the error message', () => {
    const error = rejectionOf(() => parseRequest(JSON.stringify(crawl({ priority: 101 }))));
    expect(error.message).toBe('schema: /priority must be <= 100');
    expect(error.retryable).toBe(false);
  });
});
