/**
 * How the URL Frontier store writes a URL inside its queue's keys (lib/redis/url-frontier/model.ts urlMember): the
 * queue's own `http(s)://<key>` prefix becomes one byte, everything else is kept; always reversible, and URLs of
 * one queue keep their order.
 */
import { describe, expect, it } from 'vitest';
import { memberUrl, unpackServed, urlMember } from '../../lib/redis/url-frontier/model.ts';

const KEY = 'www.example.com';

describe('URL Frontier members', () => {
  it('cuts the queue host prefix to one byte, at a host boundary only', () => {
    expect(urlMember(KEY, 'https://www.example.com/a/b.html')).toBe('\u0002/a/b.html');
    expect(urlMember(KEY, 'http://www.example.com/')).toBe('\u0001/');
    expect(urlMember(KEY, 'http://www.example.com')).toBe('\u0001');
    expect(urlMember(KEY, 'http://www.example.com:8080/x')).toBe('\u0001:8080/x');
    expect(urlMember(KEY, 'https://www.example.com?q=1')).toBe('\u0002?q=1');
    // Not the same host: kept whole.
    expect(urlMember(KEY, 'https://www.example.com.evil.net/')).toBe('https://www.example.com.evil.net/');
    expect(urlMember(KEY, 'https://other.org/')).toBe('https://other.org/');
    expect(urlMember('my-queue', 'https://www.example.com/')).toBe('https://www.example.com/');
  });

  it('round-trips every URL, including ones that start with the code bytes themselves', () => {
    const urls = [
      'https://www.example.com/a',
      'http://www.example.com',
      'ftp://www.example.com/file',
      '\u0001http://x',
      '\u0002',
      '\u0000already',
      '',
      'https://www.example.com.evil.net/',
      'not a url at all',
      'https://www.example.com/é?ü=1#frag',
    ];
    for (const url of urls) expect(memberUrl(KEY, urlMember(KEY, url)), JSON.stringify(url)).toBe(url);
  });

  it('keeps the order of a queue whose URLs all carry its host: http before https, then by the rest', () => {
    const urls = [
      'https://www.example.com/b',
      'http://www.example.com/z',
      'https://www.example.com/a',
      'http://www.example.com/a',
      'https://www.example.com/',
    ];
    const byMember = [...urls].sort((a, b) => {
      const [x, y] = [urlMember(KEY, a), urlMember(KEY, b)];
      return x < y ? -1 : x > y ? 1 : 0;
    });
    expect(byMember).toEqual([...urls].sort());
  });

  it("unpacks uf-serve's reply by byte lengths, multibyte and empty strings included, and refuses a broken one", () => {
    const parts = ['\u0002/é/ü?x=1', '', 'https://other.org/\u0000', '{"a":["ß"]}'];
    const packed = Buffer.concat(parts.map((p) => Buffer.from(`${Buffer.byteLength(p)}:${p}`)));
    expect(unpackServed(packed)).toEqual(parts);
    expect(unpackServed(Buffer.alloc(0))).toEqual([]);
    expect(() => unpackServed(Buffer.from('12:short'))).toThrow(/malformed/);
    expect(() => unpackServed(Buffer.from('no colon'))).toThrow(/malformed/);
  });
});
