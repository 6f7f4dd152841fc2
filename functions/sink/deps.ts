/**
 * What the sink function writes with, from the configuration: the formats, the output (`SINK_URI`: `s3://` or
 * `file://`) and the reader of bodies in the body store. Created once per container (module scope, on first use);
 * the local runtime builds its own with LocalStack's endpoint.
 */
import { fileURLToPath } from 'node:url';
import { S3Client } from '@aws-sdk/client-s3';
import type { Variables } from '../../lib/config/index.ts';
import { ConfigError } from '../../lib/errors.ts';
import type { Log } from '../../lib/ports.ts';
import { fileOutput } from '../../lib/sink/output.ts';
import { bodyReader } from '../../lib/sink/page-body.ts';
import { s3BodyReader, s3Output } from '../../lib/sink/s3-output.ts';
import { parseFormats, type SinkOptions } from '../../lib/sink/sink.ts';
import { type AwsClientSettings, s3ClientSettings } from '../shared/aws.ts';

export interface SinkDeps {
  options: SinkOptions;
  /** Closes the S3 client (local runtime shutdown; Lambda never calls it). */
  close(): void;
}

/**
 * The sink's options from the variables.
 * @param s3 the S3 client's settings (the local runtime passes LocalStack's) @default from AWS_REGION, AWS_ENDPOINT_URL
 * @throws ConfigError when SINK_FORMATS names formats but SINK_URI is empty
 */
export function createSinkDeps(
  vars: Variables,
  log: Log,
  s3: AwsClientSettings & { forcePathStyle?: boolean } = s3ClientSettings(vars),
): SinkDeps {
  const formats = parseFormats(vars.SINK_FORMATS);
  const uri = vars.SINK_URI;
  if (formats.size > 0 && uri === '') throw new ConfigError('SINK_URI', 'is required when SINK_FORMATS is set');
  const client = new S3Client(s3);
  const output = uri.startsWith('s3://') ? s3Output(client, uri) : fileOutput(fileURLToPath(uri || 'file:///'));
  return {
    options: {
      formats,
      output,
      bodies: bodyReader(s3BodyReader(client)),
      warcMaxBytes: vars.SINK_WARC_MAX_BYTES,
      log,
    },
    close: () => client.destroy(),
  };
}
