/**
 * Where a batch's output goes (docs/outputs.md "Layout"): `<appid>/<crawlid>/<yyyy>/<mm>/<dd>/` under the sink's URI,
 * then names derived from the Kafka partition and the offset of the group's first record in the batch:
 *
 *     <topic>-<partition>-<firstOffset>-<n>.warc.gz   the n-th WARC file of the group (0 first), and beside it
 *     <topic>-<partition>-<firstOffset>-<n>.cdxj      its index
 *     <topic>-<partition>-<firstOffset>.jsonl.gz      the group's pages, one per line
 *
 * A batch is retried from its first offset (the sink fails a partition whole), so a redelivered batch names its
 * groups as the first delivery did and rewrites the same objects: the names carry no last offset, which would differ
 * when the redelivery holds more or fewer records. What a longer first delivery wrote beyond the new files is
 * removed by name (the `<stem>-` objects not written again), so no record is ever in two objects.
 */

/** Offsets are zero-padded so a partition's files sort in offset order. */
const OFFSET_DIGITS = 12;

/**
 * One path segment from a value a client chose (appid, crawlid): percent-encoded so it can neither add a level
 * (`/`) nor climb one (`.`, `..`).
 */
export function segment(value: string): string {
  const encoded = encodeURIComponent(value);
  return encoded === '.' || encoded === '..' ? encoded.replaceAll('.', '%2E') : encoded;
}

/** The group's folder: `<appid>/<crawlid>/<yyyy>/<mm>/<dd>/`, the day (UTC) of the page's WARC date. */
export function groupFolder(appid: string, crawlid: string, warcDate: string): string {
  const [yyyy, mm, dd] = warcDate.slice(0, 10).split('-');
  return `${segment(appid)}/${segment(crawlid)}/${yyyy}/${mm}/${dd}/`;
}

/** `<folder><topic>-<partition>-<firstOffset>`: the stem every object of one group of one batch shares. */
export function groupStem(folder: string, topic: string, partition: number, firstOffset: number): string {
  return `${folder}${segment(topic)}-${partition}-${String(firstOffset).padStart(OFFSET_DIGITS, '0')}`;
}

export const warcKey = (stem: string, part: number) => `${stem}-${part}.warc.gz`;
export const cdxjKey = (stem: string, part: number) => `${stem}-${part}.cdxj`;
export const jsonlKey = (stem: string) => `${stem}.jsonl.gz`;
/** The prefix of the numbered files of a stem (and of nothing else: the next character after a stem is `-` or `.`). */
export const partsPrefix = (stem: string) => `${stem}-`;

/** The last segment of a key. */
export function basename(key: string): string {
  return key.slice(key.lastIndexOf('/') + 1);
}
