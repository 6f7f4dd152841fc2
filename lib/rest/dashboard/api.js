// @ts-check
/**
 * The page's calls to the API: the request, the answers' envelope and error text, and the endpoints' answer types
 * (lib/rest/dashboard-api.ts, shared with the server).
 *
 * One of the dashboard page's scripts, run in this order as classic scripts that share one global scope (the page
 * lists them; lib/rest/dashboard-page.ts inlines each, byte for byte): dom.js, api.js, crawls.js, panels.js, app.js.
 *
 * @typedef {import('../dashboard-api.ts').DashboardCrawl} DashboardCrawl
 * @typedef {import('../dashboard-api.ts').DashboardFleet} DashboardFleet
 * @typedef {import('../dashboard-api.ts').DashboardOverview} DashboardOverview
 * @typedef {import('../dashboard-api.ts').DashboardQueues} DashboardQueues
 * @typedef {import('../dashboard-api.ts').DashboardThroughput} DashboardThroughput
 */
'use strict';

/** The API's root: the page's path without `/ui` (a stage name stays in front). */
const BASE = location.pathname.replace(/\/ui\/?$/, '');

/**
 * What an answer's envelope says when it is a failure (lib/rest/envelope.ts).
 * @typedef {object} ApiError
 * @property {string} [message]
 * @property {string} [cause]
 * @property {{ path?: string, message: string }[]} [details]
 */

/**
 * The envelope of the API's answers (lib/rest/envelope.ts), with `data` as the route documents it.
 * @template [T=unknown]
 * @typedef {{ status?: string, error?: ApiError | null, data?: T }} Envelope
 */

/**
 * An answer of the API: its status and its JSON (null when the body is not JSON). The JSON is the server's
 * word: `J` is what the route documents, not something checked here.
 * @template [J=Envelope]
 * @typedef {{ status: number, json: J | null }} Reply
 */

/**
 * What `POST /feed` answers to a stop: the purge count when the reply came in time, else a `poll_id`.
 * @typedef {{ total_purged?: number, poll_id?: string }} StopReply
 */

/**
 * The fields of `GET /` (the health report) the page shows.
 * @typedef {{ node_health?: string, kafka_connected?: boolean, redis_connected?: boolean, reason?: string }} Health
 */

/** @param {string} prefix */
const randomId = (prefix) => `${prefix}${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
/** @param {unknown} error */
const messageOf = (error) => (error instanceof Error ? error.message : String(error));

/**
 * One request to the API, relative to {@link BASE}; never cached.
 * @template [J=Envelope]
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body] sent as JSON
 * @returns {Promise<Reply<J>>}
 */
async function call(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json' };
  /** @type {RequestInit} */
  const init = { method, cache: 'no-store', headers };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(BASE + path, init);
  let json = null;
  try {
    json = await response.json();
  } catch {
    json = null;
  }
  return { status: response.status, json };
}

/**
 * What went wrong, from a failure's envelope: its message and the invalid fields (or the cause).
 * @param {Reply['json']} json
 * @param {number} status
 */
function errorText(json, status) {
  const e = json?.error;
  if (!e) return `HTTP ${status}`;
  let text = e.message || `HTTP ${status}`;
  if (Array.isArray(e.details) && e.details.length > 0) {
    text += ` ${e.details.map((d) => `${d.path || '(body)'} ${d.message}`).join('; ')}`;
  } else if (e.cause) {
    text += ` (${e.cause})`;
  }
  return text;
}
