import { describe, expect, it } from 'vitest';
import { huffmanCode, huffmanDecode, huffmanEncode } from '../../lib/redis/huffman.ts';
import {
  decodePriority,
  memberBytes,
  memberHandle,
  memberPlace,
  memberTail,
  parseMember,
  refNumber,
} from '../../lib/redis/member.ts';

describe('HPACK Huffman code', () => {
  it('encodes the examples of RFC 7541 Appendix C.4 byte for byte', () => {
    const cases: [string, string][] = [
      ['www.example.com', 'f1e3c2e5f23a6ba0ab90f4ff'],
      ['no-cache', 'a8eb10649cbf'],
      ['custom-key', '25a849e95ba97d7f'],
      ['custom-value', '25a849e95bb8e8b4bf'],
    ];
    for (const [text, hex] of cases) {
      expect(huffmanEncode(Buffer.from(text)).toString('hex')).toBe(hex);
      expect(huffmanDecode(Buffer.from(hex, 'hex')).toString()).toBe(text);
    }
  });

  it('has the code lengths and codes listed in the RFC', () => {
    expect(huffmanCode(48)).toEqual({ code: 0x0, bits: 5 }); // '0'
    expect(huffmanCode(32)).toEqual({ code: 0x14, bits: 6 }); // ' '
    expect(huffmanCode(126)).toEqual({ code: 0x1ffd, bits: 13 }); // '~'
    expect(huffmanCode(0)).toEqual({ code: 0x1ff8, bits: 13 });
    expect(huffmanCode(255)).toEqual({ code: 0x3ffffee, bits: 26 });
    expect(huffmanCode(256)).toEqual({ code: 0x3fffffff, bits: 30 }); // end of string
  });

  it('round-trips any bytes and rejects what no encoding produces', () => {
    let seed = 1;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let n = 0; n < 2000; n++) {
      const bytes = Buffer.from(Array.from({ length: Math.floor(rand() * 80) }, () => Math.floor(rand() * 256)));
      expect(huffmanDecode(huffmanEncode(bytes)).equals(bytes)).toBe(true);
    }
    expect(() => huffmanDecode(Buffer.from([0x00]))).toThrow(/padding/); // '0' then 3 zero bits
    expect(() => huffmanDecode(Buffer.from([0xff, 0xff, 0xff, 0xff]))).toThrow(/end-of-string|padding/);
  });
});

describe('queue member', () => {
  /** A member as build_member (includes/frontier.lua) makes it: priority 5, seq 1, ref 1, depth 2, retries 0. */
  function member(domain: string, url: string): Buffer {
    const pe = 1024 - 5;
    const head = `${domain}\0${'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'[Math.floor(pe / 62)]}${
      '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'[pe % 62]
    }00000001120`;
    return Buffer.concat([Buffer.from(head), memberTail(url, domain)]);
  }

  it.each([
    ['https://example.com/path?q#f', 'example.com', 'a'],
    ['https://www.example.com/', 'example.com', 'b'],
    ['https://a.b.example.com', 'example.com', 'c'],
    ['http://example.com', 'example.com', 'd'],
    ['http://www.example.com?x', 'example.com', 'e'],
    ['http://shop.example.com#x', 'example.com', 'f'],
    ['https://example.com:8080/', 'example.com', 'r'],
    ['https://other.org/', 'example.com', 'r'],
    ['mailto:x@example.com', 'example.com', 'r'],
    ['https://www.exampleXcom/', 'example.com', 'r'],
    ['https://b\u00fccher.de/\u00fc', 'b\u00fccher.de', 'a'],
  ])('%s under %s: flag %s, and it parses back', (url, domain, flag) => {
    const tail = memberTail(url, domain);
    expect(String.fromCharCode(tail[0] as number)).toBe(flag);
    const m = member(domain, url);
    expect(parseMember(m)).toEqual({ url, domain, priority: 5, depth: 2, retries: 0 });
    // A handle is the member as a binary string, and turns back into the same bytes.
    expect(memberBytes(memberHandle(m)).equals(m)).toBe(true);
  });

  it('gives the domain, sequence number and crawl ref of a member, with a one-digit ref or a longer one', () => {
    expect(memberPlace(member('b\u00fccher.de', 'https://b\u00fccher.de/'))).toEqual({
      domain: 'b\u00fccher.de',
      seq: '00000001',
      ref: '1',
    });
    // Ref 1614 (`z` + base 62 + `.`), depth 3, retries 0, then the tail.
    const m = Buffer.concat([
      Buffer.from('example.com\0GK0000001AzQ2.30'),
      memberTail('https://example.com/x', 'example.com'),
    ]);
    expect(memberPlace(m)).toEqual({ domain: 'example.com', seq: '0000001A', ref: 'zQ2.' });
    expect(refNumber('zQ2.')).toBe(26 * 62 + 2);
    expect(refNumber('7')).toBe(7);
    expect(parseMember(m)).toMatchObject({ url: 'https://example.com/x', depth: 3, retries: 0 });
  });

  it('stores the scheme and the registrable domain of a typical URL once, and its path in ~6 bits a character', () => {
    const url = 'https://www.acmeblue123.com/articles/the-quick-guide-to-autumn-garden-care-and-x1f.html';
    expect(memberTail(url, 'acmeblue123.com').length).toBeLessThan(48);
  });

  it('decodes priorities at both ends of the range', () => {
    expect(decodePriority('00')).toBe(1024);
    expect(decodePriority('X1')).toBe(1024 - (33 * 62 + 1));
  });
});
