/**
 * What the local runtime uses LocalStack for (docs/local.md "Local services"), in place of the AWS services of the stack:
 * - bodies over the Kafka message limit go to an S3 bucket there (created when missing), `body_ref` `s3://...`,
 *   unless LOCAL_BODY_STORE=dir keeps them in a directory;
 * - the stats function's metrics go to its CloudWatch (cloudwatch-stats.ts);
 * - the Redis password may come from its Secrets Manager (LOCAL_REDIS_PASSWORD_SECRET), read once at start.
 *
 * With CRAWL_LOCALSTACK=false none of this: bodies go to a directory and metrics are off. When LocalStack is used
 * but does not answer, the cluster does not start, and the error says how to start it or how to run without it.
 */

import { join } from 'node:path';
import { CloudWatchClient, ListMetricsCommand } from '@aws-sdk/client-cloudwatch';
import { type BucketLocationConstraint, CreateBucketCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { awsClientSettings, s3ClientSettings } from '../../functions/shared/aws.ts';
import { METRICS_NAMESPACE } from '../../functions/shared/observability.ts';
import type { Variables } from '../../lib/config/index.ts';
import { ConfigError, InfrastructureError } from '../../lib/errors.ts';
import { servicesLayout } from '../services/layout.ts';
import { cloudWatchStatsPublisher, type StatsPublisher } from './cloudwatch-stats.ts';

/** The bucket `local` keeps bodies in when BODY_STORE_BUCKET names none. */
export const LOCAL_BODY_BUCKET = 'crawl-cluster-bodies';

/** LocalStack as the local runtime uses it. */
export interface LocalAws {
  /** AWS_ENDPOINT_URL, else the LocalStack of `services up` (127.0.0.1:CRAWL_LOCALSTACK_PORT). */
  endpoint: string;
  region: string;
  /** The bucket bodies go to; undefined when they go to a directory (LOCAL_BODY_STORE=dir). */
  bodyBucket: string | undefined;
}

type AwsVars = Pick<
  Variables,
  | 'CRAWL_LOCALSTACK'
  | 'CRAWL_LOCALSTACK_PORT'
  | 'AWS_ENDPOINT_URL'
  | 'AWS_REGION'
  | 'LOCAL_BODY_STORE'
  | 'BODY_STORE_BUCKET'
>;

/** How the local runtime uses LocalStack with these variables; undefined when it does not (CRAWL_LOCALSTACK=false). */
export function localAwsOf(vars: AwsVars): LocalAws | undefined {
  if (!vars.CRAWL_LOCALSTACK) return undefined;
  return {
    endpoint: vars.AWS_ENDPOINT_URL || `http://127.0.0.1:${vars.CRAWL_LOCALSTACK_PORT}`,
    region: vars.AWS_REGION,
    bodyBucket: vars.LOCAL_BODY_STORE === 's3' ? vars.BODY_STORE_BUCKET || LOCAL_BODY_BUCKET : undefined,
  };
}

/**
 * The body store variables a local crawler worker gets: with LocalStack and LOCAL_BODY_STORE=s3 a bucket there;
 * otherwise BODY_STORE_DIR or `<services dir>/bodies` (without LocalStack, a BODY_STORE_BUCKET the user set still
 * wins, with AWS_ENDPOINT_URL as it is).
 */
export function bodyStoreEnv(
  vars: Variables,
): Partial<Record<'BODY_STORE_BUCKET' | 'BODY_STORE_DIR' | 'AWS_ENDPOINT_URL', string>> {
  const aws = localAwsOf(vars);
  const dir = vars.BODY_STORE_DIR || join(servicesLayout(vars).dir, 'bodies');
  if (aws?.bodyBucket) return { BODY_STORE_BUCKET: aws.bodyBucket, AWS_ENDPOINT_URL: aws.endpoint };
  if (aws) return { BODY_STORE_BUCKET: '', BODY_STORE_DIR: dir };
  return vars.BODY_STORE_BUCKET ? {} : { BODY_STORE_DIR: dir };
}

/** One line for the log: where bodies over the message limit go. */
export function describeBodyStore(vars: Parameters<typeof bodyStoreEnv>[0]): string {
  const env = bodyStoreEnv(vars);
  const bucket = env.BODY_STORE_BUCKET ?? vars.BODY_STORE_BUCKET;
  if (bucket) return `s3://${bucket}/${env.AWS_ENDPOINT_URL ? ` (LocalStack ${env.AWS_ENDPOINT_URL})` : ''}`;
  return `directory ${env.BODY_STORE_DIR ?? vars.BODY_STORE_DIR}`;
}

const CLIENT_TIMEOUTS = { requestHandler: { connectionTimeout: 3000, requestTimeout: 10_000 } } as const;

function settingsOf(aws: LocalAws) {
  return awsClientSettings({ AWS_REGION: aws.region, AWS_ENDPOINT_URL: aws.endpoint });
}

/** The error that says LocalStack does not answer, and what to do about it. */
function unavailable(aws: LocalAws, error: unknown): InfrastructureError {
  const why = (error as Error).message || (error as Error).name || String(error);
  return new InfrastructureError(
    `LocalStack does not answer at ${aws.endpoint} (${why}). Start it with \`crawl-cluster services up\` ` +
      '(CRAWL_LOCALSTACK_PORT moves it), or run without it: `--no-localstack` or CRAWL_LOCALSTACK=false ' +
      '(bodies to a directory, no metrics)',
    { cause: error },
  );
}

/** Creates the bucket unless it exists. */
async function ensureBucket(s3: S3Client, aws: LocalAws, bucket: string): Promise<void> {
  try {
    try {
      await s3.send(new HeadBucketCommand({ Bucket: bucket }));
      return;
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status !== 404) throw error;
    }
    // us-east-1 takes no location constraint; every other region needs its own.
    const location = { LocationConstraint: aws.region as BucketLocationConstraint };
    await s3.send(
      new CreateBucketCommand({
        Bucket: bucket,
        ...(aws.region === 'us-east-1' ? {} : { CreateBucketConfiguration: location }),
      }),
    );
  } catch (error) {
    // Another `local` may have made it meanwhile.
    if ((error as Error).name === 'BucketAlreadyOwnedByYou') return;
    throw new InfrastructureError(
      `cannot create the body bucket ${bucket} in LocalStack at ${aws.endpoint}: ${(error as Error).message || (error as Error).name}`,
      { cause: error },
    );
  }
}

/** LocalStack for a running local cluster: the stats publisher, and the clients to close. */
export interface LocalAwsRuntime {
  aws: LocalAws;
  stats: StatsPublisher;
  close(): void;
}

/**
 * Checks that LocalStack answers, creates the body bucket when bodies go to S3, and returns the stats publisher.
 * @param namespace the metrics' CloudWatch namespace (tests use one of their own) @default METRICS_NAMESPACE
 * @throws InfrastructureError naming the endpoint when LocalStack does not answer
 */
export async function startLocalAws(aws: LocalAws, namespace = METRICS_NAMESPACE): Promise<LocalAwsRuntime> {
  const cloudwatch = new CloudWatchClient({ ...settingsOf(aws), maxAttempts: 2, ...CLIENT_TIMEOUTS });
  const s3 = new S3Client({
    ...s3ClientSettings({ AWS_REGION: aws.region, AWS_ENDPOINT_URL: aws.endpoint }),
    maxAttempts: 2,
    ...CLIENT_TIMEOUTS,
  });
  const close = () => {
    cloudwatch.destroy();
    s3.destroy();
  };
  try {
    try {
      await cloudwatch.send(new ListMetricsCommand({ Namespace: namespace, MetricName: 'Backlog' }));
    } catch (error) {
      throw unavailable(aws, error);
    }
    if (aws.bodyBucket) await ensureBucket(s3, aws, aws.bodyBucket);
  } catch (error) {
    close();
    throw error;
  }
  return { aws, stats: cloudWatchStatsPublisher(cloudwatch, namespace), close };
}

/**
 * The variables with REDIS_PASSWORD read from LocalStack's Secrets Manager when LOCAL_REDIS_PASSWORD_SECRET names a
 * secret (its SecretString is the password); unchanged otherwise.
 * @throws ConfigError when a secret is named but LocalStack is off; InfrastructureError when it cannot be read
 */
export async function withLocalSecrets(vars: Variables): Promise<Variables> {
  const name = vars.LOCAL_REDIS_PASSWORD_SECRET;
  if (!name) return vars;
  const aws = localAwsOf(vars);
  if (!aws) throw new ConfigError('LOCAL_REDIS_PASSWORD_SECRET', 'needs LocalStack (CRAWL_LOCALSTACK=true)');
  const client = new SecretsManagerClient({ ...settingsOf(aws), maxAttempts: 2, ...CLIENT_TIMEOUTS });
  try {
    const secret = await client.send(new GetSecretValueCommand({ SecretId: name }));
    if (secret.SecretString === undefined) {
      throw new ConfigError('LOCAL_REDIS_PASSWORD_SECRET', `secret ${JSON.stringify(name)} has no string value`);
    }
    return { ...vars, REDIS_PASSWORD: secret.SecretString };
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    if ((error as Error).name === 'ResourceNotFoundException') {
      throw new ConfigError(
        'LOCAL_REDIS_PASSWORD_SECRET',
        `no secret ${JSON.stringify(name)} in LocalStack at ${aws.endpoint}`,
      );
    }
    throw unavailable(aws, error);
  } finally {
    client.destroy();
  }
}
