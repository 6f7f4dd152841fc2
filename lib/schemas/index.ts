/**
 * The requests clients put on `<p>.incoming` (docs/contract.md "Requests"). One Ajv instance compiles the
 * four schemas once at load (docs/style.md §6); {@link parseRequest} and {@link validateRequest} are the way
 * in, and every failure is one {@link SchemaValidationError} whose details point at the offending field.
 */
import { Buffer } from 'node:buffer';
import { isIP } from 'node:net';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { Ajv } from 'ajv';
import type { RejectionDetail } from '../errors.ts';
import { SchemaValidationError } from '../errors.ts';
import actionSchema from './action.schema.json' with { type: 'json' };
import { isObject, pointerSegment, structureProblems } from './bounds.ts';
import crawlSchema from './crawl.schema.json' with { type: 'json' };
import domainConfigSchema from './domain-config.schema.json' with { type: 'json' };
import { compileLinkRegex } from './link-regex.ts';

import statsSchema from './stats.schema.json' with { type: 'json' };

/** The four request types; decided by shape, see {@link classifyRequest}. */
export type RequestType = 'crawl' | 'action' | 'stats' | 'domain';

/** A crawl request after validation, with defaults filled in. */
export interface CrawlRequest {
  /** The application that owns the crawl, 3–40 chars. */
  appid: string;
  /** The crawl within the app, 1–40 chars; a URL is fetched at most once per crawlid. */
  crawlid: string;
  /** The seed: an absolute http(s) URL of at most 2048 chars; a bare host has had `http://` prepended. */
  url: string;
  /**
   * A registered spider.
   * @default "link"
   */
  spiderid: string;
  /**
   * 1–100; higher is crawled first, children get `priority - 10`.
   * @default 1
   */
  priority: number;
  /**
   * 0–3; links are followed while a page's depth is below this.
   * @default 0
   */
  maxdepth: number;
  /** 0–2000: at most this many pages per domain for this crawl, seed included. No limit when absent. */
  domain_max_pages?: number;
  /** Only links to these domains or their subdomains are followed. Any domain when absent. */
  allowed_domains?: string[];
  /** RE2 regular expressions (each compiles; linear-time matching); a link must match one. */
  allow_regex?: string[];
  /** RE2 regular expressions (each compiles); a match denies the link, winning over `allow_regex`. */
  deny_regex?: string[];
  /** Replaces the default list of binary and media extensions whose links are not followed. */
  deny_extensions?: string[];
  /**
   * Unix epoch seconds (UTC) after which the crawl is purged; 0 means never.
   * @default 0
   */
  expires: number;
  /** User-Agent for this crawl, 3–1000 chars. The cluster default when absent. */
  useragent?: string;
  /** Cookie header, 3–1000 chars, `k=v; k2=v2`. */
  cookie?: string;
  /** Free-form, echoed in every page of the crawl. */
  attrs?: Record<string, unknown>;
  /** Extra request headers (Ext): at most 50, names are HTTP tokens. */
  headers?: Record<string, string>;
}

/** Fields every action request carries. */
interface ActionRequestBase {
  /** Chosen by the client and echoed in the reply, 1–40 chars. */
  uuid: string;
  /** 3–40 chars. */
  appid: string;
  /** A registered spider. */
  spiderid: string;
}

/** Reports what is pending, for one crawl or, without `crawlid`, for the whole app. */
interface InfoActionRequest extends ActionRequestBase {
  action: 'info';
  /** 1–40 chars; the whole app when absent. */
  crawlid?: string;
}

/** Purges a crawl's pending requests; `crawlid` is required. */
interface StopActionRequest extends ActionRequestBase {
  action: 'stop';
  /** 1–40 chars. */
  crawlid: string;
}

/** An action request after validation. */
export type ActionRequest = InfoActionRequest | StopActionRequest;

/** Which statistics a stats request asks for. */
export type StatsType = 'kafka-monitor' | 'redis-monitor' | 'crawler' | 'spider' | 'machine' | 'queue' | 'rest' | 'all';

/** A stats request after validation, with defaults filled in. */
interface StatsRequest {
  /** Chosen by the client and echoed in the reply, 1–40 chars. */
  uuid: string;
  /** 3–40 chars. */
  appid: string;
  /**
   * The component to report on; `all` reports one key per component.
   * @default "all"
   */
  stats: StatsType;
}

/** What a domain config request changes. */
type DomainConfigAction = 'domain-update' | 'domain-remove' | 'blacklist-update' | 'blacklist-remove';

/** A domain config request after validation, with defaults filled in. */
export interface DomainConfigRequest {
  /** Chosen by the client and echoed in the reply, 1–40 chars. */
  uuid: string;
  /** 3–40 chars. */
  appid: string;
  /** The registrable domain, lower-cased, internationalised names in punycode (as URL hostnames are). */
  domain: string;
  action: DomainConfigAction;
  /**
   * Pages per window before `scale`; at least 1 for `domain-update`.
   * @default 0
   */
  hits: number;
  /**
   * Window length in seconds; at least 1 for `domain-update`.
   * @default 0
   */
  window: number;
  /**
   * 0.0–1.0; the effective limit is `floor(hits × scale)` pages per window.
   * @default 1
   */
  scale: number;
}

/** A validated request tagged with its type; narrow on `type`. */
export type ClassifiedRequest =
  | { type: 'crawl'; request: CrawlRequest }
  | { type: 'action'; request: ActionRequest }
  | { type: 'stats'; request: StatsRequest }
  | { type: 'domain'; request: DomainConfigRequest };

/** The largest message {@link parseRequest} accepts by default: 1 MiB, Kafka's default message limit. */
export const MAX_REQUEST_BYTES = 1_048_576;

/** Options of {@link validateRequest}. */
export interface ValidateOptions {
  /**
   * The spider types a `spiderid` may name (the monitors pass the built-ins plus the fleet's registry,
   * lib/monitor/spider-types.ts).
   * @default any: clients (the CLI) cannot know which plugins the fleet runs, so the kafka-monitor decides
   */
  spiders?: ReadonlySet<string>;
  /**
   * The proxy groups a crawl's `attrs.proxy` may name besides {@link DIRECT_PROXY_GROUP} (the monitors pass the
   * fleet's registry, lib/monitor/proxy-groups.ts).
   * @default any: as for `spiders`, the kafka-monitor decides
   */
  proxyGroups?: ReadonlySet<string>;
}

/** What a crawl's `attrs.proxy` says to fetch directly, whatever proxies the crawlers have (docs/proxies.md). */
export const DIRECT_PROXY_GROUP = 'none';

/** Options of {@link parseRequest}. */
export interface ParseOptions extends ValidateOptions {
  /**
   * Messages longer than this many bytes are rejected as `too_large` before decoding.
   * @default MAX_REQUEST_BYTES (1 MiB)
   */
  maxBytes?: number;
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true });
const validateCrawl: ValidateFunction<CrawlRequest> = ajv.compile<CrawlRequest>(crawlSchema);
const validateAction: ValidateFunction<ActionRequest> = ajv.compile<ActionRequest>(actionSchema);
const validateStats: ValidateFunction<StatsRequest> = ajv.compile<StatsRequest>(statsSchema);
const validateDomainConfig: ValidateFunction<DomainConfigRequest> =
  ajv.compile<DomainConfigRequest>(domainConfigSchema);

const DOMAIN_ACTIONS: ReadonlySet<unknown> = new Set(domainConfigSchema.properties.action.enum);

/**
 * Decides a request's type from its shape alone, without validating it: `url` → crawl; `domain` and
 * `action`, or an `action` that only domain config has → domain; `stats` → stats; `action` info or stop
 * → action; `uuid` and `appid` with no `action` → stats (its `stats` defaults to `all`). The rules are checked in that order, so the types are mutually exclusive.
 * @returns `undefined` for a value that is not an object or matches no type.
 */
export function classifyRequest(value: unknown): RequestType | undefined {
  if (!isObject(value)) return undefined;
  if (Object.hasOwn(value, 'url')) return 'crawl';
  // A domain action without `domain` is still a domain config request, so the rejection says "/domain is required".
  if (Object.hasOwn(value, 'action') && (Object.hasOwn(value, 'domain') || DOMAIN_ACTIONS.has(value.action))) {
    return 'domain';
  }
  if (Object.hasOwn(value, 'stats')) return 'stats';
  if (value.action === 'info' || value.action === 'stop') return 'action';
  // `stats` defaults to "all": a bare {uuid, appid} asks for every stat.
  if (!Object.hasOwn(value, 'action') && Object.hasOwn(value, 'uuid') && Object.hasOwn(value, 'appid')) return 'stats';
  return undefined;
}

const UNKNOWN_TYPE_DETAILS: readonly RejectionDetail[] = [
  { path: '', message: 'a crawl request needs "url"' },
  { path: '', message: 'an action request needs "action": "info" or "stop"' },
  { path: '', message: 'a stats request needs "uuid" and "appid" (and optionally "stats")' },
  { path: '', message: 'a domain config request needs "domain" and "action"' },
];

/**
 * Classifies a decoded request, validates it against its type's schema and the checks a schema cannot
 * express (URL, regexes, domain name, spider), and returns a new object with defaults filled in; the
 * input is not modified. A bare-host `url` such as `example.com/x` gets `http://` prepended.
 * @throws SchemaValidationError with kind `schema`, `unknown_type`, `unknown_spider` or `unknown_proxy_group`.
 */
export function validateRequest(value: unknown, options: ValidateOptions = {}): ClassifiedRequest {
  throwIfAny(structureProblems(value));
  return validate(value, options, true);
}

/** `copyInput` false: the value is ours (fresh from JSON.parse) and Ajv may fill defaults in it directly. */
function validate(value: unknown, options: ValidateOptions, copyInput: boolean): ClassifiedRequest {
  if (!isObject(value)) throw new SchemaValidationError('schema', [{ path: '', message: 'must be an object' }]);
  const type = classifyRequest(value);
  if (type === undefined) throw new SchemaValidationError('unknown_type', [...UNKNOWN_TYPE_DETAILS]);
  const spiders = options.spiders;
  // Ajv fills defaults in place, so a caller's object is copied first.
  const copy = copyInput ? cloneJson(value) : value;
  switch (type) {
    case 'crawl': {
      const request = check(validateCrawl, copy);
      throwIfAny(crawlProblems(request));
      checkSpider(request.spiderid, spiders);
      checkProxyGroup(request.attrs, options.proxyGroups);
      return { type, request };
    }
    case 'action': {
      const request = check(validateAction, copy);
      checkSpider(request.spiderid, spiders, URL_FRONTIER_SPIDERID);
      return { type, request };
    }
    case 'stats':
      return { type, request: check(validateStats, copy) };
    case 'domain': {
      const request = check(validateDomainConfig, copy);
      throwIfAny(domainProblems(request));
      return { type, request };
    }
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes one message from `<p>.incoming` (UTF-8 JSON) and validates it with {@link validateRequest}.
 * @throws SchemaValidationError with kind `too_large` (over `maxBytes`), `invalid_json` (not UTF-8, or
 * not JSON), `schema` (not an object, or invalid), `unknown_type`, `unknown_spider` or `unknown_proxy_group`.
 */
export function parseRequest(raw: string | Uint8Array, options: ParseOptions = {}): ClassifiedRequest {
  const maxBytes = options.maxBytes ?? MAX_REQUEST_BYTES;
  const size = typeof raw === 'string' ? Buffer.byteLength(raw, 'utf8') : raw.byteLength;
  if (size > maxBytes) {
    throw new SchemaValidationError('too_large', [
      { path: '', message: `is ${size} bytes, more than the limit of ${maxBytes}` },
    ]);
  }
  let text: string;
  try {
    text = typeof raw === 'string' ? raw : utf8.decode(raw);
  } catch {
    throw new SchemaValidationError('invalid_json', [{ path: '', message: 'is not valid UTF-8' }]);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new SchemaValidationError('invalid_json', [{ path: '', message: (error as Error).message }]);
  }
  throwIfAny(structureProblems(value));
  // Nobody else holds the parsed value: no copy needed (a structuredClone per request showed in profiles).
  return validate(value, options, false);
}

function cloneJson(value: Record<string, unknown>): Record<string, unknown> {
  try {
    return structuredClone(value);
  } catch {
    // Only reachable from callers that hand over functions or symbols, never from parseRequest.
    throw new SchemaValidationError('schema', [{ path: '', message: 'must contain only JSON values' }]);
  }
}

function check<T>(validate: ValidateFunction<T>, data: Record<string, unknown>): T {
  if (validate(data)) return data;
  const details = (validate.errors ?? []).flatMap((error) => toDetail(error, data.action));
  throw new SchemaValidationError('schema', details);
}

function throwIfAny(details: RejectionDetail[]): void {
  if (details.length > 0) throw new SchemaValidationError('schema', details);
}

/**
 * The spider ID under which the URL Frontier API's crawls (lib/url-frontier) appear in `info`, `stop`, `stats`
 * and the dashboard. Action requests may name it; crawl requests may not (its URLs come through gRPC).
 */
export const URL_FRONTIER_SPIDERID = 'url-frontier';

function checkSpider(spiderid: string, spiders: ReadonlySet<string> | undefined, alsoAllowed?: string): void {
  if (spiders === undefined || spiders.has(spiderid) || spiderid === alsoAllowed) return;
  const known = alsoAllowed ? [...spiders, alsoAllowed] : [...spiders];
  throw new SchemaValidationError('unknown_spider', [
    {
      path: '/spiderid',
      message: `must be a spider type this cluster runs (${known.join(', ')}), not ${JSON.stringify(spiderid)}; a type is known once a crawler serving it has started (with none running, this request starts one: send it again in a few minutes)`,
    },
  ]);
}

/** A crawl's `attrs.proxy`, when it has one, names {@link DIRECT_PROXY_GROUP} or one of `groups`. */
function checkProxyGroup(attrs: Record<string, unknown> | undefined, groups: ReadonlySet<string> | undefined): void {
  const group = attrs?.proxy;
  if (groups === undefined || group === undefined || group === DIRECT_PROXY_GROUP) return;
  if (typeof group === 'string' && groups.has(group)) return;
  const known = groups.size > 0 ? `one of ${[...groups].join(', ')} or` : 'no group is registered, only';
  throw new SchemaValidationError('unknown_proxy_group', [
    {
      path: '/attrs/proxy',
      message: `must name a proxy group of this cluster's crawlers (CRAWLER_PROXY_GROUPS: ${known} "${DIRECT_PROXY_GROUP}" for direct), not ${JSON.stringify(group)?.slice(0, 100)}; a group is known once a crawler that has it has started (with none running, this request starts one: send it again in a few minutes)`,
    },
  ]);
}

/** Readable messages for the schemas' patterns; Ajv's own message would print the regex. */
const PATTERN_MESSAGES: ReadonlyMap<string, string> = new Map([
  [crawlSchema.properties.cookie.pattern, 'must not contain control characters'],
  [crawlSchema.properties.headers.propertyNames.pattern, "must be an HTTP token (letters, digits, !#$%&'*+-.^_`|~)"],
]);

/** One Ajv error as zero or one rejection details: paths name the field, messages say what to change. */
function toDetail(error: ErrorObject, action: unknown): RejectionDetail[] {
  const params = error.params as Record<string, unknown>;
  let path = error.instancePath;
  let message = error.message ?? 'is invalid';
  switch (error.keyword) {
    // Summaries of errors that are reported on their own.
    case 'if':
    case 'propertyNames':
      return [];
    case 'additionalProperties':
      path += pointerSegment(String(params.additionalProperty));
      message = 'is not an allowed field';
      break;
    case 'required':
      path += pointerSegment(String(params.missingProperty));
      message = 'is required';
      break;
    case 'enum':
      message = `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
      break;
    case 'pattern':
      message = PATTERN_MESSAGES.get(String(params.pattern)) ?? message;
      break;
  }
  if (error.propertyName !== undefined) {
    path += pointerSegment(error.propertyName);
    message = `name ${message}`;
  }
  // Both schemas' conditionals (stop needs crawlid, domain-update needs hits and window) test `action`.
  if (error.schemaPath.startsWith('#/then/')) message += ` when action is ${JSON.stringify(action)}`;
  return [{ path, message }];
}

/** The longest URL the cluster queues: a seed's (validated here) and a child's (lib/crawl/crawler/crawler.ts). */
export const MAX_URL_LENGTH = 2048;
const HAS_SCHEME = /^[a-z][a-z0-9+.-]*:/i;
// `localhost:8080/x` looks like a scheme to HAS_SCHEME but is a host and port.
const HOST_AND_PORT = /^[^/?#:@]+:\d+(?:[/?#]|$)/;

function withScheme(url: string): string {
  if (url.startsWith('//')) return `http:${url}`;
  if (HAS_SCHEME.test(url) && !HOST_AND_PORT.test(url)) return url;
  return `http://${url}`;
}

function crawlProblems(request: CrawlRequest): RejectionDetail[] {
  const details: RejectionDetail[] = [];
  request.url = withScheme(request.url);
  const urlProblem = seedUrlProblem(request.url);
  if (urlProblem !== undefined) details.push({ path: '/url', message: urlProblem });
  for (const field of ['allow_regex', 'deny_regex'] as const) {
    request[field]?.forEach((source, index) => {
      try {
        compileLinkRegex(source);
      } catch (error) {
        details.push({
          path: `/${field}/${index}`,
          message: `must be a valid RE2 regular expression (matched in linear time, so no lookaround or backreferences): ${(error as Error).message}`,
        });
      }
    });
  }
  return details;
}

function seedUrlProblem(url: string): string | undefined {
  // Checked after the prefix: the URL the crawler fetches is what must fit.
  if (url.length > MAX_URL_LENGTH) return `must NOT have more than ${MAX_URL_LENGTH} characters`;
  // WHATWG parsing refuses http(s) URLs without a host, so a parsed http(s) URL always has one.
  const parsed = URL.parse(url);
  if (parsed === null) return `must be an absolute http(s) URL, got ${JSON.stringify(url)}`;
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return `must be an http or https URL, not ${parsed.protocol}`;
  }
  return undefined;
}

// After normalization: dot-separated labels of letters, digits, underscores and inner hyphens (one label is a host
// too: `localhost`, an intranet name), or an IP address.
const HOST_NAME =
  /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

// The URL parser would quietly cut `ebay.com/x` to `ebay.com` and decode `%41`, so those are refused first. `:` and
// brackets are for IPv6 (`::1`, `[::1]`) and a port, which throttle keys ignore.
const DOMAIN_CHARACTERS = /^[\p{L}\p{M}\p{N}.:[\]_-]+$/u;

/**
 * The host a domain config request names, as a URL's host name is normalized (the crawler's throttle keys start from
 * it, lib/crawl/extract/url.ts): lower-cased, punycode, IPv4 in dotted decimal, IPv6 without brackets, no trailing dot, no
 * port. Any host is one, as in Scrapy Cluster: `ebay.com`, `127.0.0.1`, `::1`, `localhost`, an intranet name.
 * Undefined when it is not a host at all. (The redis-monitor then keys it by registrable domain, as the crawler.)
 */
function domainConfigHost(value: string): string | undefined {
  if (!DOMAIN_CHARACTERS.test(value)) return undefined;
  // A bare IPv6 address (two colons or more) goes in brackets, as in a URL.
  const authority = !value.startsWith('[') && value.indexOf(':') !== value.lastIndexOf(':') ? `[${value}]` : value;
  let host: string;
  try {
    host = new URL(`http://${authority}/`).hostname;
  } catch {
    return undefined;
  }
  if (host.startsWith('[')) host = host.slice(1, -1);
  else if (host.endsWith('.')) host = host.slice(0, -1);
  return isIP(host) !== 0 || HOST_NAME.test(host) ? host : undefined;
}

function domainProblems(request: DomainConfigRequest): RejectionDetail[] {
  const domain = domainConfigHost(request.domain);
  if (domain === undefined) {
    return [
      {
        path: '/domain',
        message: `must be a host such as ebay.com, 127.0.0.1 or intranet, not ${JSON.stringify(request.domain)}`,
      },
    ];
  }
  request.domain = domain;
  return [];
}
