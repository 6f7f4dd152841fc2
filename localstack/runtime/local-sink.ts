/**
 * The sink in `local` (docs/outputs.md): the same handler Lambda runs, fed from its own consumer group on
 * `<p>.crawled_firehose`, with the event source's batching turned into the sink's flushes: an event is written once it
 * has waited SINK_FLUSH_S, once its messages reach {@link LOCAL_SINK_MAX_BATCH_BYTES} (or SINK_WARC_MAX_BYTES, if
 * smaller), and at stop. Offsets are committed only after the handler wrote the objects, so a `local` killed mid-flush
 * delivers the same records again from the same first offsets, which rewrite the same object names.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { s3ClientSettings } from '../../functions/shared/aws.ts';
import { createSinkDeps, type SinkDeps } from '../../functions/sink/deps.ts';
import type { Variables } from '../../lib/config/index.ts';
import type { Log } from '../../lib/ports.ts';
import { parseFormats } from '../../lib/sink/sink.ts';
import { servicesLayout } from '../services/layout.ts';
import type { LocalAws } from './local-aws.ts';
import type { RuntimeLog } from './log.ts';

/** The most message bytes the local sink holds in one event (the whole event is in memory while it is written). */
export const LOCAL_SINK_MAX_BATCH_BYTES = 64 * 1024 * 1024;

/** Most records in one local sink event: high enough that time and bytes decide. */
export const LOCAL_SINK_MAX_BATCH_RECORDS = 100_000;

/** Where `local` writes when SINK_URI is empty: `file://<services dir>/outputs/`. */
export function localSinkUri(vars: Variables): string {
  return vars.SINK_URI || pathToFileURL(join(servicesLayout(vars).dir, 'outputs')).href;
}

/** Whether `local` runs the sink (SINK_FORMATS names a format). */
export function sinkEnabled(vars: Variables): boolean {
  return parseFormats(vars.SINK_FORMATS).size > 0;
}

/** The sink's options for `local`: `body_ref`s in LocalStack's S3 are read there. */
export function localSinkDeps(vars: Variables, log: RuntimeLog, aws: LocalAws | undefined): SinkDeps {
  const sinkLog: Log = {
    info: (message, fields) => log('info', message, fields),
    warn: (message, fields) => log('warn', message, fields),
    error: (message, fields) => log('error', message, fields),
  };
  const s3 = aws
    ? s3ClientSettings({ AWS_REGION: aws.region, AWS_ENDPOINT_URL: aws.endpoint })
    : s3ClientSettings(vars);
  return createSinkDeps({ ...vars, SINK_URI: localSinkUri(vars) }, sinkLog, s3);
}
