// @ts-check
/**
 * The dashboard's script: plain browser JavaScript, typed with JSDoc and checked by tsc against the DOM
 * (./tsconfig.json) and by Biome. lib/rest/dashboard-page.ts puts this file, byte for byte, in the page's
 * `<script type="module">` (the Content-Security-Policy allows it by its hash), so there is no build step and
 * nothing here may contain a closing script tag or an HTML comment opener.
 *
 * It renders with DOM calls and `textContent` only (never HTML strings), polls `ui/api/overview` every 2 s
 * (paused while the tab is hidden), and talks to `feed` / `poll` like any client. URLs are relative to the
 * page's own path, so it works behind an API Gateway stage (`/prod/ui`).
 *
 * @import { DashboardCrawl, DashboardFleet, DashboardOverview, DashboardQueues, DashboardThroughput } from '../dashboard-api.ts'
 */

/** The API's root: the page's path without `/ui` (a stage name stays in front). */
const BASE = location.pathname.replace(/\/ui\/?$/, '');
const REFRESH_MS = 2000;
const HEALTH_MS = 10000;
/** The span of the throughput chart. */
const CHART_MS = 5 * 60 * 1000;
const APP_KEY = 'crawl-cluster.dashboard.appid';
const SVG_NS = 'http://www.w3.org/2000/svg';
/** The crawl table's columns, in order. */
const FIELDS = /** @type {const} */ (['crawl', 'state', 'progress', 'done', 'failed', 'pending', 'domains', 'action']);
/** @typedef {typeof FIELDS[number]} Field */
/** The columns of counts, right-aligned. */
const NUMERIC = new Set(['done', 'failed', 'pending', 'domains']);

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
 * @typedef {{ node_health?: string, kafka_connected?: boolean, redis_connected?: boolean }} Health
 */

/**
 * A stop asked for from this page: under way (`busy`), done (`ok`) or failed, and what to say about it.
 * @typedef {{ busy?: boolean, ok: boolean | null, text: string }} StopState
 */

/**
 * A crawl the page knows of, with its table row. `row` is its line of the last answer that listed it (null
 * until one does: submitted from here, not queued yet); `gone` is set once an answer no longer lists it.
 * @typedef {object} Entry
 * @property {string} spiderid
 * @property {string} crawlid
 * @property {DashboardCrawl | null} row
 * @property {boolean} seen
 * @property {boolean} gone
 * @property {StopState | null} stop
 * @property {number} confirmUntil the Stop button asks for confirmation until then (epoch ms)
 * @property {number} pct the last progress shown, kept once the crawl is gone
 * @property {Record<Field, HTMLTableCellElement>} cells
 * @property {HTMLSpanElement} bar
 * @property {HTMLDivElement} barBox
 * @property {HTMLDivElement} percent
 * @property {HTMLSpanElement} badge
 * @property {HTMLButtonElement} button
 * @property {HTMLDivElement} stopResult
 * @property {HTMLTableRowElement} tr
 */

/** @typedef {{ t: number, total: number }} Sample */
/** @typedef {{ t: number, rate: number }} RatePoint */

let appid = initialAppid();
/** Every crawl seen since the page loaded, by {@link keyOf}: the page keeps showing crawls that left the frontier. */
const known = /** @type {Map<string, Entry>} */ (new Map());
/** The lifetime page count at each refresh (server clock): the counters keep no time series. */
let samples = /** @type {Sample[]} */ ([]);
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
 * The element with this id, of this type; the page's HTML has them all, so a missing one is a bug.
 * @template {Element} T
 * @param {string} id
 * @param {{ new (): T, prototype: T }} type
 * @returns {T}
 */
function byId(id, type) {
  const node = document.getElementById(id);
  if (!(node instanceof type)) throw new Error(`the page has no ${type.name} #${id}`);
  return node;
}

/** @param {string} id */
const $ = (id) => byId(id, HTMLElement);
/** @param {string} id */
const input = (id) => byId(id, HTMLInputElement);

/**
 * @typedef {object} ElProps
 * @property {string} [class]
 * @property {string | number} [text]
 * @property {Record<string, string | number>} [attrs]
 * @property {Record<string, EventListener>} [on]
 */

/**
 * An element with its class, text, attributes, listeners and children (strings become text nodes).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {ElProps} [props]
 * @param {(Node | string)[]} [children]
 * @returns {HTMLElementTagNameMap[K]}
 */
function el(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  if (props.class) node.className = props.class;
  if (props.text !== undefined) node.textContent = String(props.text);
  for (const [name, value] of Object.entries(props.attrs ?? {})) node.setAttribute(name, String(value));
  for (const [type, listener] of Object.entries(props.on ?? {})) node.addEventListener(type, listener);
  for (const child of children) node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  return node;
}

/**
 * An SVG element of the chart.
 * @param {string} tag
 * @param {Record<string, string | number>} attrs
 * @param {string} [text]
 */
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** @param {Node} node */
function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

/** @param {number} n */
const fmt = (n) => n.toLocaleString('en-US');
/** @param {number} ms */
const time = (ms) => new Date(ms).toLocaleTimeString();
/** @param {string} prefix */
const randomId = (prefix) => `${prefix}${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
/**
 * @param {string} spiderid
 * @param {string} crawlid
 */
const keyOf = (spiderid, crawlid) => `${spiderid}\n${crawlid}`;
/** @param {number} n */
const plural = (n) => (n === 1 ? '' : 's');
/** @param {unknown} error */
const messageOf = (error) => (error instanceof Error ? error.message : String(error));

/**
 * The `i`th item of a list the caller knows is that long.
 * @template T
 * @param {readonly T[]} list
 * @param {number} i
 * @returns {T}
 */
function item(list, i) {
  if (i < 0 || i >= list.length) throw new RangeError(`no item ${i} of ${list.length}`);
  return /** @type {T} */ (list[i]);
}

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

/* ---- crawls ---- */

/**
 * The entry of a crawl, made (with its table row, not yet attached) on first sight.
 * @param {string} spiderid
 * @param {string} crawlid
 * @returns {Entry}
 */
function entryFor(spiderid, crawlid) {
  const key = keyOf(spiderid, crawlid);
  const existing = known.get(key);
  if (existing) return existing;
  const cells = /** @type {Record<Field, HTMLTableCellElement>} */ (
    Object.fromEntries(
      FIELDS.map((f) => [f, el('td', { class: NUMERIC.has(f) ? 'num' : undefined, attrs: { 'data-field': f } })]),
    )
  );
  cells.crawl.appendChild(el('div', { text: crawlid }));
  cells.crawl.appendChild(el('div', { class: 'muted small', text: spiderid }));
  const bar = el('span');
  const barBox = el('div', { class: 'bar', attrs: { role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': 100 } }, [
    bar,
  ]);
  const percent = el('div', { class: 'muted small' });
  cells.progress.appendChild(barBox);
  cells.progress.appendChild(percent);
  const badge = el('span', { class: 'badge' });
  cells.state.appendChild(badge);
  const button = el('button', {
    class: 'danger',
    text: 'Stop',
    attrs: { type: 'button', 'data-action': 'stop' },
    on: { click: () => onStop(entry) },
  });
  const stopResult = el('div', { class: 'small', attrs: { 'data-field': 'stop-result', role: 'status' } });
  cells.action.appendChild(button);
  cells.action.appendChild(stopResult);
  const tr = el(
    'tr',
    { attrs: { 'data-crawlid': crawlid, 'data-spiderid': spiderid } },
    FIELDS.map((f) => cells[f]),
  );
  /** @type {Entry} */
  const entry = {
    spiderid,
    crawlid,
    row: null,
    seen: false,
    gone: false,
    stop: null,
    confirmUntil: 0,
    pct: 0,
    cells,
    bar,
    barBox,
    percent,
    badge,
    button,
    stopResult,
    tr,
  };
  known.set(key, entry);
  return entry;
}

/**
 * The state shown: the frontier's (`running`, `complete`), or what the page knows beyond it: `stopped` (by
 * this page, nothing left pending), `ended` (no longer listed), `submitted` (not listed yet).
 * @param {Entry} entry
 */
function stateOf(entry) {
  if (entry.stop?.ok && (entry.gone || !entry.row || entry.row.pending === 0)) return 'stopped';
  if (entry.gone) return 'ended';
  if (!entry.row) return 'submitted';
  return entry.row.state;
}

/**
 * Brings a crawl's row up to date with its entry.
 * @param {Entry} entry
 */
function paint(entry) {
  const r = entry.row;
  const state = stateOf(entry);
  const live = r && !entry.gone ? r : null;
  const pending = live ? live.pending : entry.seen ? 0 : null;
  entry.tr.setAttribute('data-state', state);
  entry.badge.className = `badge ${state}`;
  entry.badge.textContent = state;
  entry.badge.title =
    state === 'ended'
      ? 'no longer in the frontier: stopped elsewhere, expired, or swept after completing'
      : state === 'submitted'
        ? 'sent; waiting for the kafka-monitor to queue it'
        : '';
  entry.cells.done.textContent = r ? fmt(r.done) : '–';
  entry.cells.failed.textContent = r ? fmt(r.failed) : '–';
  entry.cells.pending.textContent = pending === null ? '–' : fmt(pending);
  entry.cells.pending.title = live ? `${live.queued} queued, ${live.leased} being fetched` : '';
  entry.cells.domains.textContent = live ? fmt(live.domains) : '–';
  const finished = r ? r.done + r.failed : 0;
  const total = finished + (pending || 0);
  if (live) entry.pct = total > 0 ? Math.round((finished / total) * 100) : state === 'complete' ? 100 : 0;
  const pct = entry.pct;
  entry.bar.style.width = `${pct}%`;
  entry.barBox.className = `bar ${state}`;
  entry.barBox.setAttribute('aria-valuenow', String(pct));
  entry.percent.textContent = !r
    ? ''
    : entry.gone
      ? `${state} after ${fmt(finished)} page${plural(finished)}`
      : `${pct}% of ${fmt(total)}`;
  const stoppable = (state === 'running' || state === 'submitted') && !(entry.stop?.busy || entry.stop?.ok);
  entry.button.hidden = !stoppable;
  const confirming = entry.confirmUntil > Date.now();
  entry.button.textContent = confirming ? 'Confirm stop' : 'Stop';
  entry.button.className = confirming ? 'danger confirm' : 'danger';
  entry.button.disabled = !!entry.stop?.busy;
  entry.stopResult.textContent = entry.stop ? entry.stop.text : '';
  entry.stopResult.className = `small ${entry.stop?.ok === false ? 'error' : entry.stop?.ok ? 'okmsg' : 'muted'}`;
}

/**
 * Takes the crawls of an answer; crawls seen before and no longer listed are marked gone.
 * @param {DashboardOverview} o
 */
function renderCrawls(o) {
  const present = new Set();
  for (const row of o.crawls) {
    const entry = entryFor(row.spiderid, row.crawlid);
    entry.row = row;
    entry.seen = true;
    entry.gone = false;
    present.add(keyOf(row.spiderid, row.crawlid));
  }
  for (const [key, entry] of known) {
    if (!present.has(key) && entry.seen) entry.gone = true;
  }
  layout();
  $('crawls-more').textContent =
    o.crawls_total > o.crawls.length ? `showing ${o.crawls.length} of ${fmt(o.crawls_total)} crawls` : '';
}

/** Paints every known crawl, running and submitted ones first. */
function layout() {
  /** @param {Entry} e */
  const rank = (e) => (stateOf(e) === 'running' || stateOf(e) === 'submitted' ? 0 : 1);
  const order = [...known.values()].sort(
    (a, b) => rank(a) - rank(b) || (a.crawlid < b.crawlid ? -1 : a.crawlid > b.crawlid ? 1 : 0),
  );
  const body = $('crawl-rows');
  for (const entry of order) {
    paint(entry);
    body.appendChild(entry.tr);
  }
  $('crawls-empty').hidden = known.size > 0;
}

/**
 * The Stop button: the first click asks for confirmation (for 5 s), the second stops the crawl.
 * @param {Entry} entry
 */
function onStop(entry) {
  if (entry.confirmUntil > Date.now()) {
    entry.confirmUntil = 0;
    stopCrawl(entry);
  } else {
    entry.confirmUntil = Date.now() + 5000;
    setTimeout(() => paint(entry), 5100);
  }
  paint(entry);
}

/** @param {{ total_purged: number }} data */
function stopReplyText(data) {
  const n = data.total_purged;
  return `stopped: ${fmt(n)} pending request${plural(n)} purged`;
}

/**
 * Sends a stop of the crawl through `POST /feed` and shows the reply, polling for it when the feed answered
 * before the redis-monitor did.
 * @param {Entry} entry
 */
async function stopCrawl(entry) {
  const uuid = randomId('ui-stop-');
  entry.stop = { busy: true, ok: null, text: 'stopping…' };
  paint(entry);
  try {
    /** @type {Reply<Envelope<StopReply>>} */
    const r = await call('POST', '/feed', {
      action: 'stop',
      appid,
      crawlid: entry.crawlid,
      spiderid: entry.spiderid,
      uuid,
    });
    const data = r.json?.data;
    if (r.status === 200 && data && typeof data.total_purged === 'number') {
      entry.stop = { ok: true, text: stopReplyText({ total_purged: data.total_purged }) };
    } else if (r.status === 200 && data?.poll_id) {
      entry.stop = { busy: true, ok: null, text: 'stop sent; waiting for the reply…' };
      paint(entry);
      entry.stop = await pollStop(data.poll_id);
    } else {
      entry.stop = { ok: false, text: `stop failed: ${errorText(r.json, r.status)}` };
    }
  } catch (e) {
    entry.stop = { ok: false, text: `stop failed: ${messageOf(e)}` };
  }
  paint(entry);
  schedule(0);
}

/**
 * Polls for a stop's reply once a second, for up to a minute (404 = not there yet).
 * @param {string} pollId
 * @returns {Promise<StopState>}
 */
async function pollStop(pollId) {
  for (let i = 0; i < 60; i++) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    /** @type {Reply<Envelope<{ total_purged: number }>>} */
    const r = await call('POST', '/poll', { poll_id: pollId });
    if (r.status === 200 && r.json?.data) return { ok: true, text: stopReplyText(r.json.data) };
    if (r.status !== 404) return { ok: false, text: `stop failed: ${errorText(r.json, r.status)}` };
  }
  return { ok: false, text: `no reply to the stop within a minute (poll id ${pollId})` };
}

/* ---- queues, fleet, throughput ---- */

/** @param {DashboardQueues} q */
function renderQueues(q) {
  const body = $('queue-rows');
  clear(body);
  const max = q.top.reduce((m, d) => Math.max(m, d.backlog), 1);
  for (const d of q.top) {
    const bar = el('span');
    bar.style.width = `${Math.max(2, Math.round((d.backlog / max) * 100))}%`;
    body.appendChild(
      el('tr', { attrs: { 'data-domain': d.domain } }, [
        el('td', { text: d.domain }),
        el('td', { class: 'muted', text: d.spiderid }),
        el('td', { class: 'num', text: fmt(d.backlog) }),
        el('td', {}, [el('div', { class: 'bar' }, [bar])]),
      ]),
    );
  }
  $('queues-empty').hidden = q.top.length > 0;
  $('queues-total').textContent =
    `${fmt(q.total_backlog)} queued over ${fmt(q.num_domains)} domain${plural(q.num_domains)}`;
}

/** @param {DashboardFleet} f */
function renderFleet(f) {
  const list = $('fleet-crawlers');
  clear(list);
  // One heartbeat per spider type a process serves: one line per process.
  /** @type {Map<string, { node: string, spiders: string[], beating: boolean }>} */
  const byNode = new Map();
  for (const c of f.crawlers) {
    const n = byNode.get(c.node) ?? { node: c.node, spiders: [], beating: false };
    n.spiders.push(c.spiderid);
    n.beating = n.beating || c.beating;
    byNode.set(c.node, n);
  }
  let beating = 0;
  for (const n of byNode.values()) {
    if (n.beating) beating++;
    list.appendChild(
      el('li', { attrs: { 'data-node': n.node } }, [
        el('span', {
          class: n.beating ? 'dot on' : 'dot',
          attrs: { title: n.beating ? 'beat in the last 30 s' : 'silent for over 30 s' },
        }),
        `${n.node} `,
        el('span', { class: 'muted small', text: n.spiders.join(', ') }),
      ]),
    );
  }
  $('fleet-count').textContent = `${byNode.size} crawler${plural(byNode.size)}, ${beating} beating`;
  $('fleet-empty').hidden = byNode.size > 0;
  const nodes = $('fleet-nodes');
  clear(nodes);
  for (const [kind, ids] of Object.entries(f.nodes)) {
    nodes.appendChild(
      el('li', { attrs: { title: ids.join('\n') } }, [
        el('span', { class: ids.length > 0 ? 'dot on' : 'dot' }),
        `${kind}: ${ids.length}`,
      ]),
    );
  }
}

/**
 * Records the lifetime total at `now` and shows pages per minute: the rate now, the chart, the counters.
 * @param {DashboardThroughput} t
 * @param {number} now the server's clock
 */
function renderThroughput(t, now) {
  const last = samples.at(-1);
  // A counter reset (a new Redis) or a clock step back makes the old samples meaningless.
  if (last && (t.pages_total < last.total || now <= last.t)) samples = [];
  samples.push({ t: now, total: t.pages_total });
  while (samples.length > 2 && now - item(samples, 0).t > CHART_MS + 30000) samples.shift();
  /** @type {RatePoint[]} */
  const points = [];
  samples.forEach((s, i) => {
    if (i === 0) return;
    // Over at least 10 s where there are samples that old: a rate over one 2 s refresh jitters.
    let j = i - 1;
    while (j > 0 && s.t - item(samples, j).t < 10000) j--;
    const base = item(samples, j);
    const dt = s.t - base.t;
    if (dt > 0) points.push({ t: s.t, rate: ((s.total - base.total) / dt) * 60000 });
  });
  const current = points.at(-1)?.rate ?? null;
  $('rate-now').textContent = current === null ? 'measuring…' : `${fmt(Math.round(current))} pages/min now`;
  $('rate-totals').textContent =
    `last 15 min: ${fmt(t.pages_15m)} pages (${fmt(t.ok_15m)} ok) · last hour: ${fmt(t.pages_1h)} · ` +
    `lifetime: ${fmt(t.pages_total)}`;
  drawChart(points, now);
  const statuses = $('statuses');
  clear(statuses);
  for (const s of t.by_status) {
    statuses.appendChild(
      el('span', { class: 'badge', attrs: { title: `${fmt(s.last_15m)} in the last 15 min` } }, [
        `${s.status}: ${fmt(s.total)}`,
      ]),
    );
    statuses.appendChild(document.createTextNode(' '));
  }
}

/**
 * The pages-per-minute chart of the last {@link CHART_MS}, on a scale rounded up to one significant digit.
 * @param {RatePoint[]} points
 * @param {number} now
 */
function drawChart(points, now) {
  const chart = byId('chart', SVGSVGElement);
  clear(chart);
  // The viewBox (600 × 150) and the margins left for the labels: left, bottom, top.
  const W = 600;
  const H = 150;
  const L = 40;
  const B = 18;
  const T = 8;
  const max = points.reduce((m, p) => Math.max(m, p.rate), 0);
  const magnitude = 10 ** Math.floor(Math.log10(max));
  const top = max <= 10 ? 10 : magnitude * Math.ceil(max / magnitude);
  /** @param {number} t */
  const x = (t) => L + ((t - (now - CHART_MS)) / CHART_MS) * (W - L - 4);
  /** @param {number} v */
  const y = (v) => T + (1 - v / top) * (H - T - B);
  for (const f of [0, 0.5, 1]) {
    chart.appendChild(svg('line', { class: 'grid', x1: L, x2: W - 4, y1: y(top * f), y2: y(top * f) }));
    chart.appendChild(svg('text', { x: L - 4, y: y(top * f) + 4, 'text-anchor': 'end' }, fmt(Math.round(top * f))));
  }
  chart.appendChild(svg('text', { x: L, y: H - 4 }, '5 min ago'));
  chart.appendChild(svg('text', { x: W - 4, y: H - 4, 'text-anchor': 'end' }, 'now'));
  const visible = points.filter((p) => p.t >= now - CHART_MS);
  const [first] = visible;
  if (!first) return;
  const xy = visible.map((p) => ({ px: x(p.t), py: y(p.rate) }));
  // One point alone draws no line: start a short flat segment 2 s before it.
  if (visible.length === 1) xy.unshift({ px: x(first.t - 2000), py: y(first.rate) });
  const coords = xy.map((c) => `${c.px.toFixed(1)},${c.py.toFixed(1)}`);
  const left = item(xy, 0).px.toFixed(1);
  const right = item(xy, xy.length - 1).px.toFixed(1);
  chart.appendChild(svg('polygon', { class: 'area', points: `${left},${y(0)} ${coords.join(' ')} ${right},${y(0)}` }));
  chart.appendChild(svg('polyline', { class: 'line', points: coords.join(' ') }));
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
    badge.title = `Kafka ${h.kafka_connected ? 'connected' : 'down'}, Redis ${h.redis_connected ? 'connected' : 'down'}`;
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
