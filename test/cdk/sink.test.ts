/**
 * The archive sink on AWS (cdk/constructs/sink.ts, docs/outputs.md): the sink function on an MSK event source on
 * `<p>.crawled_firehose`, writing JSON lines by default to an outputs bucket of the stack whose lifecycle ages the
 * files to cheaper classes; `sinkFormats`, `sinkBucket`/`sinkPrefix` and the lifecycle days come from context.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { VARIABLES } from '../../lib/config/variables.ts';
import { allStatements, type Cfn, logicalIdOf, resourceOf, type Synthesized, synthStack } from './synth.ts';

let s: Synthesized;
beforeAll(() => {
  s = synthStack({}, { nag: true });
});

function sinkOf(syn: Synthesized) {
  const sink = syn.stack.sink;
  if (!sink) throw new Error('no sink');
  return sink;
}

function envOf(syn: Synthesized): Record<string, unknown> {
  return resourceOf(syn, sinkOf(syn).fn.function).Properties.Environment.Variables;
}

function mappingOf(syn: Synthesized): Cfn {
  const list = Object.values(
    syn.template.findResources('AWS::Lambda::EventSourceMapping', {
      Properties: { FunctionName: { Ref: logicalIdOf(syn, sinkOf(syn).fn.function) } },
    }),
  );
  expect(list).toHaveLength(1);
  return list[0]?.Properties;
}

/** The alarms on the sink. */
function sinkAlarms(syn: Synthesized): Cfn[] {
  return Object.values(syn.template.findResources('AWS::CloudWatch::Alarm'))
    .map((a) => a.Properties)
    .filter((p) => /archive sink/.test(String(p.AlarmDescription)));
}

/** The allowed statements of the sink function's role and policies. */
function sinkStatements(syn: Synthesized) {
  const sink = sinkOf(syn);
  const owners = new Set([
    logicalIdOf(syn, sink.fn.role),
    ...sink.fn.role.node.children
      .filter((c) => c.node.id === 'DefaultPolicy')
      .map((c) => logicalIdOf(syn, c.node.defaultChild ?? c)),
  ]);
  return allStatements(syn).filter((st) => owners.has(st.owner));
}

describe('sink', () => {
  it('deploys the sink function writing JSON lines to the outputs bucket of the stack, cdk-nag clean', () => {
    s.app.synth();
    const bucket = logicalIdOf(s, sinkOf(s).bucket as NonNullable<ReturnType<typeof sinkOf>['bucket']>);
    expect(envOf(s)).toMatchObject({
      SINK_FORMATS: 'jsonl',
      SINK_URI: { 'Fn::Join': ['', ['s3://', { Ref: bucket }, '/']] },
      POWERTOOLS_SERVICE_NAME: 'sink',
    });
    const fn = resourceOf(s, sinkOf(s).fn.function).Properties;
    expect(fn.Timeout).toBe(300);
    expect(fn.MemorySize).toBe(1024);
    expect(fn.Handler).toBe('index.handler');
    const outputs = s.template.toJSON().Outputs;
    expect(outputs.SinkUri.Value).toEqual({ 'Fn::Join': ['', ['s3://', { Ref: bucket }, '/']] });
  });

  it('reads <prefix>.crawled_firehose as group <prefix>.sink with the monitors’ error handling and failed-batch bucket', () => {
    const m = mappingOf(s);
    expect(m.Topics).toEqual(['demo.crawled_firehose']);
    expect(m.AmazonManagedKafkaEventSourceConfig).toEqual({ ConsumerGroupId: 'demo.sink' });
    expect(m.StartingPosition).toBe('TRIM_HORIZON');
    expect(m.BatchSize).toBe(10_000);
    expect(m.MaximumBatchingWindowInSeconds).toBe(VARIABLES.SINK_FLUSH_S.default);
    expect(m.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
    expect(m.ProvisionedPollerConfig).toEqual({
      MinimumPollers: 1,
      MaximumPollers: 4,
      PollerGroupName: 'CrawlCluster-monitors',
    });
    expect(m.MaximumRetryAttempts).toBe(10);
    expect(m.BisectBatchOnFunctionError).toBe(true);
    const failed = logicalIdOf(s, s.stack.storage.failedBatches);
    expect(m.DestinationConfig).toEqual({ OnFailure: { Destination: { 'Fn::GetAtt': [failed, 'Arn'] } } });
    const fn = s.template.toJSON().Resources[logicalIdOf(s, sinkOf(s).fn.function)];
    expect(fn.DependsOn).toContain(logicalIdOf(s, s.stack.kafka.topicsResource));
  });

  it('ages the outputs to Standard-IA at 30 days and Glacier Instant Retrieval at 90, kept for good, logged', () => {
    const b = resourceOf(s, sinkOf(s).bucket as NonNullable<ReturnType<typeof sinkOf>['bucket']>).Properties;
    expect(b.LifecycleConfiguration.Rules).toEqual([
      {
        Id: 'ArchiveAging',
        Status: 'Enabled',
        AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
        Transitions: [
          { StorageClass: 'STANDARD_IA', TransitionInDays: 30 },
          { StorageClass: 'GLACIER_IR', TransitionInDays: 90 },
        ],
      },
    ]);
    expect(b.LoggingConfiguration).toEqual({
      DestinationBucketName: { Ref: logicalIdOf(s, s.stack.storage.accessLogs) },
      LogFilePrefix: 'outputs/',
    });
    expect(b.PublicAccessBlockConfiguration.BlockPublicAcls).toBe(true);
    // An archive outlives the stack.
    const raw = s.template.toJSON().Resources[logicalIdOf(s, sinkOf(s).bucket as never)];
    expect(raw.DeletionPolicy).toBe('Retain');
    const expiring = synthStack({ sinkIaDays: 0, sinkGlacierDays: 60, sinkExpireDays: 400 });
    const rule = resourceOf(expiring, sinkOf(expiring).bucket as never).Properties.LifecycleConfiguration.Rules[0];
    expect(rule.Transitions).toEqual([{ StorageClass: 'GLACIER_IR', TransitionInDays: 60 }]);
    expect(rule.ExpirationInDays).toBe(400);
  });

  it('lets the function write, list and remove its outputs, read bodies, and consume its topic only', () => {
    const bucket = logicalIdOf(s, sinkOf(s).bucket as never);
    const bodies = logicalIdOf(s, s.stack.storage.bodies);
    const failed = logicalIdOf(s, s.stack.storage.failedBatches);
    const statements = sinkStatements(s);
    const on = (id: string) =>
      statements
        .filter((st) => JSON.stringify(st.Resource).includes(`"${id}"`))
        .flatMap((st) => st.Action)
        .sort();
    expect(on(bucket)).toEqual(['s3:DeleteObject', 's3:ListBucket', 's3:PutObject']);
    expect(on(bodies)).toEqual(['s3:GetObject', 's3:ListBucket']);
    expect(on(failed)).toEqual(['s3:ListBucket', 's3:PutObject']);
    const actions = statements.flatMap((st) => st.Action);
    // No S3 right on anything but these three buckets.
    for (const st of statements.filter((x) => x.Action.some((a) => a.startsWith('s3:'))))
      expect(JSON.stringify(st.Resource)).toMatch(new RegExp(`"(${bucket}|${bodies}|${failed})"`));
    expect(actions).toContain('kafka-cluster:ReadData');
    expect(actions.some((a) => a.startsWith('kafka-cluster:Write'))).toBe(false);
    expect(actions.some((a) => a.startsWith('secretsmanager:'))).toBe(false);
    const kafkaResources = JSON.stringify(
      statements.filter((st) => st.Action.some((a) => a.startsWith('kafka-cluster:'))).map((st) => st.Resource),
    );
    expect(kafkaResources).toContain('demo.crawled_firehose');
    expect(kafkaResources).toContain('demo.sink');
    expect(kafkaResources).not.toContain('demo.incoming');
    expect(JSON.stringify(resourceOf(s, sinkOf(s).fn.role).Properties.ManagedPolicyArns ?? [])).not.toContain(
      'AWSLambdaMSKExecutionRole',
    );
  });

  it('takes the formats from sinkFormats, and with none deploys no function, event source or bucket', () => {
    const both = synthStack({ sinkFormats: 'warc,jsonl' });
    expect(envOf(both).SINK_FORMATS).toBe('warc,jsonl');
    // WARC files are held whole until written: closed at an eighth of the function's 1,024 MB unless runtimeEnv says.
    expect(envOf(both).SINK_WARC_MAX_BYTES).toBe(String(128 * 1024 * 1024));
    const sized = synthStack({ sinkFormats: 'warc', runtimeEnv: { SINK_WARC_MAX_BYTES: '100000000' } });
    expect(envOf(sized).SINK_WARC_MAX_BYTES).toBe('100000000');
    const none = synthStack({ sinkFormats: 'none' });
    expect(none.stack.sink).toBeUndefined();
    none.template.resourceCountIs('AWS::Lambda::EventSourceMapping', 2);
    expect(none.template.toJSON().Outputs.SinkUri).toBeUndefined();
    expect(JSON.stringify(none.template.toJSON())).not.toContain('SINK_FORMATS');
    expect(sinkAlarms(none)).toEqual([]);
    expect(() => synthStack({ sinkFormats: 'parquet' })).toThrow(/sinkFormats/);
    expect(() => synthStack({ runtimeEnv: { SINK_URI: 's3://elsewhere/' } })).toThrow(/SINK_URI is set by the stack/);
  });

  it('writes under a prefix of an existing bucket, with ListBucket limited to that prefix and no bucket of its own', () => {
    const c = synthStack({ sinkBucket: 'my-archive', sinkPrefix: 'crawls/2026' }, { nag: true });
    c.app.synth();
    expect(sinkOf(c).bucket).toBeUndefined();
    expect(envOf(c).SINK_URI).toBe('s3://my-archive/crawls/2026/');
    const statements = sinkStatements(c);
    const write = statements.find(
      (st) => st.Action.includes('s3:PutObject') && JSON.stringify(st).includes('my-archive'),
    );
    expect(JSON.stringify(write?.Resource)).toContain(':s3:::my-archive/crawls/2026/*');
    const raw = c.template.toJSON().Resources;
    const list = Object.values(raw as Cfn)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .flatMap((r) => r.Properties.PolicyDocument.Statement)
      .find((st: Cfn) => st.Action === 's3:ListBucket' && JSON.stringify(st.Resource).includes('my-archive'));
    expect(list.Condition).toEqual({ StringLike: { 's3:prefix': ['crawls/2026/*'] } });
    c.template.resourceCountIs('AWS::S3::Bucket', 3);
    expect(synthStack({ sinkBucket: 'my-archive' }).stack.sink?.uri).toBe('s3://my-archive/crawl-cluster/');
  });

  it('refuses lifecycle days S3 would refuse, and names of buckets and prefixes that are not', () => {
    expect(() => synthStack({ sinkIaDays: 10 })).toThrow(/sinkIaDays/);
    expect(() => synthStack({ sinkIaDays: 30, sinkGlacierDays: 45 })).toThrow(/sinkGlacierDays/);
    expect(() => synthStack({ sinkExpireDays: 60 })).toThrow(/sinkExpireDays/);
    expect(() => synthStack({ sinkBucket: 'Not_A_Bucket' })).toThrow(/sinkBucket/);
    expect(() => synthStack({ sinkBucket: 'my-archive', sinkPrefix: 'a/../b' })).toThrow(/sinkPrefix/);
  });

  it('pages someone when the sink keeps failing or falls behind: one alarm on its errors and its offset lag', () => {
    const alarms = sinkAlarms(s);
    expect(alarms).toHaveLength(1);
    const alarm = alarms[0] as Cfn;
    const stats = (alarm.Metrics as Cfn[]).filter((m) => m.MetricStat);
    // Two billed metrics, within CloudWatch's 10 a metric math alarm.
    expect(stats.map((m) => m.MetricStat.Metric.MetricName).sort()).toEqual(['Errors', 'OffsetLag']);
    const fn = { Ref: logicalIdOf(s, sinkOf(s).fn.function) };
    for (const m of stats) expect(m.MetricStat.Metric.Dimensions).toEqual([{ Name: 'FunctionName', Value: fn }]);
    expect((alarm.Metrics as Cfn[]).find((m) => m.Expression)?.Expression).toBe(
      'IF(errors >= 3 OR lag > 100000, 1, 0)',
    );
    expect(alarm.AlarmActions).toHaveLength(1);
    expect([alarm.EvaluationPeriods, alarm.DatapointsToAlarm]).toEqual([3, 2]);
  });

  it('says MSK_EVENT_SOURCE_MODE to the function when the event sources are on demand', () => {
    const c = synthStack({ eventSourceMode: 'on-demand' });
    expect(envOf(c).MSK_EVENT_SOURCE_MODE).toBe('on-demand');
    expect(envOf(s).MSK_EVENT_SOURCE_MODE).toBeUndefined();
  });
});
