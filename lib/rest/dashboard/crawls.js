// @ts-check
/**
 * The crawl table: a row per crawl the page has seen (kept after the crawl leaves the frontier), its state and
 * progress, and the Stop button, which stops the crawl through `POST /feed` and polls for the reply.
 *
 * One of the dashboard page's scripts, run in this order as classic scripts that share one global scope (the page
 * lists them; lib/rest/dashboard-page.ts inlines each, byte for byte): dom.js, api.js, crawls.js, panels.js, app.js.
 */
'use strict';

/** The crawl table's columns, in order. */
const FIELDS = /** @type {const} */ (['crawl', 'state', 'progress', 'done', 'failed', 'pending', 'domains', 'action']);
/** @typedef {typeof FIELDS[number]} Field */
/** The columns of counts, right-aligned. */
const NUMERIC = new Set(['done', 'failed', 'pending', 'domains']);

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
 * @property {HTMLTableRowElement} failTr the row under it that lists the latest failed pages and why
 * @property {HTMLUListElement} failList
 */

/** Every crawl seen since the page loaded, by {@link keyOf}: the page keeps showing crawls that left the frontier. */
const known = /** @type {Map<string, Entry>} */ (new Map());
/**
 * @param {string} spiderid
 * @param {string} crawlid
 */
const keyOf = (spiderid, crawlid) => `${spiderid}\n${crawlid}`;

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
  const failList = el('ul', { class: 'small error' });
  const failTr = el('tr', { class: 'failures', attrs: { 'data-failures-of': crawlid } }, [
    el('td', { attrs: { colspan: FIELDS.length } }, [failList]),
  ]);
  failTr.hidden = true;
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
    failTr,
    failList,
  };
  known.set(key, entry);
  return entry;
}

/**
 * The state shown: the frontier's (`running`, `complete`, `failed`: every page failed), or what the page knows
 * beyond it: `stopped` (by
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
      : state === 'failed'
        ? r.failed === 1
          ? 'its one page failed'
          : `all ${fmt(r.failed)} pages failed`
        : `${pct}% of ${fmt(total)}${r.failed > 0 ? `, ${fmt(r.failed)} failed` : ''}`;
  paintFailures(entry);
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
 * The latest failed pages of a crawl and why, in the row under it: `404 Not Found http://…: reason`.
 * @param {Entry} entry
 */
function paintFailures(entry) {
  const failures = entry.row?.failures ?? [];
  entry.failTr.hidden = failures.length === 0;
  clear(entry.failList);
  for (const f of failures) {
    const status = f.status_code === null ? 'no response' : `HTTP ${f.status_code}`;
    entry.failList.appendChild(
      el('li', { attrs: { 'data-url': f.url, title: `failed at ${time(f.at)}` } }, [
        `${status} ${f.url}: ${f.exception || 'no reason given'}`,
      ]),
    );
  }
  const more = (entry.row?.failed ?? 0) - failures.length;
  if (failures.length > 0 && more > 0) {
    entry.failList.appendChild(el('li', { class: 'muted', text: `and ${fmt(more)} more failed page${plural(more)}` }));
  }
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
    body.appendChild(entry.failTr);
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
