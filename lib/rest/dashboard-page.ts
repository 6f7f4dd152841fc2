/**
 * The dashboard page served at `GET /ui` (lib/rest/dashboard.ts): one HTML document with its CSS and
 * vanilla JS inline, nothing loaded from elsewhere, so it works offline and needs no build step. Kept as
 * strings in a module (not a file read at run time) so the Lambda bundle carries it.
 *
 * The script renders everything with DOM calls and `textContent` (never `innerHTML`), polls
 * `ui/api/overview` every 2 s (paused while the tab is hidden), and talks to `feed` / `poll` like any
 * client. URLs are relative to the page's own path, so it works behind an API Gateway stage (`/prod/ui`).
 * The response's Content-Security-Policy allows exactly this script and style, by hash.
 */
import { createHash } from 'node:crypto';

const STYLE = `
:root{--fg:#1d2330;--muted:#667085;--line:#e3e6ec;--bg:#f6f7f9;--card:#fff;--ok:#1a7f37;--warn:#b7791f;--bad:#c62828;--accent:#2f5bd3}
*{box-sizing:border-box}
body{margin:0;font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{display:flex;align-items:center;gap:16px;flex-wrap:wrap;padding:10px 20px;background:#17203a;color:#fff}
header h1{font-size:17px;margin:0;font-weight:600}
header form{display:flex;gap:6px;align-items:center;margin-left:auto}
header input{width:150px}
main{display:grid;grid-template-columns:minmax(0,2fr) minmax(0,1fr);gap:16px;padding:16px 20px}
@media (max-width:1000px){main{grid-template-columns:minmax(0,1fr)}}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 14px}
section h2{font-size:14px;margin:0 0 8px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
.wide{grid-column:1/-1}
.keep{text-transform:none;letter-spacing:0;color:var(--fg)}
table{width:100%;border-collapse:collapse}
th,td{text-align:left;padding:5px 6px;border-bottom:1px solid var(--line);vertical-align:middle}
th{font-weight:600;color:var(--muted);font-size:12px}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{position:relative;height:10px;min-width:90px;background:#e9edf5;border-radius:5px;overflow:hidden}
.bar>span{position:absolute;left:0;top:0;bottom:0;background:var(--accent)}
.bar.complete>span{background:var(--ok)}
.bar.stopped>span{background:var(--muted)}
.badge{display:inline-block;padding:1px 7px;border-radius:9px;font-size:12px;background:#e9edf5}
.badge.running{background:#dbe6ff;color:#1f3f9a}
.badge.complete{background:#dcf3e2;color:var(--ok)}
.badge.stopped,.badge.ended{background:#eceff3;color:var(--muted)}
.badge.submitted{background:#fff3d6;color:var(--warn)}
.badge.GREEN{background:#dcf3e2;color:var(--ok)}
.badge.YELLOW{background:#fff3d6;color:var(--warn)}
.badge.RED{background:#fde0e0;color:var(--bad)}
.muted{color:var(--muted)}
.small{font-size:12px}
.error{color:var(--bad)}
.okmsg{color:var(--ok)}
#banner{display:none;margin:12px 20px 0;padding:8px 12px;border-radius:6px;background:#fde0e0;color:var(--bad)}
#banner.show{display:block}
form.feed{display:grid;grid-template-columns:auto 1fr;gap:6px 10px;align-items:center}
form.feed .actions{grid-column:1/-1;display:flex;gap:10px;align-items:center}
input,select,button{font:inherit;padding:4px 7px;border:1px solid #c9ced8;border-radius:5px;background:#fff;color:var(--fg)}
button{cursor:pointer;background:#eef2fb}
button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
button.danger{background:#fff;border-color:#e0a3a3;color:var(--bad)}
button.danger.confirm{background:var(--bad);color:#fff}
button:disabled{opacity:.55;cursor:default}
ul.plain{list-style:none;margin:0;padding:0}
ul.plain li{padding:3px 0;border-bottom:1px solid var(--line)}
.dot{display:inline-block;width:8px;height:8px;border-radius:4px;margin-right:6px;background:var(--muted)}
.dot.on{background:var(--ok)}
svg{display:block;width:100%;height:150px}
svg .grid{stroke:#e3e6ec;stroke-width:1}
svg .line{fill:none;stroke:var(--accent);stroke-width:2}
svg .area{fill:#2f5bd31a;stroke:none}
svg text{font-size:11px;fill:#667085}
`;

const SCRIPT = String.raw`
'use strict';
(function () {
  var BASE = location.pathname.replace(/\/ui\/?$/, '');
  var REFRESH_MS = 2000;
  var HEALTH_MS = 10000;
  var CHART_MS = 5 * 60 * 1000;
  var APP_KEY = 'crawl-cluster.dashboard.appid';
  var appid = initialAppid();
  var known = new Map();
  var samples = [];
  var timer = 0;

  function initialAppid() {
    var fromUrl = new URLSearchParams(location.search).get('appid');
    if (fromUrl) return fromUrl;
    try { return localStorage.getItem(APP_KEY) || 'dashboard'; } catch (e) { return 'dashboard'; }
  }

  function $(id) { return document.getElementById(id); }

  /** An element; props: class, text, attrs, on; children: nodes or strings (as text). */
  function el(tag, props, children) {
    var node = document.createElement(tag);
    props = props || {};
    if (props.class) node.className = props.class;
    if (props.text !== undefined) node.textContent = String(props.text);
    var attrs = props.attrs || {};
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    var on = props.on || {};
    Object.keys(on).forEach(function (k) { node.addEventListener(k, on[k]); });
    (children || []).forEach(function (c) {
      node.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    });
    return node;
  }

  function svg(tag, attrs, text) {
    var node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function fmt(n) { return typeof n === 'number' ? n.toLocaleString('en-US') : String(n); }
  function time(ms) { return new Date(ms).toLocaleTimeString(); }
  function randomId(prefix) {
    return prefix + Date.now().toString(36) + '-' + Math.random().toString(36).slice(2, 8);
  }
  function keyOf(spiderid, crawlid) { return spiderid + '\n' + crawlid; }

  async function call(method, path, body) {
    var init = { method: method, cache: 'no-store', headers: { accept: 'application/json' } };
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    var response = await fetch(BASE + path, init);
    var json = null;
    try { json = await response.json(); } catch (e) { json = null; }
    return { status: response.status, json: json };
  }

  function errorText(json, status) {
    var e = json && json.error;
    if (!e) return 'HTTP ' + status;
    var text = e.message || ('HTTP ' + status);
    if (Array.isArray(e.details) && e.details.length > 0) {
      text += ' ' + e.details.map(function (d) { return (d.path || '(body)') + ' ' + d.message; }).join('; ');
    } else if (e.cause) {
      text += ' (' + e.cause + ')';
    }
    return text;
  }

  function setAppid(next) {
    if (next === appid) return;
    appid = next;
    known.clear();
    clear($('crawl-rows'));
    try { localStorage.setItem(APP_KEY, appid); } catch (e) { /* private mode */ }
    $('watch-appid').value = appid;
    $('crawls-app').textContent = appid;
  }

  /* ---- crawls ---- */

  function entryFor(spiderid, crawlid) {
    var key = keyOf(spiderid, crawlid);
    var entry = known.get(key);
    if (entry) return entry;
    entry = { spiderid: spiderid, crawlid: crawlid, row: null, seen: false, gone: false, submitted: false, stop: null, confirmUntil: 0 };
    var cells = {};
    ['crawl', 'state', 'progress', 'done', 'failed', 'pending', 'domains', 'action'].forEach(function (f) {
      cells[f] = el('td', { class: ['done', 'failed', 'pending', 'domains'].indexOf(f) >= 0 ? 'num' : '', attrs: { 'data-field': f } });
    });
    cells.crawl.appendChild(el('div', { text: crawlid }));
    cells.crawl.appendChild(el('div', { class: 'muted small', text: spiderid }));
    entry.bar = el('span');
    entry.barBox = el('div', { class: 'bar', attrs: { role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': 100 } }, [entry.bar]);
    entry.percent = el('div', { class: 'muted small' });
    cells.progress.appendChild(entry.barBox);
    cells.progress.appendChild(entry.percent);
    entry.badge = el('span', { class: 'badge' });
    cells.state.appendChild(entry.badge);
    entry.button = el('button', { class: 'danger', text: 'Stop', attrs: { type: 'button', 'data-action': 'stop' }, on: { click: function () { onStop(entry); } } });
    entry.stopResult = el('div', { class: 'small', attrs: { 'data-field': 'stop-result', role: 'status' } });
    cells.action.appendChild(entry.button);
    cells.action.appendChild(entry.stopResult);
    entry.cells = cells;
    entry.tr = el('tr', { attrs: { 'data-crawlid': crawlid, 'data-spiderid': spiderid } }, Object.keys(cells).map(function (f) { return cells[f]; }));
    known.set(key, entry);
    return entry;
  }

  function stateOf(entry) {
    if (entry.stop && entry.stop.ok && (entry.gone || !entry.row || entry.row.pending === 0)) return 'stopped';
    if (entry.gone) return 'ended';
    if (!entry.row) return 'submitted';
    return entry.row.state;
  }

  function paint(entry) {
    var r = entry.row;
    var state = stateOf(entry);
    var pending = r && !entry.gone ? r.pending : (entry.seen ? 0 : null);
    entry.tr.setAttribute('data-state', state);
    entry.badge.className = 'badge ' + state;
    entry.badge.textContent = state;
    entry.badge.title = state === 'ended' ? 'no longer in the frontier: stopped elsewhere, expired, or swept after completing'
      : state === 'submitted' ? 'sent; waiting for the kafka-monitor to queue it' : '';
    entry.cells.done.textContent = r ? fmt(r.done) : '–';
    entry.cells.failed.textContent = r ? fmt(r.failed) : '–';
    entry.cells.pending.textContent = pending === null ? '–' : fmt(pending);
    entry.cells.pending.title = r && !entry.gone ? r.queued + ' queued, ' + r.leased + ' being fetched' : '';
    entry.cells.domains.textContent = r && !entry.gone ? fmt(r.domains) : '–';
    var finished = r ? r.done + r.failed : 0;
    var total = finished + (pending || 0);
    var pct = entry.pct || 0;
    if (r && !entry.gone) {
      pct = total > 0 ? Math.round((finished / total) * 100) : (state === 'complete' ? 100 : 0);
      entry.pct = pct;
    }
    entry.bar.style.width = pct + '%';
    entry.barBox.className = 'bar ' + state;
    entry.barBox.setAttribute('aria-valuenow', pct);
    entry.percent.textContent = !r ? '' : entry.gone ? state + ' after ' + fmt(finished) + ' page' + (finished === 1 ? '' : 's') : pct + '% of ' + fmt(total);
    var stoppable = (state === 'running' || state === 'submitted') && !(entry.stop && (entry.stop.busy || entry.stop.ok));
    entry.button.hidden = !stoppable;
    var confirming = entry.confirmUntil > Date.now();
    entry.button.textContent = confirming ? 'Confirm stop' : 'Stop';
    entry.button.className = confirming ? 'danger confirm' : 'danger';
    entry.button.disabled = !!(entry.stop && entry.stop.busy);
    entry.stopResult.textContent = entry.stop ? entry.stop.text : '';
    entry.stopResult.className = 'small ' + (entry.stop && entry.stop.ok === false ? 'error' : entry.stop && entry.stop.ok ? 'okmsg' : 'muted');
  }

  function renderCrawls(o) {
    var present = new Set();
    o.crawls.forEach(function (row) {
      var entry = entryFor(row.spiderid, row.crawlid);
      entry.row = row;
      entry.seen = true;
      entry.gone = false;
      present.add(keyOf(row.spiderid, row.crawlid));
    });
    known.forEach(function (entry, key) {
      if (!present.has(key) && entry.seen) entry.gone = true;
    });
    layout();
    $('crawls-more').textContent = o.crawls_total > o.crawls.length
      ? 'showing ' + o.crawls.length + ' of ' + fmt(o.crawls_total) + ' crawls' : '';
  }

  /** Paints every known crawl, running and submitted ones first. */
  function layout() {
    var order = Array.from(known.values()).sort(function (a, b) {
      var ra = stateOf(a) === 'running' || stateOf(a) === 'submitted' ? 0 : 1;
      var rb = stateOf(b) === 'running' || stateOf(b) === 'submitted' ? 0 : 1;
      return ra - rb || (a.crawlid < b.crawlid ? -1 : a.crawlid > b.crawlid ? 1 : 0);
    });
    var body = $('crawl-rows');
    order.forEach(function (entry) { paint(entry); body.appendChild(entry.tr); });
    $('crawls-empty').hidden = known.size > 0;
  }

  function onStop(entry) {
    if (entry.confirmUntil > Date.now()) {
      entry.confirmUntil = 0;
      stopCrawl(entry);
    } else {
      entry.confirmUntil = Date.now() + 5000;
      setTimeout(function () { paint(entry); }, 5100);
    }
    paint(entry);
  }

  function stopReplyText(data) {
    var n = data.total_purged;
    return 'stopped: ' + fmt(n) + ' pending request' + (n === 1 ? '' : 's') + ' purged';
  }

  async function stopCrawl(entry) {
    var uuid = randomId('ui-stop-');
    entry.stop = { busy: true, ok: null, text: 'stopping…' };
    paint(entry);
    try {
      var r = await call('POST', '/feed', { action: 'stop', appid: appid, crawlid: entry.crawlid, spiderid: entry.spiderid, uuid: uuid });
      var data = r.json && r.json.data;
      if (r.status === 200 && data && typeof data.total_purged === 'number') {
        entry.stop = { ok: true, text: stopReplyText(data) };
      } else if (r.status === 200 && data && data.poll_id) {
        entry.stop = { busy: true, ok: null, text: 'stop sent; waiting for the reply…' };
        paint(entry);
        entry.stop = await pollStop(data.poll_id);
      } else {
        entry.stop = { ok: false, text: 'stop failed: ' + errorText(r.json, r.status) };
      }
    } catch (e) {
      entry.stop = { ok: false, text: 'stop failed: ' + e.message };
    }
    paint(entry);
    schedule(0);
  }

  async function pollStop(pollId) {
    for (var i = 0; i < 60; i++) {
      await new Promise(function (resolve) { setTimeout(resolve, 1000); });
      var r = await call('POST', '/poll', { poll_id: pollId });
      if (r.status === 200 && r.json && r.json.data) return { ok: true, text: stopReplyText(r.json.data) };
      if (r.status !== 404) return { ok: false, text: 'stop failed: ' + errorText(r.json, r.status) };
    }
    return { ok: false, text: 'no reply to the stop within a minute (poll id ' + pollId + ')' };
  }

  /* ---- queues, fleet, throughput ---- */

  function renderQueues(q) {
    var body = $('queue-rows');
    clear(body);
    var max = q.top.reduce(function (m, d) { return Math.max(m, d.backlog); }, 1);
    q.top.forEach(function (d) {
      var bar = el('span');
      bar.style.width = Math.max(2, Math.round((d.backlog / max) * 100)) + '%';
      body.appendChild(el('tr', { attrs: { 'data-domain': d.domain } }, [
        el('td', { text: d.domain }),
        el('td', { class: 'muted', text: d.spiderid }),
        el('td', { class: 'num', text: fmt(d.backlog) }),
        el('td', {}, [el('div', { class: 'bar' }, [bar])]),
      ]));
    });
    $('queues-empty').hidden = q.top.length > 0;
    $('queues-total').textContent = fmt(q.total_backlog) + ' queued over ' + fmt(q.num_domains) + ' domain' + (q.num_domains === 1 ? '' : 's');
  }

  function renderFleet(f) {
    var list = $('fleet-crawlers');
    clear(list);
    // One heartbeat per spider type a process serves: one line per process.
    var byNode = new Map();
    f.crawlers.forEach(function (c) {
      var n = byNode.get(c.node) || { node: c.node, spiders: [], beating: false };
      n.spiders.push(c.spiderid);
      n.beating = n.beating || c.beating;
      byNode.set(c.node, n);
    });
    var beating = 0;
    byNode.forEach(function (n) {
      if (n.beating) beating++;
      list.appendChild(el('li', { attrs: { 'data-node': n.node } }, [
        el('span', { class: n.beating ? 'dot on' : 'dot', attrs: { title: n.beating ? 'beat in the last 30 s' : 'silent for over 30 s' } }),
        n.node + ' ',
        el('span', { class: 'muted small', text: n.spiders.join(', ') }),
      ]));
    });
    $('fleet-count').textContent = byNode.size + ' crawler' + (byNode.size === 1 ? '' : 's') + ', ' + beating + ' beating';
    $('fleet-empty').hidden = byNode.size > 0;
    var nodes = $('fleet-nodes');
    clear(nodes);
    Object.keys(f.nodes).forEach(function (kind) {
      var ids = f.nodes[kind];
      nodes.appendChild(el('li', { attrs: { title: ids.join('\n') } }, [
        el('span', { class: ids.length > 0 ? 'dot on' : 'dot' }), kind + ': ' + ids.length,
      ]));
    });
  }

  function renderThroughput(t, now) {
    var last = samples[samples.length - 1];
    if (last && (t.pages_total < last.total || now <= last.t)) samples = [];
    samples.push({ t: now, total: t.pages_total });
    while (samples.length > 2 && now - samples[0].t > CHART_MS + 30000) samples.shift();
    var points = [];
    for (var i = 1; i < samples.length; i++) {
      var j = i - 1;
      while (j > 0 && samples[i].t - samples[j].t < 10000) j--;
      var dt = samples[i].t - samples[j].t;
      if (dt > 0) points.push({ t: samples[i].t, rate: ((samples[i].total - samples[j].total) / dt) * 60000 });
    }
    var current = points.length > 0 ? points[points.length - 1].rate : null;
    $('rate-now').textContent = current === null ? 'measuring…' : fmt(Math.round(current)) + ' pages/min now';
    $('rate-totals').textContent = 'last 15 min: ' + fmt(t.pages_15m) + ' pages (' + fmt(t.ok_15m) + ' ok) · last hour: ' + fmt(t.pages_1h) + ' · lifetime: ' + fmt(t.pages_total);
    drawChart(points, now);
    var statuses = $('statuses');
    clear(statuses);
    t.by_status.forEach(function (s) {
      statuses.appendChild(el('span', { class: 'badge', attrs: { title: fmt(s.last_15m) + ' in the last 15 min' } }, [s.status + ': ' + fmt(s.total)]));
      statuses.appendChild(document.createTextNode(' '));
    });
  }

  function drawChart(points, now) {
    var chart = $('chart');
    clear(chart);
    var W = 600, H = 150, L = 40, B = 18, T = 8;
    var max = points.reduce(function (m, p) { return Math.max(m, p.rate); }, 0);
    var top = max <= 10 ? 10 : Math.pow(10, Math.floor(Math.log10(max))) * Math.ceil(max / Math.pow(10, Math.floor(Math.log10(max))));
    var x = function (t) { return L + ((t - (now - CHART_MS)) / CHART_MS) * (W - L - 4); };
    var y = function (v) { return T + (1 - v / top) * (H - T - B); };
    [0, 0.5, 1].forEach(function (f) {
      chart.appendChild(svg('line', { class: 'grid', x1: L, x2: W - 4, y1: y(top * f), y2: y(top * f) }));
      chart.appendChild(svg('text', { x: L - 4, y: y(top * f) + 4, 'text-anchor': 'end' }, fmt(Math.round(top * f))));
    });
    chart.appendChild(svg('text', { x: L, y: H - 4 }, '5 min ago'));
    chart.appendChild(svg('text', { x: W - 4, y: H - 4, 'text-anchor': 'end' }, 'now'));
    var visible = points.filter(function (p) { return p.t >= now - CHART_MS; });
    if (visible.length < 1) return;
    var coords = visible.map(function (p) { return x(p.t).toFixed(1) + ',' + y(p.rate).toFixed(1); });
    if (visible.length === 1) coords.unshift(x(visible[0].t - 2000).toFixed(1) + ',' + y(visible[0].rate).toFixed(1));
    var first = coords[0].split(',')[0], lastX = coords[coords.length - 1].split(',')[0];
    chart.appendChild(svg('polygon', { class: 'area', points: first + ',' + y(0) + ' ' + coords.join(' ') + ' ' + lastX + ',' + y(0) }));
    chart.appendChild(svg('polyline', { class: 'line', points: coords.join(' ') }));
  }

  /* ---- refresh loop ---- */

  async function refresh() {
    if (document.visibilityState === 'hidden') return;
    try {
      var r = await call('GET', '/ui/api/overview?appid=' + encodeURIComponent(appid) + '&top=10');
      if (r.status !== 200 || !r.json || r.json.status !== 'SUCCESS') throw new Error(errorText(r.json, r.status));
      var o = r.json.data;
      if (o.appid !== appid) return;
      renderCrawls(o);
      renderQueues(o.queues);
      renderFleet(o.fleet);
      renderThroughput(o.throughput, o.server_time_ms);
      $('updated').textContent = 'updated ' + time(o.server_time_ms);
      $('banner').className = '';
    } catch (e) {
      $('banner').textContent = 'Cannot read the cluster state: ' + e.message + ' (retrying every ' + REFRESH_MS / 1000 + ' s)';
      $('banner').className = 'show';
    }
  }

  function schedule(ms) {
    clearTimeout(timer);
    timer = setTimeout(function () {
      refresh().finally(function () { schedule(REFRESH_MS); });
    }, ms);
  }

  async function health() {
    try {
      var r = await call('GET', '/');
      var h = r.json || {};
      var badge = $('health');
      badge.textContent = h.node_health || 'unknown';
      badge.className = 'badge ' + (h.node_health || '');
      badge.title = 'Kafka ' + (h.kafka_connected ? 'connected' : 'down') + ', Redis ' + (h.redis_connected ? 'connected' : 'down');
    } catch (e) {
      $('health').textContent = 'unreachable';
      $('health').className = 'badge RED';
    }
  }

  /* ---- forms ---- */

  $('watch').addEventListener('submit', function (ev) {
    ev.preventDefault();
    var next = $('watch-appid').value.trim();
    if (next.length < 3 || next.length > 40) {
      $('watch-appid').setCustomValidity('an appid is 3 to 40 characters');
      $('watch-appid').reportValidity();
      return;
    }
    $('watch-appid').setCustomValidity('');
    setAppid(next);
    schedule(0);
  });

  $('feed').addEventListener('submit', async function (ev) {
    ev.preventDefault();
    var result = $('feed-result');
    var button = $('feed-submit');
    var crawlid = $('feed-crawlid').value.trim() || randomId('ui-');
    var target = $('feed-appid').value.trim();
    var request = { url: $('feed-url').value.trim(), appid: target, crawlid: crawlid, maxdepth: Number($('feed-depth').value) };
    button.disabled = true;
    result.className = 'small muted';
    result.textContent = 'submitting…';
    try {
      var r = await call('POST', '/feed', request);
      if (r.status === 200 && r.json && r.json.status === 'SUCCESS') {
        result.className = 'small okmsg';
        result.textContent = 'crawl ' + crawlid + ' submitted to app ' + target;
        setAppid(target);
        var entry = entryFor('link', crawlid);
        entry.submitted = true;
        entry.stop = null;
        $('feed-crawlid').value = '';
        layout();
        schedule(300);
      } else {
        result.className = 'small error';
        result.textContent = 'rejected: ' + errorText(r.json, r.status);
      }
    } catch (e) {
      result.className = 'small error';
      result.textContent = 'could not submit: ' + e.message;
    }
    button.disabled = false;
  });

  $('watch-appid').value = appid;
  $('feed-appid').value = appid;
  $('crawls-app').textContent = appid;
  document.addEventListener('visibilitychange', function () { if (document.visibilityState === 'visible') schedule(0); });
  health();
  setInterval(health, HEALTH_MS);
  schedule(0);
})();
`;

const BODY = `<header>
<h1>crawl-cluster</h1><span id="health" class="badge" title="GET /">…</span><span id="updated" class="small"></span>
<form id="watch" autocomplete="off"><label for="watch-appid" class="small">App</label>
<input id="watch-appid" name="appid" required minlength="3" maxlength="40"><button type="submit">Watch</button></form>
</header>
<div id="banner" role="alert"></div>
<main>
<section class="wide"><h2>Crawls of app <span id="crawls-app" class="keep"></span></h2>
<table><thead><tr><th>Crawl</th><th>State</th><th>Progress</th><th class="num">Done</th><th class="num">Failed</th>
<th class="num">Pending</th><th class="num">Domains</th><th></th></tr></thead><tbody id="crawl-rows"></tbody></table>
<p id="crawls-empty" class="muted small">No crawls of this app in the frontier. Submit one below, or watch another app.</p>
<p id="crawls-more" class="muted small"></p></section>
<section><h2>Throughput</h2><div><strong id="rate-now">measuring…</strong></div>
<svg id="chart" viewBox="0 0 600 150" preserveAspectRatio="none" role="img" aria-label="pages per minute over the last 5 minutes"></svg>
<div id="rate-totals" class="small muted"></div><div id="statuses" class="small"></div></section>
<section><h2>Submit a crawl</h2>
<form id="feed" class="feed" autocomplete="off">
<label for="feed-url">URL</label><input id="feed-url" name="url" required placeholder="https://example.com/">
<label for="feed-appid">App</label><input id="feed-appid" name="appid" required minlength="3" maxlength="40">
<label for="feed-crawlid">Crawl id</label><input id="feed-crawlid" name="crawlid" maxlength="40" placeholder="generated when empty">
<label for="feed-depth">Depth</label><select id="feed-depth" name="depth"><option>0</option><option selected>1</option><option>2</option><option>3</option></select>
<div class="actions"><button id="feed-submit" type="submit" class="primary">Submit crawl</button><span id="feed-result" class="small" role="status"></span></div>
</form></section>
<section><h2>Queues by domain <span id="queues-total" class="small muted"></span></h2>
<table><thead><tr><th>Domain</th><th>Spider</th><th class="num">Queued</th><th></th></tr></thead><tbody id="queue-rows"></tbody></table>
<p id="queues-empty" class="muted small">Nothing queued.</p></section>
<section><h2>Fleet <span id="fleet-count" class="small muted"></span></h2>
<ul id="fleet-crawlers" class="plain"></ul><p id="fleet-empty" class="muted small">No live crawler heartbeats.</p>
<ul id="fleet-nodes" class="plain small"></ul></section>
</main>
<noscript><p>The dashboard needs JavaScript.</p></noscript>`;

/** The whole page. */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>crawl-cluster dashboard</title><link rel="icon" href="data:,">
<style>${STYLE}</style></head>
<body>
${BODY}
<script>${SCRIPT}</script>
</body></html>
`;

const hash = (text: string) => `sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}`;

/** CSP source of the inline script. */
export const DASHBOARD_SCRIPT_HASH = hash(SCRIPT);
/** CSP source of the inline style. */
export const DASHBOARD_STYLE_HASH = hash(STYLE);
