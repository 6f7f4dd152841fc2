// @ts-check
/**
 * The panels beside the crawl table: queues by domain, the fleet's heartbeats, and throughput with its chart.
 *
 * One of the dashboard page's scripts, run in this order as classic scripts that share one global scope (the page
 * lists them; lib/rest/dashboard-page.ts inlines each, byte for byte): dom.js, api.js, crawls.js, panels.js, app.js.
 */
'use strict';

/** The span of the throughput chart: the 15 minutes the counters keep per minute (`throughput.minutes`). */
const CHART_MS = 15 * 60 * 1000;

/**
 * The shortest span a rate is measured over. The crawlers add to the counters in batches, so a rate over a shorter
 * span (the first refreshes after the page loads) reads 0 during a crawl; until then the last whole minute is shown.
 */
const MIN_RATE_SPAN_MS = 10000;

/** @typedef {{ t: number, total: number }} Sample */
/** @typedef {{ t: number, rate: number }} RatePoint */

/** The lifetime page count at each refresh (server clock): the counters keep no time series. */
let samples = /** @type {Sample[]} */ ([]);

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
    // Over at least MIN_RATE_SPAN_MS: a rate over one 2 s refresh jitters, and reads 0 between two batches.
    let j = i - 1;
    while (j > 0 && s.t - item(samples, j).t < MIN_RATE_SPAN_MS) j--;
    const base = item(samples, j);
    const dt = s.t - base.t;
    if (dt >= MIN_RATE_SPAN_MS) points.push({ t: s.t, rate: ((s.total - base.total) / dt) * 60000 });
  });
  // The history the counters keep: one point per whole minute (the minute under way is still filling), at its end,
  // before the first rate measured since the page loaded.
  const firstMeasured = points[0]?.t ?? Number.POSITIVE_INFINITY;
  const history = t.minutes
    .slice(0, -1)
    .map((m) => ({ t: m.start_ms + 60000, rate: m.pages }))
    .filter((p) => p.t < firstMeasured);
  points.unshift(...history);
  const current = points.at(-1)?.rate ?? null;
  const measured = history.length < points.length;
  $('rate-now').textContent =
    current === null
      ? 'measuring…'
      : `${fmt(Math.round(current))} pages/min ${measured ? 'now' : 'in the last whole minute'}`;
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
  const proxies = $('proxies');
  clear(proxies);
  for (const p of t.proxies) {
    proxies.appendChild(
      el(
        'span',
        {
          class: p.failed_15m > 0 ? 'badge YELLOW' : 'badge',
          attrs: { 'data-proxy': p.name, title: `last 15 min: ${fmt(p.ok_15m)} ok, ${fmt(p.failed_15m)} failed` },
        },
        [`${p.name}: ${fmt(p.ok_total)} ok, ${fmt(p.failed_total)} failed`],
      ),
    );
    proxies.appendChild(document.createTextNode(' '));
  }
  proxies.hidden = t.proxies.length === 0;
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
  chart.appendChild(svg('text', { x: L, y: H - 4 }, '15 min ago'));
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
