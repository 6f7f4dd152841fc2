/**
 * The context flags of issue 33, each on its own (docs/cost.md): endpoint zones, pinned zones, MSK monitoring level,
 * on-demand event sources, Container Insights, a prebuilt crawler image, Application Auto Scaling's service-linked
 * role, MSK Serverless only where AWS offers it, gzip page messages by default, the functions' Redis AUTH token in
 * their environment (no Secrets Manager endpoint) and the dashboard.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { firehosePartitionsNeeded } from '../../cdk/kafka-sizing.ts';
import { REPO_ROOT } from '../../cdk/repo-root.ts';
import { readSettings } from '../../cdk/settings.ts';
import { CrawlClusterStack } from '../../cdk/stack.ts';
import { allStatements, type Cfn, logicalIdOf, resourceOf, synthStack } from './synth.ts';

const CDK_CONTEXT = JSON.parse(readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8')).context;

const interfaceEndpoints = (t: Cfn) =>
  Object.values(t.Resources as Record<string, Cfn>).filter(
    (r) => r.Type === 'AWS::EC2::VPCEndpoint' && r.Properties.VpcEndpointType === 'Interface',
  );

describe('context flags', () => {
  it('endpointAzs: interface endpoints in that many zones', () => {
    const one = interfaceEndpoints(synthStack({ endpointAzs: 1 }).template.toJSON());
    expect(one.length).toBe(4);
    for (const e of one) expect(e.Properties.SubnetIds).toHaveLength(1);
    for (const e of interfaceEndpoints(synthStack().template.toJSON())) expect(e.Properties.SubnetIds).toHaveLength(2);
    expect(() => readSettings({ endpointAzs: 3 })).toThrow(/context "endpointAzs"/);
  });

  it('availabilityZones: the VPC in exactly those zones; a bad list names the key', () => {
    const s = synthStack({ availabilityZones: 'us-east-1b,us-east-1c' });
    const zones = Object.values(s.template.findResources('AWS::EC2::Subnet')).map((r) => r.Properties.AvailabilityZone);
    expect([...new Set(zones)].sort()).toEqual(['us-east-1b', 'us-east-1c']);
    expect(readSettings({ availabilityZones: ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'] }).maxAzs).toBe(3);
    expect(() => readSettings({ availabilityZones: 'us-east-1a' })).toThrow(/context "availabilityZones"/);
    expect(() => readSettings({ availabilityZones: 'us-east-1a,us-east-1b', maxAzs: 3 })).toThrow(/context "maxAzs"/);
  });

  it('kafkaMonitoring: the provisioned cluster monitoring level', () => {
    const s = synthStack({ kafka: 'provisioned', kafkaMonitoring: 'PER_BROKER' });
    s.template.hasResourceProperties('AWS::MSK::Cluster', { EnhancedMonitoring: 'PER_BROKER' });
    synthStack({ kafka: 'provisioned' }).template.hasResourceProperties('AWS::MSK::Cluster', {
      EnhancedMonitoring: 'PER_TOPIC_PER_BROKER',
    });
    expect(() => readSettings({ kafkaMonitoring: 'ALL' })).toThrow(/context "kafkaMonitoring"/);
  });

  it('eventSourceMode=on-demand: no pollers or error controls; behind NAT no Lambda or STS endpoint', () => {
    const t = synthStack({ eventSourceMode: 'on-demand' }).template.toJSON();
    const esms = Object.values(t.Resources as Record<string, Cfn>).filter(
      (r) => r.Type === 'AWS::Lambda::EventSourceMapping',
    );
    // The monitors' and the sink's.
    expect(esms).toHaveLength(3);
    for (const e of esms) {
      for (const key of [
        'ProvisionedPollerConfig',
        'FunctionResponseTypes',
        'BisectBatchOnFunctionError',
        'MaximumRetryAttempts',
        'MaximumRecordAgeInSeconds',
      ])
        expect(e.Properties[key], key).toBeUndefined();
      expect(e.Properties.DestinationConfig.OnFailure.Destination).toBeDefined();
    }
    const services = interfaceEndpoints(t).map((r) => JSON.stringify(r.Properties.ServiceName));
    expect(services.some((x) => /\.(lambda|sts)"/.test(x))).toBe(false);
    // The standard mode keeps every control.
    const std = Object.values(synthStack().template.toJSON().Resources as Record<string, Cfn>).find(
      (r) => r.Type === 'AWS::Lambda::EventSourceMapping',
    );
    expect(std?.Properties.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
  });

  it('containerInsights=false: disabled on the cluster, and the URL Frontier alarm counts healthy targets', () => {
    const s = synthStack({ containerInsights: false });
    s.template.hasResourceProperties('AWS::ECS::Cluster', {
      ClusterSettings: [{ Name: 'containerInsights', Value: 'disabled' }],
    });
    const json = JSON.stringify(s.template.toJSON());
    expect(json).not.toContain('ECS/ContainerInsights');
    expect(json).toContain('HealthyHostCount');
  });

  it('crawlerImage: no image asset; an ECR URI gets pull rights on its repository', () => {
    const uri = '123456789012.dkr.ecr.us-east-1.amazonaws.com/crawl-cluster/crawler:1.2.3';
    const s = synthStack({ crawlerImage: uri });
    expect(s.stack.fleet.imageAsset).toBeUndefined();
    const json = JSON.stringify(s.template.toJSON());
    expect(json).toContain('crawl-cluster/crawler:1.2.3');
    expect(json).toContain('ecr:BatchGetImage');
    const pub = synthStack({ crawlerImage: 'ghcr.io/example/crawler:latest' });
    pub.template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      ContainerDefinitions: Match.arrayWith([Match.objectLike({ Image: 'ghcr.io/example/crawler:latest' })]),
    });
    expect(() => readSettings({ crawlerImage: 'not an image' })).toThrow(/context "crawlerImage"/);
    expect(() => readSettings({ crawlerImage: 'ghcr.io/x/y:1', crawlerPlugins: 'plugins' })).toThrow(
      /context "crawlerPlugins"/,
    );
  });

  it('createAutoScalingServiceLinkedRole: the role, retained, before both services', () => {
    const s = synthStack({ createAutoScalingServiceLinkedRole: true });
    const roles = s.template.findResources('AWS::IAM::ServiceLinkedRole');
    const [id, role] = Object.entries(roles)[0] as [string, Cfn];
    expect(role.Properties.AWSServiceName).toBe('ecs.application-autoscaling.amazonaws.com');
    expect(role.DeletionPolicy).toBe('Retain');
    const services = Object.values(s.template.findResources('AWS::ECS::Service'));
    expect(services).toHaveLength(2);
    for (const svc of services) expect(svc.DependsOn).toContain(id);
    expect(Object.keys(synthStack().template.findResources('AWS::IAM::ServiceLinkedRole'))).toHaveLength(0);
  });

  it('kafka=serverless fails synthesis, naming the region, where MSK Serverless is not offered', () => {
    const stackIn = (region: string, context: Record<string, unknown> = {}) =>
      new CrawlClusterStack(
        new App({ context: { ...CDK_CONTEXT, ...context, 'aws:cdk:bundling-stacks': [] } }),
        'CrawlCluster',
        {
          settings: readSettings(context),
          env: { account: '123456789012', region },
        },
      );
    expect(() => stackIn('af-south-1')).toThrow(/context "kafka": MSK Serverless is not offered in af-south-1/);
    expect(() => stackIn('af-south-1', { kafka: 'provisioned' })).not.toThrow();
  });

  it('redisTokenInEnvironment: the token as a dynamic reference, no secret read, no Secrets Manager endpoint', () => {
    const endpoints = (context: Record<string, unknown>) =>
      interfaceEndpoints(synthStack(context).template.toJSON()).map((r) => JSON.stringify(r.Properties.ServiceName));
    // Without NAT and without the URL Frontier's tasks, the functions' secret read is what the endpoint is for.
    const noNat = { crawlerPublicSubnets: true, urlFrontier: false };
    expect(endpoints(noNat).some((x) => x.includes('.secretsmanager'))).toBe(true);
    const s = synthStack({ ...noNat, redisTokenInEnvironment: true });
    const services = interfaceEndpoints(s.template.toJSON()).map((r) => JSON.stringify(r.Properties.ServiceName));
    expect(services.some((x) => x.includes('.secretsmanager'))).toBe(false);
    const secret = logicalIdOf(s, s.stack.cache.authToken);
    const roles = new Set(s.stack.functions.all.map(({ fn }) => logicalIdOf(s, fn.role)));
    for (const { name, fn } of s.stack.functions.all) {
      const env = resourceOf(s, fn.function).Properties.Environment.Variables;
      expect(env.REDIS_PASSWORD, name).toEqual({
        'Fn::Join': ['', ['{{resolve:secretsmanager:', { Ref: secret }, ':SecretString:::}}']],
      });
      expect(env, name).not.toHaveProperty('REDIS_PASSWORD_SECRET_ARN');
    }
    // No function role may read the secret any more (the crawler's execution role still does, for its ECS secret).
    const policies = Object.entries(s.template.findResources('AWS::IAM::Policy'))
      .filter(([, p]) => (p.Properties.Roles as Cfn[]).some((r) => roles.has(r.Ref)))
      .map(([id]) => id);
    const reads = allStatements(s).filter(
      (st) =>
        (roles.has(st.owner) || policies.includes(st.owner)) && st.Action.some((a) => a.startsWith('secretsmanager:')),
    );
    expect(reads).toEqual([]);
    expect(readSettings({}).redisTokenInEnvironment).toBe(false);
    expect(readSettings({ profile: 'small' }).redisTokenInEnvironment).toBe(true);
    expect(() => readSettings({ redisTokenInEnvironment: 'yes' })).toThrow(/context "redisTokenInEnvironment"/);
  });

  it('dashboard=false: no dashboard and no DashboardUrl output; the same alarms', () => {
    const off = synthStack({ dashboard: false });
    const on = synthStack();
    expect(Object.keys(off.template.findResources('AWS::CloudWatch::Dashboard'))).toHaveLength(0);
    expect(Object.keys(on.template.findResources('AWS::CloudWatch::Dashboard'))).toHaveLength(1);
    expect(Object.keys(off.template.toJSON().Outputs)).not.toContain('DashboardUrl');
    expect(Object.keys(on.template.toJSON().Outputs)).toContain('DashboardUrl');
    const alarms = (s: typeof on) => Object.keys(s.template.findResources('AWS::CloudWatch::Alarm')).sort();
    expect(alarms(off)).toEqual(alarms(on));
    expect(alarms(off).length).toBeGreaterThan(10);
    expect(() => off.stack.observability.dashboard).toThrow(/dashboard=false/);
    expect(readSettings({ profile: 'small' }).dashboard).toBe(false);
  });

  it('compresses page messages with gzip by default, and runtimeEnv may choose another codec', () => {
    const crawlerEnv = (context: Record<string, unknown>) => {
      const td = Object.values(synthStack(context).template.findResources('AWS::ECS::TaskDefinition'))[0] as Cfn;
      return Object.fromEntries(td.Properties.ContainerDefinitions[0].Environment.map((e: Cfn) => [e.Name, e.Value]));
    };
    expect(crawlerEnv({}).KAFKA_COMPRESSION).toBe('gzip');
    expect(crawlerEnv({ runtimeEnv: { KAFKA_COMPRESSION: 'zstd' } }).KAFKA_COMPRESSION).toBe('zstd');
  });
});

describe('firehose partitions on MSK Serverless', () => {
  const topics = (context: Record<string, unknown>) =>
    Object.values(synthStack(context).template.findResources('Custom::KafkaTopics'))[0]?.Properties as Cfn;
  const firehose = (context: Record<string, unknown>) => topics(context).TopicPartitions['demo.crawled_firehose'];

  it('are sized so maxTasks crawlers at their peak stay under 5 MB/s a partition; control topics stay small', () => {
    // 10 tasks x 400 pages/s x 28 KB / 3.5 (gzip, as the crawl compresses) = 32.8 MB/s: 7 partitions.
    expect(firehosePartitionsNeeded(10, 28, 3.5)).toBe(7);
    expect(firehosePartitionsNeeded(10, 28, 1)).toBe(22);
    expect(firehose({})).toBe(7);
    expect(topics({}).Partitions).toBe(3);
    expect(topics({}).Topics).toHaveLength(5);
    expect(firehose({ maxTasks: 4 })).toBe(3);
    expect(firehose({ runtimeEnv: { KAFKA_COMPRESSION: 'zstd' } })).toBe(3);
    expect(firehose({ topicPartitions: 20 })).toBe(20);
  });

  it('raise a value given too low, with a warning; provisioned MSK keeps the value', () => {
    const s = synthStack({ topicPartitions: 2 });
    const t = Object.values(s.template.findResources('Custom::KafkaTopics'))[0]?.Properties as Cfn;
    expect(t.TopicPartitions['demo.crawled_firehose']).toBe(7);
    expect(t.Partitions).toBe(2);
    Annotations.fromStack(s.stack).hasWarning('*', Match.stringLikeRegexp('topicPartitions=2 raised to 7'));
    expect(firehose({ kafka: 'provisioned', topicPartitions: 2 })).toBe(2);
  });

  it('keep the standard stack and a second app with per-app topics under the 120 partitions MSK Serverless takes', () => {
    // 4 control topics x 3 + 7 = 19 fixed; each app adds 2 x 3: at most 16 apps fit.
    const s = synthStack({ runtimeEnv: { KAFKA_APPID_TOPICS: 'true' } });
    const env = resourceOf(s, s.stack.fleet.taskDefinition).Properties.ContainerDefinitions[0].Environment as Cfn[];
    const max = Number(env.find((e) => e.Name === 'KAFKA_APPID_TOPICS_MAX')?.Value);
    expect(max).toBe(16);
    expect(19 + max * 2 * 3).toBeLessThanOrEqual(120);
    expect(19 + (max + 1) * 2 * 3).toBeGreaterThan(120);
    const over = synthStack({ runtimeEnv: { KAFKA_APPID_TOPICS: 'true', KAFKA_APPID_TOPICS_MAX: '40' } });
    Annotations.fromStack(over.stack).hasWarning('*', Match.stringLikeRegexp('at most 16 apps fit'));
  });

  it('keeps the retention it is given on every topic it creates', () => {
    expect(topics({}).RetentionHours).toBe(168);
    expect(topics({ retentionHours: 24 }).RetentionHours).toBe(24);
  });
});
