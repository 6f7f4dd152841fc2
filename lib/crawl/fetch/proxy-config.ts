/**
 * The proxy variables (docs/proxies.md): CRAWLER_PROXIES, the proxies a crawl goes through unless it names a group,
 * and CRAWLER_PROXY_GROUPS, named groups of proxies a crawl chooses with `attrs.proxy`. Each proxy becomes a
 * {@link ProxyEndpoint} named by its `#name` or `host:port`; a malformed entry is reported by its position and host,
 * never by its text, which may hold credentials.
 */
import { ConfigError } from '../../errors.ts';
import { DIRECT_PROXY_GROUP } from '../../schemas/index.ts';
import type { ProxyEndpoint } from './proxy-pool.ts';

/** The proxies of a crawler process. */
export interface ProxySettings {
  /** CRAWLER_PROXIES: for crawls that name no group. Empty: those fetch directly. */
  proxies: ProxyEndpoint[];
  /** CRAWLER_PROXY_GROUPS, by group name (in the order listed). */
  groups: Map<string, ProxyEndpoint[]>;
}

const DEFAULT_PORTS: Readonly<Record<string, string>> = { 'http:': '80', 'https:': '443', 'socks5:': '1080' };

/** A group's name: what a crawl's `attrs.proxy` says. */
const GROUP_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/;

/**
 * Parses CRAWLER_PROXIES: proxy URLs separated by commas or white space, `http://`, `https://` or `socks5://`, with
 * optional `user:password@` (percent-encoded where it holds a comma, `;`, `@` or `:`) and an optional `#name`.
 * @param where how errors name the list (`CRAWLER_PROXY_GROUPS` passes the group)
 * @throws ConfigError naming the entry by its position and host, never its credentials
 */
export function parseProxies(
  spec: string,
  where: { variable: string; list?: string } = { variable: 'CRAWLER_PROXIES' },
): ProxyEndpoint[] {
  const entries = spec.split(/[\s,]+/).filter((e) => e !== '');
  const names = new Set<string>();
  const fail = (message: string) => new ConfigError(where.variable, `${where.list ?? ''}${message}`);
  return entries.map((entry, i) => {
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw fail(`entry ${i + 1} is not a URL`);
    }
    const port = url.port || DEFAULT_PORTS[url.protocol] || '';
    const host = `${url.hostname}:${port}`;
    if (!(url.protocol in DEFAULT_PORTS)) {
      // `user:password@host` without a scheme parses with `user:` as its scheme: only a known scheme is quoted.
      const scheme = /^socks[45]?[ah]?:$/.test(url.protocol)
        ? ` is ${url.protocol}//,`
        : ' has no http://, https:// or socks5:// scheme;';
      throw fail(
        `entry ${i + 1}${scheme} only http://, https:// and socks5:// proxies are supported (a socks5:// proxy is ` +
          'always given the address the crawler resolved and checked)',
      );
    }
    if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '')
      throw fail(`entry ${i + 1} (${host}) has a path or query; a proxy URL has neither`);
    const name = url.hash.length > 1 ? decodeURIComponent(url.hash.slice(1)) : host;
    if (names.has(name)) throw fail(`${name} is listed twice`);
    names.add(name);
    url.hash = '';
    return { name, url: url.href };
  });
}

/**
 * Parses CRAWLER_PROXY_GROUPS: groups separated by `;`, each `name=` and its proxies as {@link parseProxies} takes
 * them (`residential=http://u:p@10.0.0.5:3128,http://u:p@10.0.0.6:3128; datacenter=http://10.0.1.5:3128`). A name
 * is 1-40 letters, digits, `_` or `-`, starting with a letter or digit; `none` is taken (a crawl's `attrs.proxy`
 * `none` fetches directly).
 * @throws ConfigError naming the group by its name (or position) and the entry by its position and host
 */
export function parseProxyGroups(spec: string): Map<string, ProxyEndpoint[]> {
  const groups = new Map<string, ProxyEndpoint[]>();
  const parts = spec.split(';').map((p) => p.trim());
  parts.forEach((part, i) => {
    if (part === '') return;
    const eq = part.indexOf('=');
    const name = eq < 0 ? '' : part.slice(0, eq).trim();
    // The text before `=` is quoted only once it is a valid name: a group written without one may start with a URL.
    if (!GROUP_NAME.test(name))
      throw new ConfigError(
        'CRAWLER_PROXY_GROUPS',
        `group ${i + 1} does not start with a name and "=" (1-40 letters, digits, _ or -)`,
      );
    if (name === DIRECT_PROXY_GROUP)
      throw new ConfigError('CRAWLER_PROXY_GROUPS', `"${name}" is not a group's name: attrs.proxy "${name}" is direct`);
    if (groups.has(name)) throw new ConfigError('CRAWLER_PROXY_GROUPS', `group ${name} is listed twice`);
    const proxies = parseProxies(part.slice(eq + 1), { variable: 'CRAWLER_PROXY_GROUPS', list: `group ${name}: ` });
    if (proxies.length === 0) throw new ConfigError('CRAWLER_PROXY_GROUPS', `group ${name} lists no proxy`);
    groups.set(name, proxies);
  });
  return groups;
}

/**
 * Both variables, with each proxy's name used once over all of them: a name is what the stats count a proxy's
 * requests under, so two proxies under one name would be counted as one.
 * @throws ConfigError as {@link parseProxies} and {@link parseProxyGroups}, or naming the name used twice
 */
export function proxySettings(proxies: string, groups: string): ProxySettings {
  const settings: ProxySettings = { proxies: parseProxies(proxies), groups: parseProxyGroups(groups) };
  const owner = new Map<string, string>(settings.proxies.map((p) => [p.name, 'CRAWLER_PROXIES']));
  for (const [group, list] of settings.groups) {
    for (const p of list) {
      const first = owner.get(p.name);
      if (first !== undefined)
        throw new ConfigError(
          'CRAWLER_PROXY_GROUPS',
          `proxy name ${p.name} of group ${group} is used in ${first} too; give one of them another #name`,
        );
      owner.set(p.name, `group ${group}`);
    }
  }
  return settings;
}
