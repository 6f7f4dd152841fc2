/**
 * A real forward proxy for the proxy tests: Apify's proxy-chain `Server` (npm, not written here) on 127.0.0.1, with or
 * without Basic authentication, over plain HTTP or TLS (an `https://` proxy), resolving the fixture site's host names
 * itself (as a proxy on the operator's network resolves real names), and counting the targets it was asked to tunnel
 * to.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { type PrepareRequestFunction, Server } from 'proxy-chain';

export interface ForwardProxy {
  /** The proxy's URL with `credentials` (its own, unless others are given). */
  url(credentials?: { username: string; password: string }): string;
  /** `127.0.0.1:port` (`localhost:port` over TLS), the name the crawler gives it. */
  readonly name: string;
  /** The host names it was asked to tunnel to (CONNECT), one entry per request that passed authentication. */
  readonly targets: string[];
  /** Requests it refused for their credentials. */
  readonly refused: () => number;
  /** Stops it at once, dropping every open connection and tunnel (a proxy that dies). */
  kill(): Promise<void>;
}

export interface ForwardProxyOptions {
  /** Basic credentials it requires; none: it asks for none. */
  credentials?: { username: string; password: string };
  /** Names it resolves without DNS (the fixture site's), as CRAWLER_HOST_MAP does for the crawler. */
  hostMap?: Readonly<Record<string, string>>;
  /** It answers every tunnel request with its own 500 (a proxy broken in itself). */
  broken?: boolean;
  /** Serve over TLS with this key and certificate (for `localhost`): an `https://localhost:port` proxy. */
  tls?: { key: Buffer; cert: Buffer };
}

export async function startForwardProxy(options: ForwardProxyOptions = {}): Promise<ForwardProxy> {
  const targets: string[] = [];
  let refused = 0;
  const hostMap = new Map(Object.entries(options.hostMap ?? {}).map(([h, ip]) => [h.toLowerCase(), ip]));
  const lookup = ((hostname: string, opts: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    const mapped = hostMap.get(hostname.toLowerCase());
    if (mapped === undefined) return dnsLookup(hostname, opts, callback as never);
    const found: LookupAddress = { address: mapped, family: isIP(mapped) };
    process.nextTick(() => (opts.all ? callback(null, [found]) : callback(null, found.address, found.family)));
  }) as unknown as typeof dnsLookup;
  const prepareRequestFunction: PrepareRequestFunction = ({ username, password, hostname }) => {
    const c = options.credentials;
    if (c && (username !== c.username || password !== c.password)) {
      refused++;
      return { requestAuthentication: true };
    }
    if (options.broken) throw new Error('this proxy is broken');
    targets.push(hostname);
    return { dnsLookup: lookup };
  };
  const where = { port: 0, host: '127.0.0.1', prepareRequestFunction };
  const server = options.tls
    ? new Server({ ...where, serverType: 'https', httpsOptions: options.tls })
    : new Server(where);
  await server.listen();
  const name = `${options.tls ? 'localhost' : '127.0.0.1'}:${server.port}`;
  const scheme = options.tls ? 'https' : 'http';
  return {
    url: (credentials = options.credentials) =>
      credentials
        ? `${scheme}://${encodeURIComponent(credentials.username)}:${encodeURIComponent(credentials.password)}@${name}`
        : `${scheme}://${name}`,
    name,
    targets,
    refused: () => refused,
    kill: () => server.close(true),
  };
}
