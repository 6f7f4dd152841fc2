/**
 * The archive sink at a volume (docs/cost.md, "The bill at a volume"): what the `sink` function (cdk/constructs/sink.ts)
 * adds to a month of N pages, read from the template as deployed: its formats (SINK_FORMATS; none deployed with
 * `-c sinkFormats=none`), its memory, its event source's batching window, and the outputs bucket's lifecycle.
 * The per-page figures are the sink bench's (bench/results/sink.json, bench/PROFILE.md "Archive sink"), scaled to the
 * page size; {@link SINK_MEASURED} says which are measured and which derived.
 */
import type { Cfn } from './cost-template.ts';
import { PRICES } from './prices.ts';

/** Adds one line to the bill at a volume: what, unit, units a month, price per unit. */
export type Add = (what: string, unit: string, units: number, unitUsd: number) => void;

/**
 * The sink bench's figures for its article page (a page message of `messageBytes` bytes before compression), and the
 * Lambda time a page is billed for at 1 GB, S3 calls included (bench/PROFILE.md "Archive sink").
 * - `warcBytes`: WARC files (one gzip member per record, so pages gain nothing from their neighbours) and their CDXJ
 *   indexes, measured.
 * - `jsonlExtraBytes`: what JSON lines add beside WARC files (`warc,jsonl`: the lines carry no body, only where it is
 *   in the WARC file), measured.
 * - JSONL alone is the page message gzip'd with its batch. The bench's figure for it is a best case (the fixture's
 *   pages are built from shared paragraphs, which gzip finds across pages); real pages of one site share boilerplate
 *   only, which gzip's 32 KB window sees about one page back, so a page is priced as it gzips alone
 *   (`GZIP_PAGE_RATIO` of ./cost-model.ts).
 */
export const SINK_MEASURED = {
  messageBytes: 32_443,
  warcBytes: 12_193,
  jsonlExtraBytes: 132,
  lambdaMsPerPage: { jsonl: 0.8, warc: 2.1, 'warc,jsonl': 2.2 } as Record<string, number>,
};

/** Lambda's largest invocation payload: an MSK event's records (base64, 4 bytes for every 3) fit in it. */
const EVENT_PAYLOAD_BYTES = 6 * 2 ** 20;

/** S3 calls a batch makes per group of pages (one crawl of one app on one day): PUTs, LISTs, and data objects. */
const CALLS: Record<string, { put: number; list: number; dataObjects: number }> = {
  jsonl: { put: 1, list: 0, dataObjects: 1 },
  // A WARC file and its CDXJ index, and one LIST for files an earlier, longer delivery left (lib/sink/layout.ts).
  warc: { put: 2, list: 1, dataObjects: 1 },
  'warc,jsonl': { put: 3, list: 1, dataObjects: 2 },
};

/** The sink as the template deploys it. */
export interface SinkShape {
  /** SINK_FORMATS, normalized to `jsonl`, `warc` or `warc,jsonl`. */
  formats: string;
  memoryGb: number;
  /** MaximumBatchingWindowInSeconds of its event source: the longest a page waits for its batch. */
  windowS: number;
  /** The outputs bucket's transitions and expiry in days (0: off); undefined when the sink writes to a bucket of yours. */
  lifecycle?: { iaDays: number; glacierDays: number; expireDays: number };
}

/** The sink function of a template, or undefined when none is deployed. */
export function sinkOfTemplate(template: Cfn): SinkShape | undefined {
  const resources = Object.entries(template.Resources as Record<string, Cfn>);
  const fn = resources.find(
    ([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.Environment?.Variables?.SINK_FORMATS,
  );
  if (!fn) return undefined;
  const [id, r] = fn;
  const names = new Set(String(r.Properties.Environment.Variables.SINK_FORMATS).split(','));
  const formats = ['warc', 'jsonl'].filter((f) => names.has(f)).join(',');
  const mapping = resources.find(
    ([, m]) => m.Type === 'AWS::Lambda::EventSourceMapping' && m.Properties.FunctionName?.Ref === id,
  )?.[1];
  const bucket = resources.find(([, b]) =>
    (b.Properties?.LifecycleConfiguration?.Rules ?? []).some((rule: Cfn) => rule.Id === 'ArchiveAging'),
  )?.[1];
  let lifecycle: SinkShape['lifecycle'];
  if (bucket) {
    const rule = (bucket.Properties.LifecycleConfiguration.Rules as Cfn[]).find((x) => x.Id === 'ArchiveAging') as Cfn;
    const after = (cls: string) =>
      Number((rule.Transitions ?? []).find((t: Cfn) => t.StorageClass === cls)?.TransitionInDays ?? 0);
    lifecycle = {
      iaDays: after('STANDARD_IA'),
      glacierDays: after('GLACIER_IR'),
      expireDays: Number(rule.ExpirationInDays ?? 0),
    };
  }
  return {
    formats,
    memoryGb: Number(r.Properties.MemorySize ?? 128) / 1024,
    windowS: Number(mapping?.Properties.MaximumBatchingWindowInSeconds ?? 0),
    ...(lifecycle ? { lifecycle } : {}),
  };
}

export interface SinkVolume {
  pagesPerMonth: number;
  /** The page message before compression, KB. */
  pageKb: number;
  /** Hours of the month the fleet crawls. */
  crawlHours: number;
  /** Share of pages whose body is in the body bucket, and their mean size: the WARC sink reads and stores them. */
  largeBodyShare: number;
  largeBodyBytes: number;
  /** Bytes a page shrinks by gzip'd alone. */
  gzipPageRatio: number;
  /** Earlier months of output at this volume the archive already holds (priced by the bucket's lifecycle). */
  archiveMonths: number;
}

const GB = 1e9;
const round = (n: number, digits = 0) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Bytes the sink stores a page, in its formats, for pages of `pageKb` KB. */
function sinkBytesPerPage(
  formats: string,
  v: Pick<SinkVolume, 'pageKb' | 'gzipPageRatio' | 'largeBodyShare' | 'largeBodyBytes'>,
): number {
  const scale = (v.pageKb * 1024) / SINK_MEASURED.messageBytes;
  const jsonl = (v.pageKb * 1024) / v.gzipPageRatio;
  if (formats === 'jsonl') return jsonl;
  // WARC records hold the bodies of large pages too, read from the body bucket.
  const warc = SINK_MEASURED.warcBytes * scale + (v.largeBodyShare * v.largeBodyBytes) / v.gzipPageRatio;
  return formats === 'warc' ? warc : warc + SINK_MEASURED.jsonlExtraBytes * scale;
}

/**
 * Pages in one invocation: as many as the event payload holds, or as many as arrive within the batching window when
 * the crawl is slower than that.
 */
function pagesPerInvocation(sink: SinkShape, v: Pick<SinkVolume, 'pagesPerMonth' | 'pageKb' | 'crawlHours'>) {
  const full = Math.floor(EVENT_PAYLOAD_BYTES / ((v.pageKb * 1024 * 4) / 3));
  const rate = v.pagesPerMonth / (v.crawlHours * 3600);
  return Math.max(1, Math.min(full, rate * Math.max(1, sink.windowS)));
}

/**
 * The sink's lines: S3 requests (one group a batch: the page messages are keyed by crawlid, so one crawl's pages come
 * from one partition), the month's output stored in S3 Standard for a month, the archive of earlier months in the classes
 * the lifecycle moved it to, the Lambda's time and invocations, and the large bodies it reads.
 */
export function sinkLines(sink: SinkShape, v: SinkVolume, add: Add): void {
  const f = sink.formats;
  const calls = CALLS[f] ?? { put: 1, list: 0, dataObjects: 1 };
  const perCall = pagesPerInvocation(sink, v);
  const invocations = v.pagesPerMonth / perCall;
  const bytes = sinkBytesPerPage(f, v);
  const monthGb = (v.pagesPerMonth * bytes) / GB;
  const label = `archive sink (${f})`;
  add(
    `${label}: S3 PUT, ${calls.put} a batch of ~${round(perCall)} pages`,
    PRICES.s3PutThousand.unit,
    (invocations * calls.put) / 1000,
    PRICES.s3PutThousand.usd,
  );
  add(
    `${label}: S3 LIST, ${calls.list} a batch`,
    PRICES.s3ListThousand.unit,
    (invocations * calls.list) / 1000,
    PRICES.s3ListThousand.usd,
  );
  add(
    `${label}: the month's output in S3 Standard, ~${round(bytes)} bytes a page`,
    PRICES.s3StorageGbMonth.unit,
    monthGb,
    PRICES.s3StorageGbMonth.usd,
  );
  archive(sink, v, monthGb, (invocations * calls.dataObjects) / 1000, label, add);
  const ms = SINK_MEASURED.lambdaMsPerPage[f] ?? 0;
  add(
    `${label}: Lambda time, ~${ms} ms a page at ${sink.memoryGb} GB`,
    PRICES.lambdaArmGbSecond.unit,
    (v.pagesPerMonth * ms * sink.memoryGb) / 1000,
    PRICES.lambdaArmGbSecond.usd,
  );
  add(
    `${label}: Lambda invocations`,
    PRICES.lambdaRequestsMillion.unit,
    invocations / 1e6,
    PRICES.lambdaRequestsMillion.usd,
  );
  if (f !== 'jsonl')
    add(
      `${label}: S3 GET of large bodies`,
      PRICES.s3GetThousand.unit,
      (v.pagesPerMonth * v.largeBodyShare) / 1000,
      PRICES.s3GetThousand.usd,
    );
}

/**
 * The output of earlier months (`archiveMonths`), each month in the class its age puts it in (a month k months old is
 * priced at 30 k days), and the lifecycle transitions of one month's data objects into each class it reaches.
 * Without the stack's outputs bucket, everything stays in S3 Standard.
 */
function archive(sink: SinkShape, v: SinkVolume, monthGb: number, thousandObjects: number, label: string, add: Add) {
  if (v.archiveMonths <= 0) return;
  const l = sink.lifecycle ?? { iaDays: 0, glacierDays: 0, expireDays: 0 };
  const months = { standard: 0, ia: 0, glacier: 0 };
  for (let k = 1; k <= v.archiveMonths; k += 1) {
    const days = 30 * k;
    if (l.expireDays > 0 && days >= l.expireDays) break;
    if (l.glacierDays > 0 && days >= l.glacierDays) months.glacier += 1;
    else if (l.iaDays > 0 && days >= l.iaDays) months.ia += 1;
    else months.standard += 1;
  }
  const held = `${v.archiveMonths} earlier month(s) held`;
  add(
    `${label}: ${held}, ${months.standard} in S3 Standard`,
    PRICES.s3StorageGbMonth.unit,
    months.standard * monthGb,
    PRICES.s3StorageGbMonth.usd,
  );
  add(
    `${label}: ${held}, ${months.ia} in Standard-IA`,
    PRICES.s3IaGbMonth.unit,
    months.ia * monthGb,
    PRICES.s3IaGbMonth.usd,
  );
  add(
    `${label}: ${held}, ${months.glacier} in Glacier Instant Retrieval`,
    PRICES.s3GlacierIrGbMonth.unit,
    months.glacier * monthGb,
    PRICES.s3GlacierIrGbMonth.usd,
  );
  if (months.ia > 0)
    add(
      `${label}: a month's files moved to Standard-IA`,
      PRICES.s3TransitionIaThousand.unit,
      thousandObjects,
      PRICES.s3TransitionIaThousand.usd,
    );
  if (months.glacier > 0)
    add(
      `${label}: a month's files moved to Glacier Instant Retrieval`,
      PRICES.s3TransitionGlacierIrThousand.unit,
      thousandObjects,
      PRICES.s3TransitionGlacierIrThousand.usd,
    );
}
