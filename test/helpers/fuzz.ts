/**
 * A deterministic fuzz of `<p>.incoming` messages (docs/design.md §10: "a generated fuzz of 10,000 requests"):
 * valid requests of every type mixed with every way a client can get one wrong or make one hostile. Each
 * message is independent (its own crawlid and uuid), so each must get its own visible outcome.
 */
import { prng } from '../../localstack/site/prng.ts';

export interface FuzzMessage {
  value: Buffer;
  /** What the generator meant to produce (for failure messages; the test decides outcomes by validation). */
  shape: string;
}

type Mutation = (n: number) => { shape: string; value: unknown | Buffer };

/**
 * `count` messages from `seed`. Valid crawls point at `okUrl` with maxdepth 0 (one page each); valid
 * actions and stats carry a uuid `fuzz-<n>`; crawlids are `fuzz-<n>`.
 */
export function fuzzMessages(count: number, seed: number, okUrl: string, appid = 'fuzzapp'): FuzzMessage[] {
  const random = prng(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const crawl = (n: number, fields: Record<string, unknown> = {}) => ({
    appid,
    crawlid: `fuzz-${n}`,
    url: okUrl,
    ...fields,
  });
  const info = (n: number) => ({ appid, uuid: `fuzz-${n}`, spiderid: 'link', action: 'info', crawlid: `fuzz-${n}` });
  const junk = () => pick<unknown>(['x', 5, -1, 1.5, true, null, [], {}, '', 'é', '\u0000', 10 ** 20, [1, [2]]]);
  const fields = [
    'appid',
    'crawlid',
    'url',
    'spiderid',
    'priority',
    'maxdepth',
    'expires',
    'attrs',
    'allowed_domains',
    'useragent',
    'cookie',
    'headers',
  ];
  const nested = (levels: number) => JSON.parse(`${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`) as unknown;

  const mutations: Mutation[] = [
    (n) => ({ shape: 'valid crawl', value: crawl(n) }),
    (n) => ({
      shape: 'valid crawl with attrs',
      value: crawl(n, { attrs: { n, tags: ['a', 'b'], nested: { deep: [1, 2] } } }),
    }),
    (n) => ({ shape: 'valid info', value: info(n) }),
    (n) => ({
      shape: 'valid stats',
      value: { appid, uuid: `fuzz-${n}`, stats: pick(['kafka-monitor', 'queue', 'spider', 'all']) },
    }),
    (n) => ({
      shape: 'valid domain update',
      value: { appid, uuid: `fuzz-${n}`, domain: `d${n}.example`, action: 'domain-update', hits: 5, window: 60 },
    }),
    (n) => ({ shape: 'wrong field type', value: crawl(n, { [pick(fields)]: junk() }) }),
    (n) => ({
      shape: 'unknown fields',
      value: crawl(
        n,
        Object.fromEntries(Array.from({ length: 1 + Math.floor(random() * 50) }, (_, i) => [`x${i}`, i])),
      ),
    }),
    (n) => {
      const request: Record<string, unknown> = crawl(n);
      delete request[pick(['appid', 'crawlid', 'url'])];
      return { shape: 'missing field', value: request };
    },
    () => ({
      shape: 'truncated JSON',
      value: Buffer.from(JSON.stringify(crawl(0)).slice(0, 5 + Math.floor(random() * 40))),
    }),
    () => ({
      shape: 'random bytes',
      value: Buffer.from(Array.from({ length: 1 + Math.floor(random() * 200) }, () => Math.floor(random() * 256))),
    }),
    (n) => ({
      shape: 'invalid UTF-8',
      value: Buffer.concat([
        Buffer.from(`{"appid":"${appid}","crawlid":"fuzz-${n}","url":"${okUrl}","attrs":{"k":"`),
        Buffer.from([0xc3, 0x28, 0xff]),
        Buffer.from('"}}'),
      ]),
    }),
    (n) => ({
      shape: 'lone surrogate',
      value: Buffer.from(`{"appid":"${appid}","crawlid":"fuzz-${n}\\ud8${pick(['00', '3d', 'ff'])}","url":"${okUrl}"}`),
    }),
    (n) => ({ shape: 'deep attrs', value: crawl(n, { attrs: nested(30 + Math.floor(random() * 3000)) as object }) }),
    (n) => ({
      shape: 'huge string',
      value: crawl(n, {
        [pick(['appid', 'crawlid', 'url', 'useragent'])]: 'h'.repeat(1000 + Math.floor(random() * 300_000)),
      }),
    }),
    () => ({
      shape: 'not an object',
      value: Buffer.from(pick(['[]', '1', '"crawl"', 'null', 'true', '[{"url":"x"}]'])),
    }),
    (n) => ({ shape: 'unknown spider', value: crawl(n, { spiderid: pick(['nope', 'LINK', ' link', 'link\u0000']) }) }),
    (n) => ({
      shape: 'hostile url',
      value: crawl(n, {
        url: pick([
          'javascript:alert(1)',
          'file:///etc/passwd',
          'ftp://x/',
          'http://',
          'http:// x',
          `http://${'a'.repeat(3000)}.com/`,
          'gopher://127.0.0.1:6379/_FLUSHALL',
        ]),
      }),
    }),
    (n) => ({ shape: 'bad regex', value: crawl(n, { allow_regex: [pick(['(', '[a-', '*x', '(?<n>a)\\k<m>'])] }) }),
    (n) => ({
      shape: 'bad domain',
      value: {
        appid,
        uuid: `fuzz-${n}`,
        domain: pick(['', 'a', 'ebay.com/x', '-x.com', '%41.com', 'x'.repeat(300)]),
        action: 'domain-update',
        hits: 1,
        window: 1,
      },
    }),
    (n) => ({
      shape: 'domain update without hits',
      value: { appid, uuid: `fuzz-${n}`, domain: 'ok.example', action: 'domain-update' },
    }),
    (n) => ({ shape: 'stop without crawlid', value: { appid, uuid: `fuzz-${n}`, spiderid: 'link', action: 'stop' } }),
    () => ({ shape: 'empty object', value: {} }),
  ];

  return Array.from({ length: count }, (_, n) => {
    const { shape, value } = (mutations[n % mutations.length] as Mutation)(n);
    return { shape, value: Buffer.isBuffer(value) ? value : Buffer.from(JSON.stringify(value)) };
  });
}
