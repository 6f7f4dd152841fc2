/**
 * How the local runtime decides what it uses LocalStack for (localstack/runtime/local-aws.ts), what a crawler worker
 * is told about its body store (crawler-workers.ts `envOf`), the AWS client settings for an emulator
 * (functions/shared/aws.ts), and the `local`/`demo` options that override the variables for one run.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { addLocalAwsOptions, applyLocalAwsOptions } from '../../cli/local-aws-options.ts';
import { awsClientSettings, s3ClientSettings } from '../../functions/shared/aws.ts';
import { loadConfig } from '../../lib/config/index.ts';
import { envOf } from '../../localstack/runtime/crawler-workers.ts';
import { bodyStoreEnv, describeBodyStore, LOCAL_BODY_BUCKET, localAwsOf } from '../../localstack/runtime/local-aws.ts';

const defaults = loadConfig({ CRAWL_SERVICES_DIR: '/srv/services' });

describe('localAwsOf', () => {
  it('by default uses the LocalStack of services up, bodies to the crawl-cluster-bodies bucket', () => {
    expect(localAwsOf(defaults)).toEqual({
      endpoint: 'http://127.0.0.1:4566',
      region: 'us-east-1',
      bodyBucket: LOCAL_BODY_BUCKET,
    });
  });

  it('follows CRAWL_LOCALSTACK_PORT, AWS_ENDPOINT_URL, BODY_STORE_BUCKET and LOCAL_BODY_STORE', () => {
    expect(localAwsOf({ ...defaults, CRAWL_LOCALSTACK_PORT: 14566 })?.endpoint).toBe('http://127.0.0.1:14566');
    expect(localAwsOf({ ...defaults, AWS_ENDPOINT_URL: 'http://10.0.0.5:4566' })?.endpoint).toBe(
      'http://10.0.0.5:4566',
    );
    expect(localAwsOf({ ...defaults, BODY_STORE_BUCKET: 'mine' })?.bodyBucket).toBe('mine');
    expect(localAwsOf({ ...defaults, LOCAL_BODY_STORE: 'dir' })?.bodyBucket).toBeUndefined();
  });

  it('is undefined with CRAWL_LOCALSTACK=false', () => {
    expect(localAwsOf({ ...defaults, CRAWL_LOCALSTACK: false })).toBeUndefined();
  });
});

describe('a crawler worker body store (envOf)', () => {
  const storeOf = (vars: typeof defaults) => {
    const env = envOf(vars, { BODY_STORE_DIR: 'from-the-shell', PATH: '/bin' });
    return { bucket: env.BODY_STORE_BUCKET, dir: env.BODY_STORE_DIR, endpoint: env.AWS_ENDPOINT_URL };
  };

  it('is the bucket in LocalStack by default, with its endpoint', () => {
    expect(storeOf(defaults)).toMatchObject({ bucket: LOCAL_BODY_BUCKET, endpoint: 'http://127.0.0.1:4566' });
    expect(describeBodyStore(defaults)).toBe('s3://crawl-cluster-bodies/ (LocalStack http://127.0.0.1:4566)');
  });

  it('is <services dir>/bodies or BODY_STORE_DIR with LOCAL_BODY_STORE=dir, even when BODY_STORE_BUCKET is set', () => {
    const dir = { ...defaults, LOCAL_BODY_STORE: 'dir' as const, BODY_STORE_BUCKET: 'set-for-aws' };
    expect(storeOf(dir)).toMatchObject({ bucket: '', dir: '/srv/services/bodies' });
    expect(storeOf({ ...dir, BODY_STORE_DIR: '/tmp/b' })).toMatchObject({ bucket: '', dir: '/tmp/b' });
    expect(describeBodyStore(dir)).toBe('directory /srv/services/bodies');
  });

  it('without LocalStack is BODY_STORE_BUCKET when set (as before), else a directory', () => {
    const off = { ...defaults, CRAWL_LOCALSTACK: false };
    expect(storeOf(off)).toMatchObject({ bucket: '', dir: '/srv/services/bodies', endpoint: '' });
    expect(bodyStoreEnv({ ...off, BODY_STORE_BUCKET: 'b', AWS_ENDPOINT_URL: 'http://127.0.0.1:5000' })).toEqual({});
    expect(storeOf({ ...off, BODY_STORE_BUCKET: 'b', AWS_ENDPOINT_URL: 'http://127.0.0.1:5000' })).toMatchObject({
      bucket: 'b',
      endpoint: 'http://127.0.0.1:5000',
    });
  });
});

describe('AWS client settings', () => {
  it('on AWS are the region only: the default credential chain and endpoints apply', () => {
    expect(awsClientSettings(defaults)).toEqual({ region: 'us-east-1' });
    expect(s3ClientSettings(defaults)).toEqual({ region: 'us-east-1' });
  });

  it('for an emulator name its endpoint, its dummy key, and path-style S3 addresses', () => {
    const vars = { ...defaults, AWS_ENDPOINT_URL: 'http://127.0.0.1:4566', AWS_REGION: 'eu-west-1' };
    const base = {
      region: 'eu-west-1',
      endpoint: 'http://127.0.0.1:4566',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    };
    expect(awsClientSettings(vars)).toEqual(base);
    expect(s3ClientSettings(vars)).toEqual({ ...base, forcePathStyle: true });
  });

  it('AWS_ENDPOINT_URL must be an http(s) origin', () => {
    expect(() => loadConfig({ AWS_ENDPOINT_URL: 'localhost:4566' })).toThrow(/^AWS_ENDPOINT_URL: /);
    expect(loadConfig({ AWS_ENDPOINT_URL: 'https://s3.example.test/' }).AWS_ENDPOINT_URL).toBe(
      'https://s3.example.test/',
    );
  });
});

describe('local and demo options', () => {
  const parse = (args: string[]) => {
    const command = addLocalAwsOptions(
      new Command('local').exitOverride().configureOutput({ writeErr: () => undefined }),
    );
    command.parse(args, { from: 'user' });
    return command.opts<{ bodyStore?: 's3' | 'dir'; localstack: boolean }>();
  };

  it('leave the variables alone by default', () => {
    expect(applyLocalAwsOptions(defaults, parse([]))).toEqual(defaults);
  });

  it('--body-store dir and --no-localstack override LOCAL_BODY_STORE and CRAWL_LOCALSTACK for the run', () => {
    expect(applyLocalAwsOptions(defaults, parse(['--body-store', 'dir']))).toMatchObject({ LOCAL_BODY_STORE: 'dir' });
    expect(applyLocalAwsOptions(defaults, parse(['--no-localstack']))).toMatchObject({ CRAWL_LOCALSTACK: false });
  });

  it('--body-store takes only s3 or dir', () => {
    expect(() => parse(['--body-store', 'ftp'])).toThrow(/Allowed choices are s3, dir/);
  });
});
