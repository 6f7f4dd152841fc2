/**
 * Connections through a SOCKS5 proxy (RFC 1928, with RFC 1929 user/password authentication) for `socks5://` entries
 * of CRAWLER_PROXIES (docs/proxies.md), as the `connect` function of an undici Agent: the target's host is resolved
 * by the crawler with the SSRF guard's lookup (lib/crawl/fetch/ssrf.ts), and the proxy is asked to connect to that
 * checked address, never to the name. So the check runs on the address the proxy connects to, as for a direct fetch,
 * and DNS rebinding cannot slip past a SOCKS5 proxy. TLS to an `https://` site runs end to end through the tunnel.
 *
 * The proxy's own address is operator configuration: resolved by the system and not checked. Every failure of the
 * proxy itself (its address, the handshake, its credentials, its refusal) is marked {@link proxySideError}; a reply
 * saying the site could not be reached (network or host unreachable, refused, TTL expired) is the site's failure,
 * with the errno code a direct connection would have had.
 */
import { isIP, type Socket, connect as tcpConnect } from 'node:net';
import { buildConnector } from 'undici';
import { proxySideError } from './errors.ts';
import type { LookupFunction } from './ssrf.ts';

/** Options of {@link socks5Connector}. */
export interface Socks5ConnectorOptions {
  /** The proxy's `socks5://[user:password@]host[:port]` URL (port 1080 by default). Never logged. */
  proxy: URL;
  /** The SSRF guard's lookup ({@link guardedLookup}): the target's name is resolved and checked with it. */
  lookup: LookupFunction;
  /** Limit on reaching the proxy and the whole handshake, the site's TLS handshake after it too. */
  timeoutMs: number;
  /** Verify the site's TLS certificate (inside the tunnel). */
  verifyTls: boolean;
}

/** What an undici Agent's `connect` option takes. */
type Connector = buildConnector.connector;

/** A reply (RFC 1928 §6) that says the site could not be reached, as the errno code a direct connection gets. */
const SITE_REPLIES: Readonly<Record<number, [code: string, what: string]>> = {
  3: ['ENETUNREACH', 'network unreachable'],
  4: ['EHOSTUNREACH', 'host unreachable'],
  5: ['ECONNREFUSED', 'connection refused'],
  6: ['ETIMEDOUT', 'TTL expired'],
};

const PROXY_REPLIES: Readonly<Record<number, string>> = {
  1: 'general failure',
  2: 'connection not allowed by its rules',
  7: 'command not supported',
  8: 'address type not supported',
};

/** A connection through the SOCKS5 proxy `options.proxy` to the origin undici asks for (see the module doc). */
export function socks5Connector(options: Socks5ConnectorOptions): Connector {
  const { proxy, lookup, timeoutMs } = options;
  const username = decodeURIComponent(proxy.username);
  const password = decodeURIComponent(proxy.password);
  const tls = buildConnector({ timeout: timeoutMs, rejectUnauthorized: options.verifyTls, allowH2: false });
  return (opts, callback) => {
    const port = Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80);
    const hostname = opts.hostname.replace(/^\[(.*)\]$/, '$1');
    const done = (socket: Socket) => {
      if (opts.protocol !== 'https:') return callback(null, socket);
      tls({ ...opts, httpSocket: socket }, callback);
    };
    const open = (address: string) =>
      tunnel(proxy, { username, password }, address, port, timeoutMs).then(done, (error: Error) =>
        callback(error, null),
      );
    // An IP literal: the fetcher checked it before the request (assertAllowedHost), as net.connect never looks it up.
    if (isIP(hostname) !== 0) return void open(hostname);
    lookup(hostname, {}, (error, address) => (error ? callback(error, null) : void open(address as string)));
  };
}

/** Connects to the proxy and has it open a TCP connection to `address:port`; resolves with the tunnel's socket. */
function tunnel(
  proxy: URL,
  credentials: { username: string; password: string },
  address: string,
  port: number,
  timeoutMs: number,
): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    const socket = tcpConnect({ host: proxy.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(proxy.port) || 1080 });
    let buffered: Buffer = Buffer.alloc(0);
    let step: () => boolean = () => false;
    const detach = () => {
      clearTimeout(timer);
      socket.removeListener('data', onData);
      socket.removeListener('error', fail);
      socket.removeListener('close', closed);
    };
    const fail = (error: Error, proxySide = true) => {
      detach();
      socket.destroy();
      reject(proxySide ? proxySideError(error) : error);
    };
    const closed = () => fail(coded('ECONNRESET', 'the proxy closed the connection during the handshake'));
    const timer = setTimeout(
      () => fail(coded('UND_ERR_CONNECT_TIMEOUT', `no SOCKS5 tunnel within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      try {
        while (step()) {}
      } catch (error) {
        fail(error as Error, !(error instanceof SiteUnreachable));
      }
    };
    /** `n` bytes off the front of what the proxy sent, or undefined while fewer arrived. */
    const take = (n: number): Buffer | undefined => {
      if (buffered.length < n) return undefined;
      const bytes = buffered.subarray(0, n);
      buffered = buffered.subarray(n);
      return bytes;
    };
    const withAuth = credentials.username !== '' || credentials.password !== '';

    const greeting = (): boolean => {
      const answer = take(2);
      if (answer === undefined) return false;
      if (answer[0] !== 5) throw coded('SOCKS5_PROTOCOL', 'not a SOCKS5 proxy');
      if (answer[1] === 0xff)
        throw coded('SOCKS5_AUTH', withAuth ? 'refused user/password authentication' : 'requires authentication');
      if (answer[1] === 2 && withAuth) {
        socket.write(authRequest(credentials));
        step = authenticated;
        return true;
      }
      if (answer[1] !== 0) throw coded('SOCKS5_PROTOCOL', `chose an authentication method not offered (${answer[1]})`);
      socket.write(connectRequest(address, port));
      step = connected;
      return true;
    };
    const authenticated = (): boolean => {
      const answer = take(2);
      if (answer === undefined) return false;
      if (answer[1] !== 0) throw coded('SOCKS5_AUTH', 'refused the credentials');
      socket.write(connectRequest(address, port));
      step = connected;
      return true;
    };
    const connected = (): boolean => {
      // VER REP RSV ATYP BND.ADDR BND.PORT, the address 4 or 16 bytes, or a length byte and a name.
      if (buffered.length < 5) return false;
      const reply = buffered[1] as number;
      const type = buffered[3];
      const bound = type === 1 ? 4 : type === 4 ? 16 : type === 3 ? 1 + (buffered[4] as number) : -1;
      if (buffered[0] !== 5 || bound < 0) throw coded('SOCKS5_PROTOCOL', 'answered the connect request with bad bytes');
      if (take(4 + bound + 2) === undefined) return false;
      const site = SITE_REPLIES[reply];
      if (site) throw new SiteUnreachable(site[0], `${site[1]} (SOCKS5 reply ${reply})`);
      if (reply !== 0)
        throw coded('SOCKS5_REFUSED', `${PROXY_REPLIES[reply] ?? 'unknown reply'} (SOCKS5 reply ${reply})`);
      detach();
      // The site speaks only once asked: anything already here belongs to the stream undici reads.
      if (buffered.length > 0) socket.unshift(buffered);
      resolve(socket);
      return false;
    };

    socket.on('data', onData);
    socket.on('error', fail);
    socket.once('close', closed);
    socket.once('connect', () => {
      socket.write(Buffer.from(withAuth ? [5, 1, 2] : [5, 1, 0]));
      step = greeting;
    });
  });
}

/** The CONNECT request for an IPv4 or IPv6 address. */
function connectRequest(address: string, port: number): Buffer {
  const v4 = isIP(address) === 4;
  const bytes = v4 ? address.split('.').map(Number) : ipv6Bytes(address);
  return Buffer.from([5, 1, 0, v4 ? 1 : 4, ...bytes, port >> 8, port & 0xff]);
}

/** RFC 1929: version 1, then the user name and the password, each preceded by its length (at most 255 bytes). */
function authRequest(credentials: { username: string; password: string }): Buffer {
  const user = Buffer.from(credentials.username);
  const pass = Buffer.from(credentials.password);
  if (user.length > 255 || pass.length > 255) throw coded('SOCKS5_AUTH', 'user name or password over 255 bytes');
  return Buffer.concat([Buffer.from([1, user.length]), user, Buffer.from([pass.length]), pass]);
}

/** The 16 bytes of an IPv6 address (an embedded IPv4 tail included). */
function ipv6Bytes(address: string): number[] {
  let text = address;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (v4 !== undefined) {
    const [a = 0, b = 0, c = 0, d = 0] = v4.split('.').map(Number);
    text = `${text.slice(0, -v4.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const groups = (s: string) => (s === '' ? [] : s.split(':').map((g) => Number.parseInt(g, 16)));
  const front = groups(head);
  const back = tail === undefined ? [] : groups(tail);
  const all = [...front, ...Array(8 - front.length - back.length).fill(0), ...back] as number[];
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

/** An error with an errno-style `code` (what the fetch's failure classification reads). */
function coded(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** The proxy said it could not reach the site: the site's failure, not the proxy's. */
class SiteUnreachable extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}
