/**
 * S3: the body store for pages too large for a Kafka message (BODY_STORE_BUCKET), the failed-batch bucket the
 * MSK event sources write unprocessable batches to (for inspection and replay), and the access-log bucket both
 * log to. All private, encrypted, TLS-only, expiring.
 */
import { Duration } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';

/** Every bucket of the stack: private, encrypted, TLS only, owned by the account. */
export const PRIVATE_BUCKET = {
  blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
  encryption: s3.BucketEncryption.S3_MANAGED,
  enforceSSL: true,
  objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
} satisfies s3.BucketProps;

/** The failed-batch bucket's S3 request metrics filter (the whole bucket): the FailedBatches alarm watches it. */
export const FAILED_BATCH_METRICS_ID = 'FailedBatchWrites';

export interface StorageProps {
  bodyRetentionDays: number;
  failedBatchRetentionDays: number;
}

export class Storage extends Construct {
  readonly bodies: s3.Bucket;
  readonly failedBatches: s3.Bucket;
  readonly accessLogs: s3.Bucket;

  constructor(scope: Construct, id: string, props: StorageProps) {
    super(scope, id);
    this.accessLogs = new s3.Bucket(this, 'AccessLogs', {
      ...PRIVATE_BUCKET,
      lifecycleRules: [{ expiration: Duration.days(90) }],
    });
    this.bodies = new s3.Bucket(this, 'Bodies', {
      ...PRIVATE_BUCKET,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: 'bodies/',
      lifecycleRules: [
        { expiration: Duration.days(props.bodyRetentionDays), abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
    });
    this.failedBatches = new s3.Bucket(this, 'FailedBatches', {
      ...PRIVATE_BUCKET,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: 'failed-batches/',
      lifecycleRules: [{ expiration: Duration.days(props.failedBatchRetentionDays) }],
      // Request metrics (1-minute, billed as custom metrics): a PutRequests alarm says when a batch lands here, with
      // one notification for a whole outage rather than one per object.
      metrics: [{ id: FAILED_BATCH_METRICS_ID }],
    });
  }
}
