import { beforeAll, describe, expect, it } from 'vitest';
import { allStatements, logicalIdOf, resourceOf, type Synthesized, synthStack } from './synth.ts';

let s: Synthesized;
beforeAll(() => {
  s = synthStack({ bodyRetentionDays: 14 });
});

describe('S3', () => {
  it('blocks public access, encrypts and owns every object in every bucket', () => {
    // Bodies, failed batches, access logs, and the sink's outputs (test/cdk/sink.test.ts).
    s.template.resourceCountIs('AWS::S3::Bucket', 4);
    s.template.allResourcesProperties('AWS::S3::Bucket', {
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
    });
  });

  it('denies every request that is not TLS', () => {
    const policies = Object.values(s.template.findResources('AWS::S3::BucketPolicy'));
    expect(policies).toHaveLength(4);
    for (const p of policies) {
      expect(p.Properties.PolicyDocument.Statement).toContainEqual(
        expect.objectContaining({
          Effect: 'Deny',
          Action: 's3:*',
          Principal: { AWS: '*' },
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        }),
      );
    }
  });

  it('expires bodies after the configured days and logs access to the log bucket', () => {
    const bodies = resourceOf(s, s.stack.storage.bodies).Properties;
    expect(bodies.LifecycleConfiguration.Rules).toContainEqual(
      expect.objectContaining({ ExpirationInDays: 14, Status: 'Enabled' }),
    );
    expect(bodies.LoggingConfiguration.DestinationBucketName).toEqual({
      Ref: logicalIdOf(s, s.stack.storage.accessLogs),
    });
  });

  it('names the body bucket to the crawlers as BODY_STORE_BUCKET, lets them only write to it and the sink only read it', () => {
    const task = resourceOf(s, s.stack.fleet.taskDefinition).Properties;
    const env = task.ContainerDefinitions[0].Environment as { Name: string; Value: unknown }[];
    expect(env).toContainEqual({ Name: 'BODY_STORE_BUCKET', Value: { Ref: logicalIdOf(s, s.stack.storage.bodies) } });
    const bucket = logicalIdOf(s, s.stack.storage.bodies);
    const onBodies = allStatements(s).filter((st) => JSON.stringify(st.Resource).includes(`"${bucket}"`));
    const sinkPolicy = s.stack.sink?.fn.role.node.tryFindChild('DefaultPolicy');
    const sinkOwner = sinkPolicy ? logicalIdOf(s, sinkPolicy) : undefined;
    const actions = (sink: boolean) =>
      onBodies
        .filter((st) => (st.owner === sinkOwner) === sink)
        .flatMap((st) => st.Action)
        .sort();
    expect(actions(false)).toEqual(['s3:AbortMultipartUpload', 's3:PutObject']);
    expect(actions(true)).toEqual(['s3:GetObject', 's3:ListBucket']);
  });
});
