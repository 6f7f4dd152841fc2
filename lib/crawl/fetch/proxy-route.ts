/**
 * Requests through the forward proxies of CRAWLER_PROXIES (docs/proxies.md): one undici ProxyAgent per proxy, every
 * request tunnelled with CONNECT (http targets too, so the proxy never sees a request or a response), the proxy
 * chosen per domain by the {@link ProxyPool}, and another proxy tried when the one chosen is at fault.
 *
 * The SSRF guard holds behind a proxy: the target is resolved here and checked (lib/crawl/fetch/ssrf.ts) before the
 * request goes to the proxy, so private targets are refused even though the proxy could reach them. The proxy
 * resolves the name again itself; an answer that changed in between (DNS rebinding) is the caveat docs/proxies.md
 * states. The proxies' own addresses are operator configuration and are not checked.
 */
import type { LookupOptions } from 'node:dns';
import { type Dispatcher, ProxyAgent } from 'undici';
import { registrableDomain } from '../domain.ts';
import type { FetchError } from '../types.ts';
import { proxiedFailure } from './errors.ts';
import { type ProxyEndpoint, ProxyPool, type ProxyPoolOptions } from './proxy-pool.ts';
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
  readonly #agents = new Map<string, ProxyAgent>();
  readonly #allowPrivate: boolean;
  readonly #lookup: LookupFunction;
  readonly #onOutcome: ProxyOutcomeListener | undefined;

  constructor(options: ProxyRouteOptions) {
    this.#pool = new ProxyPool(options.proxies, options.pool);
    this.#allowPrivate = options.allowPrivate;
    this.#lookup = options.lookup;
    this.#onOutcome = options.onOutcome;
    for (const proxy of options.proxies) {
      this.#agents.set(
        proxy.name,
        new ProxyAgent({
          uri: proxy.url,
          proxyTunnel: true,
          connections: options.connections,
          headersTimeout: options.headersTimeoutMs,
          bodyTimeout: options.bodyTimeoutMs,
          connectTimeout: options.connectTimeoutMs,
          allowH2: false,
          requestTls: { rejectUnauthorized: options.verifyTls },
        }),
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
        const response = await (this.#agents.get(proxy.name) as ProxyAgent).request(options);
        this.#pool.succeeded(proxy.name);
        this.#onOutcome?.(proxy.name, 'ok');
        return response;
      } catch (error) {
        if (options.signal && (options.signal as AbortSignal).aborted) throw error;
        const failure = proxiedFailure(error, proxy.name);
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

function domainOf(url: URL): string {
  try {
    return registrableDomain(url.host);
  } catch {
    return url.hostname;
  }
}
