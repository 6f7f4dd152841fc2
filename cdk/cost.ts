/**
 * `npm run cost`: synthesizes the stack with the context flags a deploy would get (cdk.json, `-c key=value`,
 * `--profile small|standard`), offline and without bundling, and prices it with ./cost-model.ts from the one price
 * table ./prices.ts: each billable resource with its unit price and monthly cost when idle, the total, and the
 * marginal cost of a million pages. docs/cost.md shows the output for both profiles.
 *
 *   npm run cost -- --profile small
 *   npm run cost -- -c kafka=provisioned -c maxAzs=3 --page-kb 60 --compression zstd --json
 *   npm run cost -- --profile small --markdown      # the tables of docs/cost.md
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { App } from 'aws-cdk-lib';
import { type CostOptions, type CostReport, DEFAULT_OPTIONS, priceTemplate, type ResourceCost } from './cost-model.ts';
import { DEFAULT_VOLUME, priceVolume, type VolumeOptions, type VolumeReport } from './cost-volume.ts';
import { PRICES_DATE, PRICES_REGION } from './prices.ts';
import { REPO_ROOT } from './repo-root.ts';
import { readSettings } from './settings.ts';
import { CrawlClusterStack } from './stack.ts';

const USAGE = `usage: npm run cost -- [--profile small|standard] [-c key=value ...] [--json | --markdown]
  [--page-kb ${DEFAULT_OPTIONS.pageKb}] [--compression none|gzip|zstd] [--compression-ratio N]
  [--retention-hours ${DEFAULT_OPTIONS.retentionHours}] [--consumers ${DEFAULT_OPTIONS.consumers}] [--cpu-ms-per-page ${DEFAULT_OPTIONS.cpuMsPerPage}]
  [--sink jsonl|warc|warc,jsonl|none] (the stack's -c sinkFormats; jsonl by default)
  [--pages-per-month N [--crawl-hours ${DEFAULT_VOLUME.crawlHours}] [--domains N] [--archive-months ${DEFAULT_VOLUME.archiveMonths}]]`;

/** The stack's synth warnings that bear on the bill at a volume (cdk/stack.ts). */
const VOLUME_WARNINGS = /^crawl-cluster:(brokerStorage|serverlessPartitionSize|appTopicPartitions|firehosePartitions)$/;

/** `-c key=value` pairs as the CDK CLI passes them: strings, the first `=` splits. */
export function parseContext(pairs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new Error(`-c ${pair}: expected key=value`);
    out[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return out;
}

/**
 * The stack's template for this context, synthesized the way `cdk synth` does (cdk.json's context under the given
 * one) but without bundling the functions, so no Docker and no esbuild run. The account is a placeholder; the
 * region is CDK_DEFAULT_REGION's, else the prices' region.
 */
export function synthTemplate(context: Record<string, unknown>): Record<string, unknown> {
  return synthesize(context).template;
}

/** {@link synthTemplate}, with the stack's synth warnings (their ids and texts). */
export function synthesize(context: Record<string, unknown>): {
  template: Record<string, unknown>;
  warnings: { id: string; text: string }[];
} {
  const cdkJson = JSON.parse(readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
  const app = new App({
    outdir: undefined,
    context: { ...cdkJson.context, ...context, 'aws:cdk:bundling-stacks': [] },
  });
  const name = (app.node.tryGetContext('stackName') as string | undefined) ?? 'CrawlCluster';
  new CrawlClusterStack(app, name, {
    settings: readSettings(app.node),
    env: { account: '123456789012', region: process.env.CDK_DEFAULT_REGION ?? PRICES_REGION },
  });
  const stack = app.synth().getStackByName(name);
  const warnings = stack.messages
    .filter((m) => m.level === 'warning')
    .map((m) => {
      const text = String(m.entry.data);
      const id = /\[ack: ([^\]]+)\]/.exec(text)?.[1] ?? '';
      return { id, text: text.replace(/\s*\[ack: [^\]]+\]\s*$/, '') };
    });
  return { template: stack.template as Record<string, unknown>, warnings };
}

/** The bill at a volume as JSON: the total, the lines the pages add, the warnings (not the floor's resources). */
export function volumeJson(report: VolumeReport): Omit<VolumeReport, 'floor'> {
  const { floor: _floor, ...rest } = report;
  return rest;
}

/** The bill at a volume as text: the floor in one line, then each line the pages add. */
export function volumeText(report: VolumeReport, title: string): string {
  const w = Math.max(...report.at_volume.map((l) => l.what.length), 20);
  const units = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : String(n));
  return [
    `${title} at ${report.pages_per_month.toLocaleString('en-US')} pages a month (${PRICES_REGION} list prices of ${PRICES_DATE}, cdk/prices.ts)`,
    '',
    `${'idle floor (npm run cost without --pages-per-month)'.padEnd(w)}  ${''.padStart(28)}  ${usd(report.idle_usd_per_month).padStart(10)}`,
    ...report.at_volume.map(
      (l) =>
        `${l.what.padEnd(w)}  ${`${units(l.units_per_month)} ${l.unit}`.padStart(28)}  ${usd(l.usd_per_month).padStart(10)}`,
    ),
    `${'a month'.padEnd(w)}  ${''.padStart(28)}  ${usd(report.monthly_usd).padStart(10)}`,
    `${'per million pages beyond the idle floor'.padEnd(w)}  ${''.padStart(28)}  ${usd(report.usd_per_million_pages_beyond_floor, 4).padStart(10)}`,
    ...(report.warnings.length > 0 ? ['', 'warnings:', ...report.warnings.map((x) => `  - ${x}`)] : []),
  ].join('\n');
}

/** The bill at a volume as a markdown table (docs/cost.md). */
export function volumeMarkdown(report: VolumeReport, title: string): string {
  return [
    `**${title}** at ${report.pages_per_month.toLocaleString('en-US')} pages a month: **${usd(report.monthly_usd)} a month** (idle floor ${usd(report.idle_usd_per_month)}, ${usd(report.usd_per_million_pages_beyond_floor)} a million pages beyond it).`,
    '',
    '| At volume | Units a month | $/month |',
    '| --- | --- | --- |',
    ...report.at_volume.map(
      (l) => `| ${l.what} | ${l.units_per_month.toLocaleString('en-US')} ${l.unit} | ${usd(l.usd_per_month)} |`,
    ),
    ...(report.warnings.length > 0 ? ['', ...report.warnings.map((x) => `- Warning: ${x}`)] : []),
  ].join('\n');
}

const usd = (n: number, digits = 2) => `$${n.toFixed(digits)}`;

/** The report's billed lines, alike lines (19 alarms on one metric) summed into one, most expensive first. */
function billed(report: CostReport): (ResourceCost & { count: number })[] {
  const groups = new Map<string, ResourceCost & { count: number }>();
  for (const r of report.resources) {
    if (r.idle_usd_per_month <= 0 && r.idle_units_per_month <= 0) continue;
    const key = `${r.type}|${r.what}|${r.unit_usd}`;
    const g = groups.get(key);
    if (g) {
      g.count += 1;
      g.id = `${g.count} resources`;
      g.idle_usd_per_month = Math.round((g.idle_usd_per_month + r.idle_usd_per_month) * 100) / 100;
    } else groups.set(key, { ...r, count: 1 });
  }
  return [...groups.values()].sort((a, b) => b.idle_usd_per_month - a.idle_usd_per_month);
}

/**
 * The cache's shape and the frontier's partitions in one line: what `-c cacheClusterMode=true -c cacheShards=N`
 * (and `-c frontierPartitions=N`) bought.
 */
export function cacheLine(report: CostReport): string | undefined {
  const c = report.cache;
  if (!c) return undefined;
  const nodes = c.shards * c.nodes_per_shard;
  const shape = c.cluster_mode
    ? `cluster mode, ${c.shards} shard(s) x ${c.nodes_per_shard} node(s) of ${c.node_type}`
    : `cluster mode off, ${nodes} node(s) of ${c.node_type} (a primary and ${nodes - 1} replica(s))`;
  const spread = c.shards > 1 ? `, ${c.frontier_partitions / c.shards} per shard` : '';
  return `cache: ${shape}; frontier partitions (FRONTIER_PARTITIONS): ${c.frontier_partitions}${spread}`;
}

const what = (r: { what: string; count: number }) => (r.count > 1 ? `${r.count} x ${r.what}` : r.what);

/** The report as markdown tables (docs/cost.md). */
export function markdown(report: CostReport, title: string): string {
  const rows = billed(report).map(
    (r) =>
      `| ${what(r)} | ${r.count > 1 ? r.id : `\`${r.id.length > 40 ? `${r.id.slice(0, 38)}…` : r.id}\``} | ${usd(r.unit_usd, r.unit_usd < 0.01 ? 6 : 4)} / ${r.unit} | ${usd(r.idle_usd_per_month)} |`,
  );
  const pages = report.per_million_pages.map((c) => `| ${c.component} | ${usd(c.usd_per_million_pages, 4)} |`);
  const cache = cacheLine(report);
  return [
    `**${title}**: idle floor **${usd(report.idle_usd_per_month)} a month**; a million pages add **${usd(report.usd_per_million_pages)}** (${report.compression} page messages, ÷${report.compression_ratio}).`,
    ...(cache ? ['', `${cache[0]?.toUpperCase()}${cache.slice(1)}.`] : []),
    '',
    '| What | Resource | Unit price | Idle $/month |',
    '| --- | --- | --- | --- |',
    ...rows,
    `| **Idle floor** | | | **${usd(report.idle_usd_per_month)}** |`,
    '',
    '| Per million pages | USD |',
    '| --- | --- |',
    ...pages,
    `| **Total** | **${usd(report.usd_per_million_pages, 4)}** |`,
  ].join('\n');
}

/** The text table of `npm run cost`; the unit price column is as wide as its longest price, never cut. */
export function costText(report: CostReport, title: string): string {
  const rows = billed(report);
  const w = Math.max(...rows.map((r) => what(r).length), 20);
  const price = (r: ResourceCost) => `${usd(r.unit_usd, r.unit_usd < 0.01 ? 6 : 4)}/${r.unit}`;
  const pw = Math.max(...rows.map((r) => price(r).length), 'unit price'.length);
  const lines = [
    `${title} (${PRICES_REGION} list prices of ${PRICES_DATE}, cdk/prices.ts; 730 h a month, nothing crawled)`,
    ...(cacheLine(report) ? [cacheLine(report) as string] : []),
    '',
    `${'what'.padEnd(w)}  ${'unit price'.padStart(pw)}  ${'$/month'.padStart(9)}`,
    ...rows.map((r) => `${what(r).padEnd(w)}  ${price(r).padStart(pw)}  ${usd(r.idle_usd_per_month).padStart(9)}`),
    `${'idle floor'.padEnd(w)}  ${''.padStart(pw)}  ${usd(report.idle_usd_per_month).padStart(9)}`,
    '',
    `per million pages (${report.compression} page messages, ÷${report.compression_ratio}):`,
    ...report.per_million_pages.map(
      (c) => `  ${c.component.padEnd(w)}  ${usd(c.usd_per_million_pages, 4).padStart(9)}`,
    ),
    `  ${'total'.padEnd(w)}  ${usd(report.usd_per_million_pages, 4).padStart(9)}`,
  ];
  return lines.join('\n');
}

function main(argv: string[]): void {
  const { values } = parseArgs({
    args: argv,
    options: {
      context: { type: 'string', short: 'c', multiple: true, default: [] },
      profile: { type: 'string' },
      json: { type: 'boolean', default: false },
      markdown: { type: 'boolean', default: false },
      'page-kb': { type: 'string' },
      compression: { type: 'string' },
      'compression-ratio': { type: 'string' },
      'retention-hours': { type: 'string' },
      consumers: { type: 'string' },
      'cpu-ms-per-page': { type: 'string' },
      'pages-per-month': { type: 'string' },
      'crawl-hours': { type: 'string' },
      domains: { type: 'string' },
      sink: { type: 'string' },
      'archive-months': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const context: Record<string, unknown> = parseContext(values.context ?? []);
  if (values.profile !== undefined) context.profile = values.profile;
  const num = (v: string | undefined, name: string, min = Number.MIN_VALUE): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min)
      throw new Error(`--${name} must be a ${min === 0 ? 'non-negative' : 'positive'} number`);
    return n;
  };
  // The sink's format is the stack's (`-c sinkFormats`): --sink is that key, so the template has the sink priced.
  if (values.sink !== undefined) context.sinkFormats ??= values.sink;
  const options: Partial<CostOptions> = {};
  const set = <K extends keyof CostOptions>(k: K, v: CostOptions[K] | undefined) => {
    if (v !== undefined) options[k] = v;
  };
  set('pageKb', num(values['page-kb'], 'page-kb'));
  set('compression', values.compression);
  set('compressionRatio', num(values['compression-ratio'], 'compression-ratio'));
  set('retentionHours', num(values['retention-hours'], 'retention-hours'));
  set('consumers', num(values.consumers, 'consumers', 0));
  set('cpuMsPerPage', num(values['cpu-ms-per-page'], 'cpu-ms-per-page'));

  const pagesPerMonth = num(values['pages-per-month'], 'pages-per-month');
  if (pagesPerMonth !== undefined) {
    // The stack sizes broker storage for the volume unless -c says otherwise.
    context.pagesPerMonth ??= String(Math.round(pagesPerMonth));
    const volume: Partial<VolumeOptions> & Pick<VolumeOptions, 'pagesPerMonth'> = { ...options, pagesPerMonth };
    const archiveMonths = num(values['archive-months'], 'archive-months', 0);
    if (archiveMonths !== undefined) volume.archiveMonths = Math.floor(archiveMonths);
    const crawlHours = num(values['crawl-hours'], 'crawl-hours');
    if (crawlHours !== undefined) volume.crawlHours = crawlHours;
    const domains = num(values.domains, 'domains');
    if (domains !== undefined) volume.domains = domains;
    const { template, warnings } = synthesize(context);
    const report = priceVolume(template, volume);
    report.warnings.unshift(...warnings.filter((x) => VOLUME_WARNINGS.test(x.id)).map((x) => x.text));
    const name = `profile ${String(context.profile ?? 'standard')}`;
    if (values.json) console.log(JSON.stringify(volumeJson(report), null, 2));
    else if (values.markdown) console.log(volumeMarkdown(report, name));
    else console.log(volumeText(report, name));
    return;
  }
  const report = priceTemplate(synthTemplate(context), options);
  const title = `profile ${String(context.profile ?? 'standard')}${Object.keys(context).length > (context.profile ? 1 : 0) ? ' with -c flags' : ''}`;
  if (values.json) console.log(JSON.stringify(report, null, 2));
  else if (values.markdown) console.log(markdown(report, title));
  else console.log(costText(report, title));
}

if (import.meta.main) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    console.error((err as Error).message);
    console.error(USAGE);
    process.exitCode = 1;
  }
}
