import { Annotations, Match } from 'aws-cdk-lib/assertions';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { describe, expect, it } from 'vitest';
import { synthStack, validationFindings } from './synth.ts';

const VARIANTS: Record<string, Record<string, unknown>> = {
  default: {},
  'provisioned MSK, cluster-mode cache, public crawler subnets, per-app topics': {
    kafka: 'provisioned',
    cacheClusterMode: true,
    cacheShards: 2,
    crawlerPublicSubnets: true,
    alarmEmail: 'ops@example.com',
    runtimeEnv: { KAFKA_APPID_TOPICS: 'true' },
  },
  'URL Frontier with a TLS listener': {
    urlFrontierCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/0f0e2f2a-1111-2222-3333-444455556666',
  },
  'no URL Frontier': { urlFrontier: false },
};

describe('cdk-nag (AwsSolutions)', () => {
  for (const [name, context] of Object.entries(VARIANTS)) {
    it(`leaves no unacknowledged finding and no error annotation: ${name}`, () => {
      const { app, stack } = synthStack(context, { nag: true });
      const assembly = app.synth();
      expect(validationFindings(assembly.directory)).toEqual([]);
      Annotations.fromStack(stack).hasNoError('*', Match.anyValue());
    });
  }

  it('fails synthesis on a finding nobody acknowledged', () => {
    const { app, stack } = synthStack({}, { nag: true });
    // A bucket without TLS enforcement or access logs.
    new s3.Bucket(stack, 'Careless', { enforceSSL: false });
    expect(() => app.synth()).toThrow(/AwsSolutions-S10/);
  });
});
