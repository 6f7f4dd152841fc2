import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { REQUIRED_VARIABLES } from '../../cdk/runtime-env.ts';
import { VARIABLES } from '../../lib/config/variables.ts';
import { type Cfn, logicalIdOf, resourceOf, type Synthesized, synthStack } from './synth.ts';

let s: Synthesized;
beforeAll(() => {
  s = synthStack({ minTasks: 0, maxTasks: 20 });
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

  /** The expression the alarm of a policy evaluates, and the stats metrics it reads by id. */
  function gapOf(alarm: Cfn) {
    const expression = alarm.Metrics.find((m: Cfn) => m.Expression);
    const metric = (id: string) => alarm.Metrics.find((m: Cfn) => m.Id === id).MetricStat;
    return { expression: expression.Expression, needed: metric('needed'), tasks: metric('tasks') };
  }

  it('scales out within a minute of TasksNeeded above LiveTasks, by the gap rounded down to a power of two', () => {
    const out = scalingPolicies(s).find((p) => p.config.StepAdjustments.some((a: Cfn) => a.ScalingAdjustment > 0));
    expect(out?.config.AdjustmentType).toBe('ChangeInCapacity');
    expect(out?.config.Cooldown).toBe(120);
    const alarm = alarmOf(s, out?.id ?? '');
    expect(alarm.EvaluationPeriods).toBe(1);
    expect(alarm.Threshold).toBe(1);
    expect(alarm.ComparisonOperator).toBe('GreaterThanOrEqualToThreshold');
    // Steps are relative to the threshold (a gap of 1): gap 1 adds 1, 2-3 add 2, ... 64 and more add 64.
    expect(
      out?.config.StepAdjustments.map((a: Cfn) => [
        a.MetricIntervalLowerBound + 1,
        a.MetricIntervalUpperBound === undefined ? null : a.MetricIntervalUpperBound + 1,
        a.ScalingAdjustment,
      ]),
    ).toEqual([
      [1, 2, 1],
      [2, 4, 2],
      [4, 8, 4],
      [8, 16, 8],
      [16, 32, 16],
      [32, 64, 32],
      [64, null, 64],
    ]);
    const gap = gapOf(alarm);
    expect(gap.expression).toBe('needed - tasks');
    for (const [id, name] of [
      ['needed', 'TasksNeeded'],
      ['tasks', 'LiveTasks'],
    ] as const) {
      const stat = id === 'needed' ? gap.needed : gap.tasks;
      expect(stat).toEqual({
        Metric: { Namespace: 'CrawlCluster', MetricName: name, Dimensions: [{ Name: 'service', Value: 'stats' }] },
        Period: 60,
        Stat: 'Maximum',
      });
    }
  });

  it('never scales on a backlog constant: no alarm of the stack reads BacklogPerTask', () => {
    const alarms = Object.values(s.template.findResources('AWS::CloudWatch::Alarm'));
    expect(alarms.length).toBeGreaterThan(0);
    for (const a of alarms) expect(JSON.stringify(a.Properties)).not.toContain('BacklogPerTask');
  });

  it('scales in slowly: ten minutes of TasksNeeded at least one below LiveTasks, a fifth at a time', () => {
    const inPolicy = scalingPolicies(s).find((p) => p.config.StepAdjustments.some((a: Cfn) => a.ScalingAdjustment < 0));
    expect(inPolicy?.config.AdjustmentType).toBe('PercentChangeInCapacity');
    expect(inPolicy?.config.MinAdjustmentMagnitude).toBe(1);
    expect(inPolicy?.config.StepAdjustments).toEqual([{ MetricIntervalUpperBound: 0, ScalingAdjustment: -20 }]);
    expect(inPolicy?.config.Cooldown).toBe(300);
    const alarm = alarmOf(s, inPolicy?.id ?? '');
    expect(alarm.EvaluationPeriods).toBe(10);
    expect(alarm.Threshold).toBe(-1);
    expect(alarm.ComparisonOperator).toBe('LessThanOrEqualToThreshold');
    expect(gapOf(alarm).expression).toBe('needed - tasks');
  });

  it('runs 1 vCPU / 2 GiB tasks by default, with adaptive slots between the context bounds and the task size told', () => {
    const task = resourceOf(s, s.stack.fleet.taskDefinition).Properties;
    expect([task.Cpu, task.Memory]).toEqual(['1024', '2048']);
    const env = (syn: Synthesized) =>
      Object.fromEntries(
        (container(syn).Environment as { Name: string; Value: string }[]).map((e) => [e.Name, e.Value]),
      );
    // The task size, so the crawler's memory limit (and its body budget) is the task's even where its cgroup hides it.
    expect(env(s)).toMatchObject({
      CRAWLER_CONCURRENCY_MIN: '8',
      CRAWLER_CONCURRENCY_MAX: '256',
      CRAWLER_TASK_MEMORY_MIB: '2048',
    });
    expect(env(s).CRAWLER_CONCURRENCY).toBeUndefined();
    const bigger = synthStack({
      taskCpu: 2048,
      taskMemoryMiB: 4096,
      crawlerConcurrencyMin: 16,
      crawlerConcurrencyMax: 512,
    });
    expect(env(bigger)).toMatchObject({
      CRAWLER_CONCURRENCY_MIN: '16',
      CRAWLER_CONCURRENCY_MAX: '512',
      CRAWLER_TASK_MEMORY_MIB: '4096',
    });
    expect(() => synthStack({ crawlerConcurrencyMin: 64, crawlerConcurrencyMax: 32 })).toThrow(/crawlerConcurrencyMax/);
    expect(() => synthStack({ runtimeEnv: { CRAWLER_CONCURRENCY_MAX: '64' } })).toThrow(/set by the stack/);
  });

  it('pages someone when the fleet has needed more than maxTasks saturated tasks for half an hour', () => {
    const alarms = Object.values(s.template.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties as Cfn);
    const atMax = alarms.find((a) => String(a.AlarmDescription).includes('more than maxTasks'));
    expect(atMax?.EvaluationPeriods).toBe(30);
    expect(atMax?.Metrics.find((m: Cfn) => m.Expression).Expression).toBe('IF(tasks >= 20 AND needed > tasks, 1, 0)');
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
