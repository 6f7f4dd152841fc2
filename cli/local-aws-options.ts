/**
 * The options `local` and `demo` share about LocalStack (localstack/runtime/local-aws.ts): where bodies over the
 * Kafka message limit go, and whether LocalStack is used at all. Each overrides its variable for the one run.
 */
import { type Command, Option } from 'commander';
import type { Variables } from '../lib/config/index.ts';

export interface LocalAwsOptions {
  /** LOCAL_BODY_STORE for this run. */
  bodyStore?: 's3' | 'dir';
  /** false with `--no-localstack` (CRAWL_LOCALSTACK=false for this run). */
  localstack: boolean;
}

export function addLocalAwsOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--body-store <where>',
        'bodies over the Kafka message limit: s3 (a bucket in LocalStack) or dir (BODY_STORE_DIR, else ' +
          '<services dir>/bodies); default LOCAL_BODY_STORE (s3)',
      ).choices(['s3', 'dir']),
    )
    .option(
      '--no-localstack',
      'run without LocalStack (as CRAWL_LOCALSTACK=false): bodies to a directory, no CloudWatch metrics',
    );
}

/** The variables with the options applied. */
export function applyLocalAwsOptions(vars: Variables, options: LocalAwsOptions): Variables {
  return {
    ...vars,
    ...(options.bodyStore ? { LOCAL_BODY_STORE: options.bodyStore } : {}),
    ...(options.localstack ? {} : { CRAWL_LOCALSTACK: false }),
  };
}
