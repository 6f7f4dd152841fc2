/**
 * The browser fleet (cdk/constructs/browser-fleet.ts, docs/spiders-browser.md): off by default; with
 * `browserFleet=true` a Fargate service of its own running the browser image (Chromium inside) with
 * CRAWLER_SPIDERS=browser, in the crawler fleet's cluster, scaling on the browser backlog alone.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { REQUIRED_VARIABLES } from '../../cdk/runtime-env.ts';
import { VARIABLES } from '../../lib/config/variables.ts';
import { type Cfn, logicalIdOf, resourceOf, type Synthesized, synthStack } from './synth.ts';

let s: Synthesized;
beforeAll(() => {
  s = synthStack({ browserFleet: true, browserMaxTasks: 6, browserBacklogPerTask: 40 }, { nag: true });
});

function env(syn: Synthesized): Record<string, string> {
  const fleet = syn.stack.browserFleet;
  if (!fleet) throw new Error('no browser fleet');
  const c = resourceOf(syn, fleet.taskDefinition).Properties.ContainerDefinitions[0] as Cfn;
  return Object.fromEntries((c.Environment as { Name: string; Value: string }[]).map((e) => [e.Name, e.Value]));
}

describe('browser fleet', () => {
  it('is not deployed unless browserFleet=true: one ECS service, one image', () => {
    const off = synthStack();
    expect(off.stack.browserFleet).toBeUndefined();
    const services = Object.values(off.template.findResources('AWS::ECS::Service'));
    expect(services.some((r) => JSON.stringify(r).includes('BrowserFleet'))).toBe(false);
    expect(() => synthStack({ browserFleet: 'yes' })).toThrow(/browserFleet/);
    expect(() => synthStack({ browserFleet: true, browserTaskCpu: 512 })).toThrow(/browserTaskCpu/);
  });

  it('runs the browser image (functions/crawler/browser.Dockerfile) with CRAWLER_SPIDERS=browser, beside the crawler image', () => {
    const dir = s.app.synth().directory;
    const images = Object.values(
      JSON.parse(readFileSync(join(dir, `${s.stack.stackName}.assets.json`), 'utf8')).dockerImages,
    ) as { source: { dockerFile: string; platform: string } }[];
    expect(images.map((i) => [i.source.dockerFile, i.source.platform]).sort()).toEqual([
      ['functions/crawler/Dockerfile', 'linux/arm64'],
      ['functions/crawler/browser.Dockerfile', 'linux/arm64'],
    ]);
    const e = env(s);
    expect(e).toMatchObject({ CRAWLER_SPIDERS: 'browser', BROWSER_CHROMIUM_PATH: '/usr/bin/chromium' });
    for (const v of REQUIRED_VARIABLES.crawler) if (v !== 'REDIS_PASSWORD') expect(Object.keys(e), v).toContain(v);
    for (const n of Object.keys(e)) expect(VARIABLES, n).toHaveProperty(n);
    expect(e).not.toHaveProperty('ALLOW_PRIVATE_NETWORKS');
    // The HTML crawler fleet is unchanged: it serves every type but browser (functions/crawler/main.ts).
    const crawler = resourceOf(s, s.stack.fleet.taskDefinition).Properties.ContainerDefinitions[0] as Cfn;
    expect((crawler.Environment as { Name: string }[]).some((x) => x.Name === 'CRAWLER_SPIDERS')).toBe(false);
  });

  it('passes KAFKA_TOPIC_PARTITIONS as the crawler fleet does: the stack partitions with per-app topics, none without', () => {
    const crawlerEnv = (syn: Synthesized): Record<string, string> => {
      const c = resourceOf(syn, syn.stack.fleet.taskDefinition).Properties.ContainerDefinitions[0] as Cfn;
      return Object.fromEntries((c.Environment as { Name: string; Value: string }[]).map((e) => [e.Name, e.Value]));
    };
    // Above what the serverless firehose needs at the default maxTasks, so the stack keeps it as given.
    const on = synthStack({ browserFleet: true, topicPartitions: 97, runtimeEnv: { KAFKA_APPID_TOPICS: 'true' } });
    expect(on.stack.kafka.topicPartitions).toBe(97);
    expect(crawlerEnv(on).KAFKA_TOPIC_PARTITIONS).toBe('97');
    expect(env(on).KAFKA_TOPIC_PARTITIONS).toBe('97');
    expect(env(on).KAFKA_APPID_TOPICS).toBe('true');
    expect(crawlerEnv(s)).not.toHaveProperty('KAFKA_TOPIC_PARTITIONS');
    expect(env(s)).not.toHaveProperty('KAFKA_TOPIC_PARTITIONS');
  });

  it('is a service of its own in the crawler cluster, with a 2-vCPU / 4 GiB task by default and a rollback breaker', () => {
    const fleet = s.stack.browserFleet;
    const svc = resourceOf(s, fleet?.service as never).Properties;
    expect(svc.Cluster).toEqual({ Ref: logicalIdOf(s, s.stack.fleet.cluster) });
    expect(svc.DeploymentConfiguration.DeploymentCircuitBreaker).toEqual({ Enable: true, Rollback: true });
    expect(svc.DesiredCount).toBe(0);
    const task = resourceOf(s, fleet?.taskDefinition as never).Properties;
    expect([task.Cpu, task.Memory]).toEqual(['2048', '4096']);
  });

  it('scales 0-6 tasks on the browser backlog per running task, not on the HTML backlog', () => {
    s.template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 0,
      MaxCapacity: 6,
      ResourceId: {
        'Fn::Join': [
          '',
          [
            'service/',
            { Ref: logicalIdOf(s, s.stack.fleet.cluster) },
            '/',
            {
              'Fn::GetAtt': [logicalIdOf(s, s.stack.browserFleet?.service as never), 'Name'],
            },
          ],
        ],
      },
    });
    const alarms = Object.values(s.template.findResources('AWS::CloudWatch::Alarm'))
      .map((a) => JSON.stringify(a.Properties))
      .filter((p) => p.includes('Browser backlog per task'));
    expect(alarms).toHaveLength(2);
    for (const a of alarms) {
      expect(a).toContain('"MetricName":"SpiderBacklog"');
      expect(a).toContain('{"Name":"spider","Value":"browser"}');
      expect(a).toContain('RunningTaskCount');
      expect(a).not.toContain('"MetricName":"BacklogPerTask"');
    }
    const out = alarms.find((a) => a.includes('GreaterThanOrEqualToThreshold'));
    expect(out).toContain('"Threshold":40');
  });
});
