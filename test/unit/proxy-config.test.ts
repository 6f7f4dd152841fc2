/**
 * CRAWLER_PROXIES and CRAWLER_PROXY_GROUPS parsing (lib/crawl/fetch/proxy-config.ts): proxies named by `#name` or
 * host:port, groups by name, one name per proxy over both variables, and errors that never quote credentials.
 */
import { describe, expect, it } from 'vitest';
import { parseProxies, parseProxyGroups, proxySettings } from '../../lib/crawl/fetch/proxy-config.ts';
import { ConfigError } from '../../lib/errors.ts';

const SECRET = 's3cr%2Cet';

function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (error) {
    return error as Error;
  }
  throw new Error('did not throw');
}

describe('parseProxies', () => {
  it('names proxies by host:port or their #name, keeping the credentials only in the URL', () => {
    const proxies = parseProxies(
      `http://user:${SECRET}@10.0.0.5:3128#eu-1, https://proxy.example.com\n http://10.0.0.6:8080`,
    );
    expect(proxies.map((p) => p.name)).toEqual(['eu-1', 'proxy.example.com:443', '10.0.0.6:8080']);
    expect(proxies[0]?.url).toBe(`http://user:${SECRET}@10.0.0.5:3128/`);
    expect(proxies[1]?.url).toBe('https://proxy.example.com/');
  });

  it('takes socks5:// proxies, port 1080 by default', () => {
    expect(parseProxies(`socks5://user:${SECRET}@10.0.0.7#s, socks5://[::1]:9050`)).toEqual([
      { name: 's', url: `socks5://user:${SECRET}@10.0.0.7` },
      { name: '[::1]:9050', url: 'socks5://[::1]:9050' },
    ]);
  });

  it('is empty for an empty value', () => {
    expect(parseProxies('')).toEqual([]);
    expect(parseProxies(' , ')).toEqual([]);
  });

  it.each([
    [`socks4://user:${SECRET}@10.0.0.5:1080`, /entry 1 is socks4:\/\/, only http:\/\/, https:\/\/ and socks5:\/\//],
    [`socks5h://user:${SECRET}@10.0.0.5:1080`, /entry 1 is socks5h:\/\/, only http/],
    [`http://user:${SECRET}@10.0.0.5:3128/path`, /entry 1 \(10\.0\.0\.5:3128\) has a path/],
    [`http://ok:1, user:${SECRET}@h:1`, /entry 2 has no http:\/\/, https:\/\/ or socks5:\/\/ scheme/],
    ['http://ok:1, http://[::1', /entry 2 is not a URL/],
    [`http://a:${SECRET}@h:1#x, http://h:2#x`, /x is listed twice/],
  ])('refuses %s with a reason that names no credentials', (spec, reason) => {
    const error = thrown(() => parseProxies(spec));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(reason);
    expect(error.message).toMatch(/^CRAWLER_PROXIES: /);
    expect(error.message).not.toContain(SECRET);
    expect(error.message).not.toContain('s3cr');
    expect(error.message).not.toContain('user');
  });
});

describe('parseProxyGroups', () => {
  it('reads groups separated by ";", each a name, "=" and its proxies', () => {
    const groups = parseProxyGroups(
      `residential=http://user:${SECRET}@10.0.0.5:3128#res-1, http://user:${SECRET}@10.0.0.6:3128#res-2;\n` +
        ' datacenter = http://10.0.1.5:3128 ;',
    );
    expect([...groups.keys()]).toEqual(['residential', 'datacenter']);
    expect(groups.get('residential')?.map((p) => p.name)).toEqual(['res-1', 'res-2']);
    expect(groups.get('residential')?.[0]?.url).toBe(`http://user:${SECRET}@10.0.0.5:3128/`);
    expect(groups.get('datacenter')).toEqual([{ name: '10.0.1.5:3128', url: 'http://10.0.1.5:3128/' }]);
  });

  it('is empty for an empty value', () => {
    expect(parseProxyGroups('').size).toBe(0);
    expect(parseProxyGroups(' ; ').size).toBe(0);
  });

  it.each([
    [`http://user:${SECRET}@10.0.0.5:3128`, /group 1 does not start with a name and "="/],
    [`a=http://h:1; http://user:pa=${SECRET}@h:2`, /group 2 does not start with a name and "="/],
    [`-x=http://user:${SECRET}@h:1`, /group 1 does not start with a name/],
    [`none=http://user:${SECRET}@h:1`, /"none" is not a group's name: attrs.proxy "none" is direct/],
    ['a=http://h:1; a=http://h:2', /group a is listed twice/],
    ['a= ,', /group a lists no proxy/],
    [`a=http://h:1; b=socks4://user:${SECRET}@h:1080`, /^CRAWLER_PROXY_GROUPS: group b: entry 1 is socks4:\/\//],
    [`b=http://h:1, http://user:${SECRET}@h:2/x`, /group b: entry 2 \(h:2\) has a path/],
  ])('refuses %s with a reason that names no credentials', (spec, reason) => {
    const error = thrown(() => parseProxyGroups(spec));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(/^CRAWLER_PROXY_GROUPS: /);
    expect(error.message).toMatch(reason);
    expect(error.message).not.toContain('s3cr');
    expect(error.message).not.toContain('user');
  });
});

describe('proxySettings', () => {
  it('reads both variables', () => {
    const settings = proxySettings('http://10.0.0.1:3128#default-1', 'eu=http://10.0.0.2:3128#eu-1');
    expect(settings.proxies.map((p) => p.name)).toEqual(['default-1']);
    expect([...settings.groups].map(([g, l]) => [g, l.map((p) => p.name)])).toEqual([['eu', ['eu-1']]]);
  });

  it('refuses a proxy name used twice over the variables: the stats count a proxy by its name', () => {
    expect(() => proxySettings('http://10.0.0.1:3128#p', 'eu=http://10.0.0.2:3128#p')).toThrow(
      'CRAWLER_PROXY_GROUPS: proxy name p of group eu is used in CRAWLER_PROXIES too; give one of them another #name',
    );
    expect(() => proxySettings('', 'eu=http://10.0.0.2:3128; us=http://10.0.0.2:3128')).toThrow(
      'proxy name 10.0.0.2:3128 of group us is used in group eu too',
    );
  });
});
