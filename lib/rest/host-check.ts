/**
 * The local REST server's guard against DNS rebinding and cross-site requests (used by
 * localstack/runtime/rest-server.ts). That server has no authentication and trusts that only this machine reaches it,
 * but a web page open in a browser on this machine can make the browser send requests to it:
 *
 * - **DNS rebinding**: a page on `evil.example` points its own name at 127.0.0.1 and then reads the answers
 *   as same-origin. Its requests carry `Host: evil.example:5343`, so only Host values naming this server
 *   are served (421 otherwise).
 * - **Cross-site requests**: a page elsewhere posts to `127.0.0.1:5343` (a `no-cors` fetch, a form). The
 *   browser adds `Origin` to every cross-origin POST and to every fetch other than GET / HEAD; one that is not
 *   `http://` (or `https://`) plus an allowed Host is refused (403). Requests without Origin (curl, Scrapy
 *   Cluster's Python clients) pass.
 *
 * The Lambda sits behind IAM auth and needs neither check. The JSON content type rule of `POST /feed` and
 * `POST /poll` (lib/rest/input.ts) applies everywhere.
 */
import { failure, type RestResponse } from './envelope.ts';

/** Loopback names as they appear in a `Host` header (IPv6 in brackets). */
const LOOPBACK_HOSTS: readonly string[] = ['127.0.0.1', 'localhost', '[::1]'];

/** Addresses that mean "every interface": not a name a client uses, so never allowed by default. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '[::]']);

/** Longest header value echoed in a refusal. */
const ECHO_CHARS = 100;

/**
 * The `Host` values a server bound to `boundHost`:`port` answers by default: `127.0.0.1:PORT`,
 * `localhost:PORT`, `[::1]:PORT`, and the bound address with the port when it is neither loopback nor a
 * wildcard (`0.0.0.0`, `::`). On port 80 the names without a port too, as clients leave the default port out.
 */
export function defaultAllowedHosts(boundHost: string, port: number): string[] {
  const bound = boundHost.includes(':') && !boundHost.startsWith('[') ? `[${boundHost}]` : boundHost;
  const names = [...LOOPBACK_HOSTS];
  const name = bound.toLowerCase();
  if (!WILDCARD_HOSTS.has(name) && !names.includes(name)) names.push(name);
  const hosts = names.map((n) => `${n}:${port}`);
  return port === 80 ? [...hosts, ...names] : hosts;
}

/**
 * Checks a request's `host` and `origin` headers (lower-case names) against the allowed Host values
 * (compared case-insensitively, exactly otherwise). Returns undefined when the request may be served, else
 * the answer that refuses it: 421 for a missing or foreign Host, 403 for a foreign Origin.
 */
export function checkHostAndOrigin(
  headers: Readonly<Record<string, string | undefined>>,
  allowedHosts: readonly string[],
): RestResponse | undefined {
  const allowed = allowedHosts.map((h) => h.toLowerCase());
  const served = allowed.join(', ');
  const host = headers.host?.trim().toLowerCase();
  if (host === undefined || host === '') {
    return failure(421, {
      message: `A Host header is required: this server answers only to ${served} (protection against DNS rebinding)`,
    });
  }
  if (!allowed.includes(host)) {
    return failure(421, {
      message:
        `Host ${echo(host)} is not served here: this server answers only to ${served} ` +
        '(protection against DNS rebinding)',
    });
  }
  const origin = headers.origin?.trim().toLowerCase();
  if (origin !== undefined && !allowed.some((h) => origin === `http://${h}` || origin === `https://${h}`)) {
    return failure(403, {
      message:
        `Cross-origin request refused: Origin ${echo(origin)} is not this server's own ` +
        `(${allowed.map((h) => `http://${h}`).join(', ')}); requests without Origin are not affected`,
    });
  }
  return undefined;
}

function echo(value: string): string {
  return JSON.stringify(value.length > ECHO_CHARS ? `${value.slice(0, ECHO_CHARS)}…` : value);
}
