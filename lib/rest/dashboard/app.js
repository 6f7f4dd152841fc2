// @ts-check
/**
 * The dashboard's main script: it watches an app (`?appid=`, else the last one watched), runs the refresh loop and
 * the health badge, and handles the two forms.
 *
 * The page's scripts are plain browser JavaScript, typed with JSDoc and checked by tsc against the DOM
 * (./tsconfig.json) and by Biome, no build step. They are classic scripts that share one global scope, run in this
 * order, app.js last:
 * - dom.js: elements by id, element and SVG builders, number and time formats;
 * - api.js: the request to the API, the answers' envelope and error text, the endpoints' answer types;
 * - crawls.js: the crawl table and the Stop button;
 * - panels.js: queues by domain, the fleet, throughput and its chart;
 * - app.js: this one.
 * lib/rest/dashboard-page.ts puts each file, byte for byte, in a `<script>` of the page in place of the tag of
 * index.html that names it (the Content-Security-Policy allows each by its hash), so nothing in them may contain a
 * closing script tag or an HTML comment opener. Inline, they could not be modules: an inline module cannot be
 * imported by another. Each starts with `'use strict'`, as a module would run.
 *
 * They render with DOM calls and `textContent` only (never HTML strings), poll `ui/api/overview` every 2 s
 * (paused while the tab is hidden), and talk to `feed` / `poll` like any client. URLs are relative to the
 * page's own path, so the page works behind an API Gateway stage (`/prod/ui`).
 */
'use strict';

const REFRESH_MS = 2000;
const HEALTH_MS = 10000;
const APP_KEY = 'crawl-cluster.dashboard.appid';

let appid = initialAppid();
let timer = 0;

/** `?appid=` of the page URL, else the app last watched (localStorage), else `dashboard`. */
function initialAppid() {
  const fromUrl = new URLSearchParams(location.search).get('appid');
  if (fromUrl) return fromUrl;
  try {
    return localStorage.getItem(APP_KEY) || 'dashboard';
  } catch {
    // Storage may be denied (private mode, blocked cookies).
    return 'dashboard';
  }
}

/**
 * Watches another app: its crawls replace the table, and it is remembered for the next visit.
 * @param {string} next
 */
function setAppid(next) {
  if (next === appid) return;
  appid = next;
  known.clear();
  clear($('crawl-rows'));
  try {
    localStorage.setItem(APP_KEY, appid);
  } catch {
    // Storage may be denied (private mode): the app is just not remembered.
  }
  input('watch-appid').value = appid;
  $('crawls-app').textContent = appid;
}

/* ---- refresh loop ---- */

/** Reads the overview of the watched app and shows it; a failure shows the banner until the next success. */
async function refresh() {
  if (document.visibilityState === 'hidden') return;
  try {
    /** @type {Reply<Envelope<DashboardOverview>>} */
    const r = await call('GET', `/ui/api/overview?appid=${encodeURIComponent(appid)}&top=10`);
    const o = r.json?.data;
    if (r.status !== 200 || r.json?.status !== 'SUCCESS' || !o) throw new Error(errorText(r.json, r.status));
    // Another app was picked while this answer was on its way.
    if (o.appid !== appid) return;
    renderCrawls(o);
    renderQueues(o.queues);
    renderFleet(o.fleet);
    renderThroughput(o.throughput, o.server_time_ms);
    $('updated').textContent = `updated ${time(o.server_time_ms)}`;
    $('banner').className = '';
  } catch (e) {
    $('banner').textContent = `Cannot read the cluster state: ${messageOf(e)} (retrying every ${REFRESH_MS / 1000} s)`;
    $('banner').className = 'show';
  }
}

/**
 * The next refresh in `ms`, replacing any already planned; each refresh plans the one after it.
 * @param {number} ms
 */
function schedule(ms) {
  clearTimeout(timer);
  timer = setTimeout(() => {
    refresh().finally(() => schedule(REFRESH_MS));
  }, ms);
}

/** Shows the node's health (`GET /`) in the header badge. */
async function health() {
  const badge = $('health');
  try {
    /** @type {Reply<Health>} */
    const r = await call('GET', '/');
    const h = r.json ?? {};
    badge.textContent = h.node_health || 'unknown';
    badge.className = `badge ${h.node_health || ''}`;
    // The reason (e.g. frontier state lost, until acknowledged with `crawl-cluster ack-lost`) when not GREEN.
    badge.title =
      h.reason ||
      `Kafka ${h.kafka_connected ? 'connected' : 'down'}, Redis ${h.redis_connected ? 'connected' : 'down'}`;
  } catch {
    badge.textContent = 'unreachable';
    badge.className = 'badge RED';
  }
}

/* ---- forms ---- */

$('watch').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const field = input('watch-appid');
  const next = field.value.trim();
  if (next.length < 3 || next.length > 40) {
    field.setCustomValidity('an appid is 3 to 40 characters');
    field.reportValidity();
    return;
  }
  field.setCustomValidity('');
  setAppid(next);
  schedule(0);
});

$('feed').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const result = $('feed-result');
  const button = byId('feed-submit', HTMLButtonElement);
  const crawlid = input('feed-crawlid').value.trim() || randomId('ui-');
  const target = input('feed-appid').value.trim();
  const request = {
    url: input('feed-url').value.trim(),
    appid: target,
    crawlid,
    maxdepth: Number(byId('feed-depth', HTMLSelectElement).value),
  };
  button.disabled = true;
  result.className = 'small muted';
  result.textContent = 'submitting…';
  try {
    const r = await call('POST', '/feed', request);
    if (r.status === 200 && r.json?.status === 'SUCCESS') {
      result.className = 'small okmsg';
      result.textContent = `crawl ${crawlid} submitted to app ${target}`;
      setAppid(target);
      // Listed as submitted until the kafka-monitor has queued it and an answer lists it.
      entryFor('link', crawlid).stop = null;
      input('feed-crawlid').value = '';
      layout();
      schedule(300);
    } else {
      result.className = 'small error';
      result.textContent = `rejected: ${errorText(r.json, r.status)}`;
    }
  } catch (e) {
    result.className = 'small error';
    result.textContent = `could not submit: ${messageOf(e)}`;
  }
  button.disabled = false;
});

input('watch-appid').value = appid;
input('feed-appid').value = appid;
$('crawls-app').textContent = appid;
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') schedule(0);
});
health();
setInterval(health, HEALTH_MS);
schedule(0);
