/**
 * Settings of the AWS SDK clients (S3, CloudWatch, Secrets Manager): the region and, when AWS_ENDPOINT_URL names an
 * emulator (LocalStack locally), its endpoint and the dummy key emulators accept. On AWS AWS_ENDPOINT_URL is empty
 * and the default credential chain applies (the task or function role).
 */
import type { Variables } from '../../lib/config/index.ts';

/** The access key LocalStack expects (it maps it to account 000000000000); any key signs for an emulator. */
const EMULATOR_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' } as const;

export interface AwsClientSettings {
  region: string;
  endpoint?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

export function awsClientSettings(vars: Pick<Variables, 'AWS_REGION' | 'AWS_ENDPOINT_URL'>): AwsClientSettings {
  if (!vars.AWS_ENDPOINT_URL) return { region: vars.AWS_REGION };
  return { region: vars.AWS_REGION, endpoint: vars.AWS_ENDPOINT_URL, credentials: { ...EMULATOR_CREDENTIALS } };
}

/**
 * An S3 client's settings: path-style addresses (`endpoint/bucket/key`) with an emulator, whose endpoint has no
 * per-bucket host names on loopback.
 */
export function s3ClientSettings(
  vars: Pick<Variables, 'AWS_REGION' | 'AWS_ENDPOINT_URL'>,
): AwsClientSettings & { forcePathStyle?: boolean } {
  const settings = awsClientSettings(vars);
  return settings.endpoint ? { ...settings, forcePathStyle: true } : settings;
}
