import { describe, expect, it } from 'vitest';
import {
  contentTypeCharset,
  decodeBody,
  detectCharset,
  META_SCAN_BYTES,
  normalizeCharset,
} from '../../lib/crawl/fetch/charset.ts';

const html = (head: string, body = '') =>
  Buffer.from(`<!doctype html><html><head>${head}</head><body>${body}`, 'latin1');
// "Привет" in windows-1251 and in UTF-8.
const PRIVET_1251 = Buffer.from([0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2]);
const PRIVET = 'Привет';

describe('detectCharset', () => {
  it('defaults to utf-8 with no BOM, header charset or meta', () => {
    expect(detectCharset(undefined, Buffer.from('<p>plain</p>'))).toBe('utf-8');
    expect(detectCharset('text/html', Buffer.from('<p>plain</p>'))).toBe('utf-8');
  });

  it('takes the Content-Type charset, quoted or not, any case', () => {
    expect(detectCharset('text/html; charset=UTF-8', Buffer.alloc(0))).toBe('utf-8');
    expect(detectCharset('text/html;charset="windows-1251"', Buffer.alloc(0))).toBe('windows-1251');
    expect(detectCharset('text/html; Charset = koi8-r', Buffer.alloc(0))).toBe('koi8-r');
  });

  it('maps ISO-8859-1 and latin1 to windows-1252, as the WHATWG label table says', () => {
    expect(detectCharset('text/html; charset=ISO-8859-1', Buffer.alloc(0))).toBe('windows-1252');
    expect(detectCharset('text/html; charset=latin1', Buffer.alloc(0))).toBe('windows-1252');
    expect(normalizeCharset(' GB2312 ')).toBe('gbk');
  });

  it('finds <meta charset> when the header has none', () => {
    expect(detectCharset('text/html', html('<meta charset="windows-1251">'))).toBe('windows-1251');
    expect(detectCharset(undefined, html("<META CHARSET='Shift_JIS'>"))).toBe('shift_jis');
    expect(detectCharset(undefined, html('<meta charset=euc-kr>'))).toBe('euc-kr');
  });

  it('finds <meta http-equiv="Content-Type" content="...; charset=...">', () => {
    const body = html('<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">');
    expect(detectCharset('text/html', body)).toBe('windows-1251');
    const reversed = html("<meta content='text/html;charset=ISO-8859-2' http-equiv='content-type'>");
    expect(detectCharset(undefined, reversed)).toBe('iso-8859-2');
  });

  it('ignores a content charset when http-equiv is not Content-Type, and metas in comments', () => {
    expect(detectCharset(undefined, html('<meta name="x" content="charset=koi8-r">'))).toBe('utf-8');
    expect(detectCharset(undefined, html('<!-- <meta charset="koi8-r"> -->'))).toBe('utf-8');
  });

  it('skips a meta with an unknown label and takes the next one', () => {
    expect(detectCharset(undefined, html('<meta charset="bogus"><meta charset="koi8-r">'))).toBe('koi8-r');
  });

  it('reads a meta UTF-16 claim as utf-8 (ASCII-readable bytes are not UTF-16)', () => {
    expect(detectCharset(undefined, html('<meta charset="utf-16">'))).toBe('utf-8');
  });

  it('looks for meta only in the first 4 KiB', () => {
    const padding = ' '.repeat(META_SCAN_BYTES);
    expect(detectCharset(undefined, html(`${padding}<meta charset="windows-1251">`))).toBe('utf-8');
    expect(detectCharset(undefined, html(`${' '.repeat(3000)}<meta charset="windows-1251">`))).toBe('windows-1251');
  });

  it('lets the header beat the meta', () => {
    expect(detectCharset('text/html; charset=koi8-r', html('<meta charset="windows-1251">'))).toBe('koi8-r');
  });

  it('lets a BOM beat the header and the meta', () => {
    const utf8Bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), html('<meta charset="windows-1251">')]);
    expect(detectCharset('text/html; charset=windows-1251', utf8Bom)).toBe('utf-8');
    expect(detectCharset('text/html; charset=utf-8', Buffer.from([0xff, 0xfe, 0x41, 0x00]))).toBe('utf-16le');
    expect(detectCharset(undefined, Buffer.from([0xfe, 0xff, 0x00, 0x41]))).toBe('utf-16be');
  });

  it('falls through a garbage header label to the meta, then to utf-8', () => {
    expect(detectCharset('text/html; charset=no-such-thing', html('<meta charset="windows-1251">'))).toBe(
      'windows-1251',
    );
    expect(detectCharset('text/html; charset=no-such-thing', html(''))).toBe('utf-8');
    expect(detectCharset('text/html; charset=', html(''))).toBe('utf-8');
    expect(contentTypeCharset('text/html; charset=')).toBeUndefined();
  });
});

describe('decodeBody', () => {
  it('decodes UTF-8', () => {
    expect(decodeBody(Buffer.from(`<p>${PRIVET} – ü</p>`), 'utf-8')).toBe(`<p>${PRIVET} – ü</p>`);
  });

  it('strips a UTF-8 BOM', () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('héllo')]);
    expect(decodeBody(body, detectCharset(undefined, body))).toBe('héllo');
  });

  it('decodes UTF-16LE behind its BOM', () => {
    const body = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`<p>${PRIVET}</p>`, 'utf16le')]);
    expect(decodeBody(body, detectCharset('text/html', body))).toBe(`<p>${PRIVET}</p>`);
  });

  it('decodes windows-1251 declared in the header and in a meta', () => {
    expect(decodeBody(PRIVET_1251, detectCharset('text/html; charset=windows-1251', PRIVET_1251))).toBe(PRIVET);
    const body = Buffer.concat([html('<meta charset="windows-1251">'), PRIVET_1251]);
    expect(decodeBody(body, detectCharset('text/html', body)).endsWith(PRIVET)).toBe(true);
  });

  it('decodes ISO-8859-1 as windows-1252 (0x80 is €, not a C1 control)', () => {
    const body = Buffer.from([0x80, 0x20, 0xe9]);
    expect(decodeBody(body, detectCharset('text/plain; charset=iso-8859-1', body))).toBe('€ é');
  });

  it('replaces invalid bytes with U+FFFD instead of throwing', () => {
    expect(decodeBody(Buffer.from([0x61, 0xff, 0x62, 0xc3]), 'utf-8')).toBe('a\uFFFDb\uFFFD');
  });

  it('decodes with utf-8 when the label is unknown', () => {
    expect(decodeBody(Buffer.from('ü'), 'no-such-charset')).toBe('ü');
    expect(decodeBody(Buffer.from('ü'), 'iso-2022-kr')).toBe('ü');
  });
});
