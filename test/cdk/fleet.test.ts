import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { REQUIRED_VARIABLES } from '../../cdk/runtime-env.ts';
import { VARIABLES } from '../../lib/config/variables.ts';
import { type Cfn, logicalIdOf, resourceOf, type Synthesized, synthStack } from './synth.ts';

let s: Synthesized;
beforeAll(() => {
  s = synthStack({ minTasks: 0, maxTasks: 20, backlogPerTask: 200 });
});

function container(syn: Synthesized) {
  return resourceOf(syn, syn.stack.fleet.taskDefinition).Properties.ContainerDefinitions[0];
}

function alarmOf(syn: Synthesized, policyLogicalId: string) {
  const alarms = Object.values(syn.template.findResources('AWS::CloudWatch::Alarm')).filter((a) =>
    JSON.stringify(a.Properties.AlarmActions).includes(policyLogicalId),
  );
  expect(alarms).toHaveLength(1);
  return alarms[0]?.Properties as Cfn;
}

function scalingPolicies(syn: Synthesized) {
  return Object.entries(syn.template.findResources('AWS::ApplicationAutoScaling::ScalingPolicy')).map(([id, r]) => ({
    id,
    config: r.Properties.StepScalingPolicyConfiguration,
  }));
}

describe('crawler fleet', () => {
  it('runs the crawler image, built from functions/crawler/Dockerfile, on arm64 Fargate', () => {
    const task = resourceOf(s, s.stack.fleet.taskDefinition).Properties;
    expect(task.RequiresCompatibilities).toEqual(['FARGATE']);
    expect(task.RuntimePlatform).toEqual({ CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' });
    const dir = s.app.synth().directory;
    const images = Object.values(
      JSON.parse(readFileSync(join(dir, `${s.stack.stackName}.assets.json`), 'utf8')).dockerImages,
    ) as { source: { directory: string; dockerFile: string; platform: string } }[];
    expect(images.map((i) => [i.source.dockerFile, i.source.platform])).toEqual([
      ['functions/crawler/Dockerfile', 'linux/arm64'],
    ]);
    // The build context holds what the Dockerfile copies, not the repository's node_modules or tests.
    const context = join(dir, images[0]?.source.directory ?? '');
    for (const kept of ['package.json', 'package-lock.json', 'lib/config/index.ts', 'functions/crawler/main.ts'])
      expect(existsSync(join(context, kept)), kept).toBe(true);
    for (const dropped of ['node_modules', 'test', 'cdk', 'functions/kafka-monitor', '.git'])
      expect(existsSync(join(context, dropped)), dropped).toBe(false);
  });

  it('gives a stopping task longer than its SHUTDOWN_DEADLINE_MS to drain, within Fargate’s 120 s', () => {
    const c = container(s);
    const deadline = (c.Environment as { Name: string; Value: string }[]).find(
      (e) => e.Name === 'SHUTDOWN_DEADLINE_MS',
    );
    expect(Number(deadline?.Value)).toBe(60_000);
    expect(c.StopTimeout).toBe(80);
    const longest = synthStack({ shutdownDeadlineMs: 100_000 });
    expect(container(longest).StopTimeout).toBe(120);
    expect(() => synthStack({ shutdownDeadlineMs: 110_000 })).toThrow(/shutdownDeadlineMs/);
  });

  it('sets every variable the crawler needs on AWS, with the AUTH token as a secret', () => {
    const c = container(s);
    const names = [
      ...(c.Environment as { Name: string }[]).map((e) => e.Name),
      ...(c.Secrets as { Name: string }[]).map((e) => e.Name),
    ];
    for (const v of REQUIRED_VARIABLES.crawler) expect(names, v).toContain(v);
    for (const n of names) expect(VARIABLES, n).toHaveProperty(n);
    expect(c.Secrets).toEqual([
      { Name: 'REDIS_PASSWORD', ValueFrom: { Ref: logicalIdOf(s, s.stack.cache.authToken) } },
    ]);
    expect((c.Environment as { Name: string }[]).some((e) => e.Name === 'REDIS_PASSWORD')).toBe(false);
    expect((c.Environment as { Name: string }[]).some((e) => e.Name === 'ALLOW_PRIVATE_NETWORKS')).toBe(false);
  });

  it('rolls a failing deployment back through the circuit breaker', () => {
    s.template.hasResourceProperties('AWS::ECS::Service', {
      LaunchType: 'FARGATE',
      DeploymentConfiguration: { DeploymentCircuitBreaker: { Enable: true, Rollback: true } },
      NetworkConfiguration: { AwsvpcConfiguration: { AssignPublicIp: 'DISABLED' } },
    });
  });

  it('scales between the context bounds, to zero when minTasks is 0', () => {
    s.template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 0,
      MaxCapacity: 20,
      ScalableDimension: 'ecs:service:DesiredCount',
    });
  });

  it('scales out within a minute of BacklogPerTask above the threshold, by half, double or triple', () => {
    const out = scalingPolicies(s).find((p) => p.config.StepAdjustments.some((a: Cfn) => a.ScalingAdjustment > 0));
    expect(out?.config.AdjustmentType).toBe('PercentChangeInCapacity');
    expect(out?.config.MinAdjustmentMagnitude).toBe(1);
    expect(out?.config.StepAdjustments.map((a: Cfn) => a.ScalingAdjustment)).toEqual([50, 100, 200]);
    const alarm = alarmOf(s, out?.id ?? '');
    expect(alarm.EvaluationPeriods).toBe(1);
    expect(alarm.Threshold).toBe(200);
    expect(alarm.ComparisonOperator).toBe('GreaterThanOrEqualToThreshold');
    const expression = alarm.Metrics.find((m: Cfn) => m.Expression);
    // With no crawler alive, any backlog starts one.
    expect(expression.Expression).toBe('IF(live < 1 AND backlog > 0, bpt + 200, bpt)');
    const bpt = alarm.Metrics.find((m: Cfn) => m.Id === 'bpt').MetricStat.Metric;
    expect(bpt).toEqual({
      Namespace: 'CrawlCluster',
      MetricName: 'BacklogPerTask',
      Dimensions: [{ Name: 'service', Value: 'stats' }],
    });
  });

  it('scales in slowly: ten minutes well below the threshold, a fifth at a time, never the last task while work is queued', () => {
    const inPolicy = scalingPolicies(s).find((p) => p.config.StepAdjustments.some((a: Cfn) => a.ScalingAdjustment < 0));
    expect(inPolicy?.config.StepAdjustments).toEqual([{ MetricIntervalUpperBound: 0, ScalingAdjustment: -20 }]);
    expect(inPolicy?.config.Cooldown).toBe(300);
    const alarm = alarmOf(s, inPolicy?.id ?? '');
    expect(alarm.EvaluationPeriods).toBe(10);
    expect(alarm.Threshold).toBe(50);
    expect(alarm.Metrics.find((m: Cfn) => m.Expression).Expression).toBe('IF(live <= 1 AND backlog > 0, 200, bpt)');
  });

  it('can run tasks in public subnets with a public IP each and no NAT gateway at all', () => {
    const pub = synthStack({ crawlerPublicSubnets: true });
    pub.template.resourceCountIs('AWS::EC2::NatGateway', 0);
    pub.template.hasResourceProperties('AWS::ECS::Service', {
      NetworkConfiguration: {
        AwsvpcConfiguration: {
          AssignPublicIp: 'ENABLED',
          Subnets: pub.stack.network.vpc.publicSubnets.map((x) => ({ Ref: logicalIdOf(pub, x) })),
        },
      },
    });
  });
});
