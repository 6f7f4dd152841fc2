/**
 * Requests through one list of forward proxies (CRAWLER_PROXIES, or a group of CRAWLER_PROXY_GROUPS; docs/proxies.md):
 * one undici dispatcher per proxy, every request tunnelled (http targets too, so the proxy never sees a request or a
 * response): an HTTP `CONNECT` through an `http://` or `https://` proxy (undici's ProxyAgent), a SOCKS5 `CONNECT`
 * through a `socks5://` one (lib/crawl/fetch/socks5.ts); the proxy chosen per domain by the {@link ProxyPool}, and
 * another proxy tried when the one chosen is at fault.
 *
 * The SSRF guard holds behind a proxy: the target is resolved here and checked (lib/crawl/fetch/ssrf.ts) before the
 * request goes to the proxy, so private targets are refused even though the proxy could reach them. An HTTP proxy
 * resolves the name again itself; an answer that changed in between (DNS rebinding) is the caveat docs/proxies.md
 * states. A SOCKS5 proxy is given the checked address, never the name, so it has no such gap. The proxies' own
 * addresses are operator configuration and are not checked.
 */
import type { LookupOptions } from 'node:dns';
import { Agent, type buildConnector, type Dispatcher, Pool, ProxyAgent } from 'undici';
import { registrableDomain } from '../domain.ts';
import type { FetchError } from '../types.ts';
import { proxiedFailure, proxySideError } from './errors.ts';
import { type ProxyEndpoint, ProxyPool, type ProxyPoolOptions } from './proxy-pool.ts';
import { socks5Connector } from './socks5.ts';
import { assertAllowedHost, type LookupFunction, literalAddress } from './ssrf.ts';

/** Options of {@link ProxyRoute}. */
export interface ProxyRouteOptions {
  proxies: readonly ProxyEndpoint[];
  /** @default {} */
  pool?: ProxyPoolOptions;
  /** Refuse non-public targets (ALLOW_PRIVATE_NETWORKS=false). */
  allowPrivate: boolean;
  /** The SSRF guard's resolver ({@link guardedLookup}), run on the target before the proxy gets it. */
  lookup: LookupFunction;
  /** Most concurrent connections (tunnels) per target origin, per proxy. */
  connections: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  connectTimeoutMs: number;
  /** Verify the target's TLS certificate (inside the tunnel). */
  verifyTls: boolean;
  /** Told each request's outcome per proxy (the per-proxy stats); must not throw. */
  onOutcome?: ProxyOutcomeListener;
}

/** What a request through a proxy came to: `ok` is any answer of the site (any status), else the proxy's failure. */
type ProxyOutcome = 'ok' | 'proxy_auth' | 'proxy_connect' | 'proxy_error';

/** Told a request's {@link ProxyOutcome} through the proxy named `proxy`. */
export type ProxyOutcomeListener = (proxy: string, outcome: ProxyOutcome) => void;

const ALL: LookupOptions = { all: true };

export class ProxyRoute {
  readonly #pool: ProxyPool;
  readonly #agents = new Map<string, Dispatcher>();
  /** Names of the SOCKS5 proxies, whose every own failure their connector marks. */
  readonly #socks = new Set<string>();
  readonly #allowPrivate: boolean;
  readonly #lookup: LookupFunction;
  readonly #onOutcome: ProxyOutcomeListener | undefined;

  constructor(options: ProxyRouteOptions) {
    this.#pool = new ProxyPool(options.proxies, options.pool);
    this.#allowPrivate = options.allowPrivate;
    this.#lookup = options.lookup;
    this.#onOutcome = options.onOutcome;
    for (const proxy of options.proxies) {
      const url = new URL(proxy.url);
      if (url.protocol === 'socks5:') this.#socks.add(proxy.name);
      this.#agents.set(
        proxy.name,
        url.protocol === 'socks5:' ? socksAgent(url, options) : httpProxyAgent(url, options),
      );
    }
  }

  /**
   * Sends one hop through a proxy: checks the target (SSRF guard), then tries the domain's proxy and, while the
   * proxy is at fault (407, unreachable, its own 5xx), each other one once. Throws the last proxy's failure when
   * every proxy failed, the target's failure as it is otherwise.
   * @throws FetchError `blocked_address`, `proxy_auth`, `proxy_connect`, `proxy_error`, or what undici threw
   */
  async request(url: URL, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> {
    await this.#assertPublicTarget(url);
    // A crawl request's own Proxy-Authorization has no proxy to go to inside the tunnel (and undici refuses it there):
    // the proxies' credentials are the operator's, in CRAWLER_PROXIES.
    const headers = options.headers as Record<string, string>;
    if (headers['proxy-authorization'] !== undefined) {
      const { 'proxy-authorization': _, ...rest } = headers;
      options = { ...options, headers: rest };
    }
    const domain = domainOf(url);
    const tried = new Set<string>();
    let last: FetchError | undefined;
    for (;;) {
      const proxy = this.#pool.pick(domain, tried);
      if (proxy === undefined) throw last as FetchError;
      try {
        const response = await (this.#agents.get(proxy.name) as Dispatcher).request(options);
        this.#pool.succeeded(proxy.name);
        this.#onOutcome?.(proxy.name, 'ok');
        return response;
      } catch (error) {
        if (options.signal && (options.signal as AbortSignal).aborted) throw error;
        const failure = proxiedFailure(error, proxy.name, this.#socks.has(proxy.name));
        if (!failure) throw error;
        this.#onOutcome?.(proxy.name, failure.kind as ProxyOutcome);
        this.#pool.failed(proxy.name, domain);
        tried.add(proxy.name);
        last = failure;
      }
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.#agents.values()].map((agent) => agent.close()));
  }

  /** The SSRF guard on the target, since no connection to it is made here for the connect-time check to run in. */
  async #assertPublicTarget(url: URL): Promise<void> {
    if (this.#allowPrivate) return;
    assertAllowedHost(url, false);
    if (literalAddress(url.hostname) !== undefined) return;
    await new Promise<void>((resolve, reject) =>
      this.#lookup(url.hostname, ALL, (err) => (err ? reject(err) : resolve())),
    );
  }
}

/** An `http://` or `https://` proxy: HTTP CONNECT tunnels, failures reaching the proxy itself marked as its own. */
function httpProxyAgent(url: URL, o: ProxyRouteOptions): ProxyAgent {
  return new ProxyAgent({
    uri: url.href,
    proxyTunnel: true,
    connections: o.connections,
    headersTimeout: o.headersTimeoutMs,
    bodyTimeout: o.bodyTimeoutMs,
    connectTimeout: o.connectTimeoutMs,
    allowH2: false,
    requestTls: { rejectUnauthorized: o.verifyTls },
    // The proxy's own certificate is always verified (against the system's CAs and NODE_EXTRA_CA_CERTS): the
    // credentials go to it. A TLS failure with it is the proxy's, not the site's.
    clientFactory: (origin, opts) => {
      const connect = (opts as { connect: buildConnector.connector }).connect;
      return new Pool(origin, {
        ...opts,
        connect: (o, callback) =>
          connect(o, (...args) => (args[0] ? callback(proxySideError(args[0]), null) : callback(...args))),
      });
    },
  });
}

/** A `socks5://` proxy: SOCKS5 tunnels to the checked address (lib/crawl/fetch/socks5.ts). */
function socksAgent(url: URL, o: ProxyRouteOptions): Agent {
  return new Agent({
    connections: o.connections,
    headersTimeout: o.headersTimeoutMs,
    bodyTimeout: o.bodyTimeoutMs,
    allowH2: false,
    connect: socks5Connector({ proxy: url, lookup: o.lookup, timeoutMs: o.connectTimeoutMs, verifyTls: o.verifyTls }),
  });
}

function domainOf(url: URL): string {
  try {
    return registrableDomain(url.host);
  } catch {
    return url.hostname;
  }
}
