import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { URL_FRONTIER_CPU_ALARM_PERCENT } from '../../cdk/constructs/observability.ts';
import {
  URL_FRONTIER_COMMAND,
  URL_FRONTIER_PORT,
  URL_FRONTIER_TLS_PORT,
  type UrlFrontier,
} from '../../cdk/constructs/url-frontier.ts';
import { REPO_ROOT } from '../../cdk/repo-root.ts';
import { REQUIRED_VARIABLES } from '../../cdk/runtime-env.ts';
import { METRICS_NAMESPACE } from '../../functions/shared/observability.ts';
import { VARIABLES } from '../../lib/config/variables.ts';
import { type Cfn, logicalIdOf, resourceOf, type Synthesized, synthStack } from './synth.ts';

const CERTIFICATE = 'arn:aws:acm:us-east-1:123456789012:certificate/0f0e2f2a-1111-2222-3333-444455556666';

let s: Synthesized;
beforeAll(() => {
  s = synthStack({
    urlFrontierMinTasks: 3,
    urlFrontierMaxTasks: 9,
    urlFrontierTaskCpu: 1024,
    urlFrontierTaskMemoryMiB: 2048,
    logRetentionDays: 14,
  });
});

function frontier(syn: Synthesized): UrlFrontier {
  const f = syn.stack.urlFrontier;
  if (!f) throw new Error('no URL Frontier in this stack');
  return f;
}

function container(syn: Synthesized): Cfn {
  return resourceOf(syn, frontier(syn).taskDefinition).Properties.ContainerDefinitions[0];
}

function crawlerContainer(syn: Synthesized): Cfn {
  return resourceOf(syn, syn.stack.fleet.taskDefinition).Properties.ContainerDefinitions[0];
}

function resourcesOf(syn: Synthesized, type: string): [string, Cfn][] {
  return Object.entries(syn.template.findResources(type));
}

/** The listeners of the URL Frontier's load balancer. */
function listeners(syn: Synthesized): Cfn[] {
  const lb = logicalIdOf(syn, frontier(syn).loadBalancer);
  return resourcesOf(syn, 'AWS::ElasticLoadBalancingV2::Listener')
    .map(([, r]) => r.Properties)
    .filter((p) => JSON.stringify(p.LoadBalancerArn) === JSON.stringify({ Ref: lb }));
}

/** The SecurityGroupIngress resources (rules between groups) that target a group. */
function separateIngressTo(syn: Synthesized, groupLogicalId: string): Cfn[] {
  return resourcesOf(syn, 'AWS::EC2::SecurityGroupIngress')
    .map(([, r]) => r.Properties)
    .filter((p) => JSON.stringify(p.GroupId) === JSON.stringify({ 'Fn::GetAtt': [groupLogicalId, 'GroupId'] }));
}

function vpcCidr(syn: Synthesized): string {
  return resourceOf(syn, syn.stack.network.vpc).Properties.CidrBlock;
}

function env(c: Cfn): Record<string, unknown> {
  return Object.fromEntries((c.Environment as { Name: string; Value: unknown }[]).map((e) => [e.Name, e.Value]));
}

/** A graph's metric as the dashboard body lists it; dimension values are the template's (Ref, Fn::GetAtt, ...). */
interface GraphMetric {
  namespace: string;
  name: string;
  dimensions: Record<string, unknown>;
  /** `stat` (absent for Average), `period`, `label`, `yAxis`. */
  options: Cfn;
}

/**
 * The widgets of the stack's dashboard. The body is a Fn::Join of JSON text and tokens; each token becomes a
 * placeholder for parsing and is put back afterwards, as itself or, inside a longer string, as a Fn::Join.
 */
function dashboardWidgets(syn: Synthesized): { title: string; metrics: GraphMetric[]; properties: Cfn }[] {
  const body = resourceOf(syn, syn.stack.observability.dashboard).Properties.DashboardBody;
  const parts: unknown[] = typeof body === 'string' ? [body] : body['Fn::Join'][1];
  const tokens: unknown[] = [];
  const text = parts.map((p) => (typeof p === 'string' ? p : `@@${tokens.push(p) - 1}@@`)).join('');
  const restore = (v: string): unknown => {
    const pieces = v.split(/@@(\d+)@@/).flatMap((x, i) => (i % 2 ? [tokens[Number(x)]] : x ? [x] : []));
    return pieces.length === 1 ? pieces[0] : { 'Fn::Join': ['', pieces] };
  };
  const widgets = JSON.parse(text).widgets as { properties: Cfn }[];
  return widgets.map(({ properties }) => ({
    title: properties.title,
    properties,
    metrics: ((properties.metrics ?? []) as unknown[][]).map((m) => {
      const [namespace, name, ...rest] = m as [string, string, ...unknown[]];
      const options = (typeof rest.at(-1) === 'object' ? rest.pop() : {}) as Cfn;
      const dimensions: Record<string, unknown> = {};
      for (let i = 0; i < rest.length; i += 2) dimensions[rest[i] as string] = restore(rest[i + 1] as string);
      return { namespace, name, dimensions, options };
    }),
  }));
}

function alarmsOf(syn: Synthesized): [string, Cfn][] {
  return resourcesOf(syn, 'AWS::CloudWatch::Alarm');
}

describe('URL Frontier service', () => {
  it('runs the crawler’s image with the command overridden, on arm64 Fargate in the fleet’s cluster', () => {
    const c = container(s);
    expect(c.Command).toEqual(['node', 'functions/url-frontier/main.ts']);
    expect(URL_FRONTIER_COMMAND).toEqual(c.Command);
    expect(c.Image).toEqual(crawlerContainer(s).Image);
    expect(c.PortMappings).toEqual([{ ContainerPort: URL_FRONTIER_PORT, Protocol: 'tcp' }]);
    const task = resourceOf(s, frontier(s).taskDefinition).Properties;
    expect(task.RequiresCompatibilities).toEqual(['FARGATE']);
    expect(task.RuntimePlatform).toEqual({ CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' });
    expect([task.Cpu, task.Memory]).toEqual(['1024', '2048']);
    const service = resourceOf(s, frontier(s).service).Properties;
    expect(service.Cluster).toEqual({ Ref: logicalIdOf(s, s.stack.fleet.cluster) });
    expect(service.LaunchType).toBe('FARGATE');
    expect(service.TaskDefinition).toEqual({ Ref: logicalIdOf(s, frontier(s).taskDefinition) });
  });

  it('is built once with the crawler: one image asset, whose build context holds functions/url-frontier', () => {
    const dir = s.app.synth().directory;
    const images = Object.values(
      JSON.parse(readFileSync(join(dir, `${s.stack.stackName}.assets.json`), 'utf8')).dockerImages,
    ) as { source: { directory: string; dockerFile: string; platform: string } }[];
    expect(images.map((i) => [i.source.dockerFile, i.source.platform])).toEqual([
      ['functions/crawler/Dockerfile', 'linux/arm64'],
    ]);
    const context = join(dir, images[0]?.source.directory ?? '');
    for (const kept of ['functions/url-frontier/main.ts', 'functions/url-frontier/server.ts', 'lib/url-frontier'])
      expect(existsSync(join(context, kept)), kept).toBe(true);
    for (const dropped of ['functions/kafka-monitor', 'test', 'cdk'])
      expect(existsSync(join(context, dropped))).toBe(false);
    const dockerfile = readFileSync(join(REPO_ROOT, 'functions/crawler/Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^COPY functions\/url-frontier \.\/functions\/url-frontier$/m);
    // The container listens where the load balancer forwards.
    const main = readFileSync(join(REPO_ROOT, 'functions/url-frontier/main.ts'), 'utf8');
    expect(main.match(/URL_FRONTIER_PORT = (\d+)/)?.[1]).toBe(String(URL_FRONTIER_PORT));
  });

  it('runs in the private subnets without a public IP, and rolls a failed deployment back', () => {
    const service = resourceOf(s, frontier(s).service).Properties;
    expect(service.NetworkConfiguration.AwsvpcConfiguration).toEqual({
      AssignPublicIp: 'DISABLED',
      SecurityGroups: [{ 'Fn::GetAtt': [logicalIdOf(s, frontier(s).securityGroup), 'GroupId'] }],
      Subnets: s.stack.network.vpc.privateSubnets.map((x) => ({ Ref: logicalIdOf(s, x) })),
    });
    expect(service.DeploymentConfiguration.DeploymentCircuitBreaker).toEqual({ Enable: true, Rollback: true });
  });

  it('reaches Redis exactly as the crawlers do, with the AUTH token as an ECS secret', () => {
    const c = container(s);
    const mine = env(c);
    const crawler = env(crawlerContainer(s));
    for (const name of ['REDIS_HOST', 'REDIS_PORT', 'REDIS_TLS', 'REDIS_CLUSTER'])
      expect(mine[name], name).toEqual(crawler[name]);
    expect(mine.REDIS_TLS).toBe('true');
    expect(c.Secrets).toEqual(crawlerContainer(s).Secrets);
    expect(c.Secrets).toEqual([
      { Name: 'REDIS_PASSWORD', ValueFrom: { Ref: logicalIdOf(s, s.stack.cache.authToken) } },
    ]);
    expect(mine).not.toHaveProperty('REDIS_PASSWORD');
    const names = [...Object.keys(mine), ...(c.Secrets as { Name: string }[]).map((x) => x.Name)];
    for (const v of REQUIRED_VARIABLES.urlFrontier) expect(names, v).toContain(v);
    for (const n of names) expect(VARIABLES, n).toHaveProperty(n);
    // The cache admits the service's tasks on its port.
    const fromFrontier = separateIngressTo(s, logicalIdOf(s, s.stack.cache.securityGroup)).filter(
      (r) => r.SourceSecurityGroupId['Fn::GetAtt'][0] === logicalIdOf(s, frontier(s).securityGroup),
    );
    expect(fromFrontier.map((r) => [r.FromPort, r.ToPort])).toEqual([[6380, 6380]]);
  });

  it('tells ListNodes the load balancer’s endpoint, not a task’s own address', () => {
    const advertised = env(container(s)).URL_FRONTIER_ADVERTISE as { 'Fn::Join': [string, unknown[]] };
    const lb = logicalIdOf(s, frontier(s).loadBalancer);
    expect(advertised['Fn::Join'][1]).toEqual([{ 'Fn::GetAtt': [lb, 'DNSName'] }, `:${URL_FRONTIER_PORT}`]);
  });

  it('logs to its own log group with the stack’s retention', () => {
    const logGroup = logicalIdOf(s, frontier(s).logGroup);
    expect(container(s).LogConfiguration.Options['awslogs-group']).toEqual({ Ref: logGroup });
    expect(logGroup).not.toBe(crawlerContainer(s).LogConfiguration.Options['awslogs-group'].Ref);
    expect(resourceOf(s, frontier(s).logGroup).Properties.RetentionInDays).toBe(14);
  });

  it('sits behind an internal NLB in the private subnets: a TCP listener on 7071, TCP health checks', () => {
    const lb = resourceOf(s, frontier(s).loadBalancer).Properties;
    expect(lb.Type).toBe('network');
    expect(lb.Scheme).toBe('internal');
    expect(lb.Subnets).toEqual(s.stack.network.vpc.privateSubnets.map((x) => ({ Ref: logicalIdOf(s, x) })));
    const tg = logicalIdOf(s, frontier(s).targetGroup);
    expect(listeners(s)).toEqual([
      {
        LoadBalancerArn: { Ref: logicalIdOf(s, frontier(s).loadBalancer) },
        Port: 7071,
        Protocol: 'TCP',
        DefaultActions: [{ Type: 'forward', TargetGroupArn: { Ref: tg } }],
      },
    ]);
    const group = resourceOf(s, frontier(s).targetGroup).Properties;
    expect([group.Port, group.Protocol, group.TargetType, group.HealthCheckProtocol]).toEqual([
      7071,
      'TCP',
      'ip',
      'TCP',
    ]);
    expect(resourceOf(s, frontier(s).service).Properties.LoadBalancers).toEqual([
      { ContainerName: 'url-frontier', ContainerPort: 7071, TargetGroupArn: { Ref: tg } },
    ]);
  });

  it('admits port 7071 only, and only from the VPC CIDR, on the tasks and on the load balancer', () => {
    const cidr = vpcCidr(s);
    expect(cidr).toMatch(/^\d+\.\d+\.\d+\.\d+\/\d+$/);
    const only7071 = [{ CidrIp: cidr, IpProtocol: 'tcp', FromPort: 7071, ToPort: 7071 }];
    for (const group of [frontier(s).securityGroup, frontier(s).loadBalancerSecurityGroup]) {
      const sg = resourceOf(s, group).Properties;
      expect(
        (sg.SecurityGroupIngress as Cfn[]).map(({ CidrIp, IpProtocol, FromPort, ToPort }) => ({
          CidrIp,
          IpProtocol,
          FromPort,
          ToPort,
        })),
        group.node.path,
      ).toEqual(only7071);
      expect(separateIngressTo(s, logicalIdOf(s, group)), group.node.path).toEqual([]);
    }
    expect(resourceOf(s, frontier(s).loadBalancer).Properties.SecurityGroups).toEqual([
      { 'Fn::GetAtt': [logicalIdOf(s, frontier(s).loadBalancerSecurityGroup), 'GroupId'] },
    ]);
  });

  it('scales on CPU between urlFrontierMinTasks and urlFrontierMaxTasks', () => {
    const service = logicalIdOf(s, frontier(s).service);
    const targets = resourcesOf(s, 'AWS::ApplicationAutoScaling::ScalableTarget').filter(([, r]) =>
      JSON.stringify(r.Properties.ResourceId).includes(`"${service}"`),
    );
    expect(targets).toHaveLength(1);
    const [targetId, target] = targets[0] as [string, Cfn];
    expect([target.Properties.MinCapacity, target.Properties.MaxCapacity]).toEqual([3, 9]);
    expect(target.Properties.ScalableDimension).toBe('ecs:service:DesiredCount');
    const policies = resourcesOf(s, 'AWS::ApplicationAutoScaling::ScalingPolicy')
      .map(([, r]) => r.Properties)
      .filter((p) => JSON.stringify(p.ScalingTargetId) === JSON.stringify({ Ref: targetId }));
    expect(policies).toHaveLength(1);
    expect(policies[0]?.PolicyType).toBe('TargetTrackingScaling');
    const tracking = policies[0]?.TargetTrackingScalingPolicyConfiguration;
    expect(tracking.PredefinedMetricSpecification).toEqual({
      PredefinedMetricType: 'ECSServiceAverageCPUUtilization',
    });
    expect(tracking.TargetValue).toBe(60);
    // The defaults: two tasks at least, six at most.
    const defaults = synthStack();
    defaults.template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 2,
      MaxCapacity: 6,
    });
  });

  it('outputs its endpoint: the load balancer’s DNS name and port 7071', () => {
    const outputs = s.template.toJSON().Outputs;
    expect(outputs.UrlFrontierEndpoint.Value).toEqual({
      'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalIdOf(s, frontier(s).loadBalancer), 'DNSName'] }, ':7071']],
    });
    expect(outputs.UrlFrontierTlsEndpoint).toBeUndefined();
  });

  it('adds a TLS listener (h2, forwarding to the same tasks) only when a certificate ARN is given', () => {
    expect(listeners(s).map((l) => l.Protocol)).toEqual(['TCP']);
    const tls = synthStack({ urlFrontierCertificateArn: CERTIFICATE });
    const tg = { Ref: logicalIdOf(tls, frontier(tls).targetGroup) };
    const byProtocol = Object.fromEntries(listeners(tls).map((l) => [l.Protocol, l]));
    expect(Object.keys(byProtocol).sort()).toEqual(['TCP', 'TLS']);
    expect(byProtocol.TCP.Port).toBe(7071);
    expect(byProtocol.TLS.Port).toBe(URL_FRONTIER_TLS_PORT);
    expect(byProtocol.TLS.Certificates).toEqual([{ CertificateArn: CERTIFICATE }]);
    expect(byProtocol.TLS.AlpnPolicy).toEqual(['HTTP2Only']);
    expect(byProtocol.TLS.DefaultActions).toEqual([{ Type: 'forward', TargetGroupArn: tg }]);
    // The load balancer admits the TLS port from the VPC; the tasks still see 7071 only.
    const lbIngress = resourceOf(tls, frontier(tls).loadBalancerSecurityGroup).Properties.SecurityGroupIngress as Cfn[];
    expect(lbIngress.map((r) => [r.CidrIp, r.FromPort]).sort()).toEqual([
      [vpcCidr(tls), 7071],
      [vpcCidr(tls), URL_FRONTIER_TLS_PORT],
    ]);
    const taskIngress = resourceOf(tls, frontier(tls).securityGroup).Properties.SecurityGroupIngress as Cfn[];
    expect(taskIngress.map((r) => r.FromPort)).toEqual([7071]);
    // TLS connections are logged to the access-log bucket.
    expect(resourceOf(tls, frontier(tls).loadBalancer).Properties.LoadBalancerAttributes).toContainEqual({
      Key: 'access_logs.s3.enabled',
      Value: 'true',
    });
    expect(tls.template.toJSON().Outputs.UrlFrontierTlsEndpoint.Value).toEqual({
      'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalIdOf(tls, frontier(tls).loadBalancer), 'DNSName'] }, ':7443']],
    });
    expect(() => synthStack({ urlFrontierCertificateArn: 'my-cert' })).toThrow(/urlFrontierCertificateArn/);
  });

  it('starts in isolated private subnets (crawlerPublicSubnets) through interface endpoints, Secrets Manager too', () => {
    const pub = synthStack({ crawlerPublicSubnets: true });
    const endpoints = resourcesOf(pub, 'AWS::EC2::VPCEndpoint').map(([, r]) =>
      JSON.stringify(r.Properties.ServiceName),
    );
    for (const service of ['.ecr.api', '.ecr.dkr', '.logs', '.secretsmanager'])
      expect(
        endpoints.some((e) => e.includes(service)),
        service,
      ).toBe(true);
    const endpointGroups = new Set(
      resourcesOf(pub, 'AWS::EC2::VPCEndpoint').flatMap(([, r]) =>
        (r.Properties.SecurityGroupIds ?? []).map((g: Cfn) => g['Fn::GetAtt'][0]),
      ),
    );
    expect(endpointGroups.size).toBe(1);
    const sources = separateIngressTo(pub, [...endpointGroups][0]).map((r) => [
      r.SourceSecurityGroupId['Fn::GetAtt'][0],
      r.FromPort,
    ]);
    // The endpoints' private DNS applies to the whole VPC, so the crawlers in the public subnets use them too.
    // The functions are let in too: they read the Redis AUTH token from Secrets Manager at cold start.
    expect(sources.sort()).toEqual(
      [
        [logicalIdOf(pub, frontier(pub).securityGroup), 443],
        [logicalIdOf(pub, pub.stack.network.crawlerSecurityGroup), 443],
        [logicalIdOf(pub, pub.stack.network.functionsSecurityGroup), 443],
      ].sort(),
    );
    // Without the service, public crawler subnets need the functions' Secrets Manager endpoint only.
    const bare = synthStack({ crawlerPublicSubnets: true, urlFrontier: false });
    expect(
      resourcesOf(bare, 'AWS::EC2::VPCEndpoint')
        .map(([, r]) => JSON.stringify([r.Properties.VpcEndpointType, r.Properties.ServiceName]))
        .map((e) => (e.includes('secretsmanager') ? 'Interface secretsmanager' : JSON.parse(e)[0])),
    ).toEqual(['Gateway', 'Interface secretsmanager']);
  });

  it('is left out entirely with urlFrontier=false', () => {
    const off = synthStack({ urlFrontier: false });
    expect(off.stack.urlFrontier).toBeUndefined();
    off.template.resourceCountIs('AWS::ElasticLoadBalancingV2::LoadBalancer', 0);
    off.template.resourceCountIs('AWS::ElasticLoadBalancingV2::Listener', 0);
    off.template.resourceCountIs('AWS::ECS::Service', 1);
    off.template.resourceCountIs('AWS::ECS::TaskDefinition', 1);
    expect(Object.keys(off.template.toJSON().Outputs).filter((k) => k.startsWith('UrlFrontier'))).toEqual([]);
    const cacheSources = separateIngressTo(off, logicalIdOf(off, off.stack.cache.securityGroup)).map(
      (r) => r.SourceSecurityGroupId['Fn::GetAtt'][0],
    );
    expect(cacheSources.sort()).toEqual(
      [
        logicalIdOf(off, off.stack.network.functionsSecurityGroup),
        logicalIdOf(off, off.stack.network.crawlerSecurityGroup),
      ].sort(),
    );
    s.template.resourceCountIs('AWS::ECS::Service', 2);
  });
});

describe('URL Frontier monitoring', () => {
  function ids(syn: Synthesized) {
    // A target group's metrics name its load balancer by the `net/<name>/<id>` part of the listener's ARN.
    const listener = { Ref: logicalIdOf(syn, frontier(syn).loadBalancer.node.findChild('Tcp')) };
    const arnPart = (i: number) => ({ 'Fn::Select': [i, { 'Fn::Split': ['/', listener] }] });
    return {
      cluster: { Ref: logicalIdOf(syn, syn.stack.fleet.cluster) },
      service: { 'Fn::GetAtt': [logicalIdOf(syn, frontier(syn).service), 'Name'] },
      loadBalancer: { 'Fn::GetAtt': [logicalIdOf(syn, frontier(syn).loadBalancer), 'LoadBalancerFullName'] },
      targetGroup: { 'Fn::GetAtt': [logicalIdOf(syn, frontier(syn).targetGroup), 'TargetGroupFullName'] },
      targetGroupLoadBalancer: { 'Fn::Join': ['', [arnPart(1), '/', arnPart(2), '/', arnPart(3)]] },
      topic: { Ref: logicalIdOf(syn, syn.stack.observability.alarmTopic) },
    };
  }

  function widget(syn: Synthesized, title: string) {
    const found = dashboardWidgets(syn).filter((w) => w.title === title);
    expect(found, title).toHaveLength(1);
    return found[0] as ReturnType<typeof dashboardWidgets>[number];
  }

  function alarmsNamed(syn: Synthesized, name: string): Cfn[] {
    return alarmsOf(syn)
      .filter(([id]) => id.startsWith(`Observability${name}`))
      .map(([, r]) => r);
  }

  it('graphs the tasks’ CPU and memory (ECS service metrics) next to the running task count', () => {
    const { cluster, service } = ids(s);
    const w = widget(s, 'URL Frontier CPU and memory (%)');
    const serviceDims = { ClusterName: cluster, ServiceName: service };
    expect(
      w.metrics.map((m) => [m.namespace, m.name, m.dimensions, m.options.stat ?? 'Average', m.options.period]),
    ).toEqual([
      ['AWS/ECS', 'CPUUtilization', serviceDims, 'Average', 60],
      ['AWS/ECS', 'MemoryUtilization', serviceDims, 'Average', 60],
      ['ECS/ContainerInsights', 'RunningTaskCount', serviceDims, 'Average', 60],
    ]);
    expect(w.properties.yAxis.left).toEqual({ min: 0, max: 100 });
    expect(w.properties.annotations.horizontal.map((a: Cfn) => a.value)).toEqual([60, 85]);
  });

  it('graphs the load balancer’s healthy and unhealthy targets, and its active and new flows', () => {
    const { loadBalancer, targetGroup, targetGroupLoadBalancer } = ids(s);
    const targets = widget(s, 'URL Frontier targets');
    expect(targets.metrics.map((m) => [m.namespace, m.name, m.dimensions, m.options.stat, m.options.period])).toEqual([
      [
        'AWS/NetworkELB',
        'HealthyHostCount',
        { LoadBalancer: targetGroupLoadBalancer, TargetGroup: targetGroup },
        'Minimum',
        60,
      ],
      [
        'AWS/NetworkELB',
        'UnHealthyHostCount',
        { LoadBalancer: targetGroupLoadBalancer, TargetGroup: targetGroup },
        'Maximum',
        60,
      ],
    ]);
    const flows = widget(s, 'URL Frontier flows (connections)');
    expect(
      flows.metrics.map((m) => [m.namespace, m.name, m.dimensions, m.options.stat ?? 'Average', m.options.period]),
    ).toEqual([
      ['AWS/NetworkELB', 'ActiveFlowCount', { LoadBalancer: loadBalancer }, 'Average', 60],
      ['AWS/NetworkELB', 'NewFlowCount', { LoadBalancer: loadBalancer }, 'Sum', 60],
    ]);
  });

  it('graphs the UrlFrontierBacklog the stats function publishes (namespace CrawlCluster, service=stats)', () => {
    const w = widget(s, 'URL Frontier backlog');
    expect(w.metrics.map((m) => [m.namespace, m.name, m.dimensions, m.options.stat, m.options.period])).toEqual([
      [METRICS_NAMESPACE, 'UrlFrontierBacklog', { service: 'stats' }, 'Maximum', 60],
    ]);
    const handler = readFileSync(join(REPO_ROOT, 'functions/stats/handler.ts'), 'utf8');
    expect(handler).toMatch(/addMetric\('UrlFrontierBacklog'/);
  });

  it('pages the alarm topic when no target behind the load balancer is healthy for 3 minutes, silence included', () => {
    const { service, targetGroup, targetGroupLoadBalancer, topic } = ids(s);
    const alarms = alarmsNamed(s, 'UrlFrontierNoHealthyTarget');
    expect(alarms).toHaveLength(1);
    const a = alarms[0] as Cfn;
    expect(a.Properties).toMatchObject({
      Namespace: 'AWS/NetworkELB',
      MetricName: 'HealthyHostCount',
      Dimensions: [
        { Name: 'LoadBalancer', Value: targetGroupLoadBalancer },
        { Name: 'TargetGroup', Value: targetGroup },
      ],
      Statistic: 'Maximum',
      Period: 60,
      EvaluationPeriods: 3,
      ComparisonOperator: 'LessThanThreshold',
      Threshold: 1,
      // HealthyHostCount is always published while health checks run: no point is no healthy task.
      TreatMissingData: 'breaching',
      AlarmActions: [topic],
    });
    // Created after the service is stable: a first deploy does not page for tasks still starting.
    expect(a.DependsOn).toContain(service['Fn::GetAtt'][0]);
  });

  it('pages the alarm topic when CPU stays above 85 % for 15 minutes at urlFrontierMaxTasks', () => {
    const { cluster, service, topic } = ids(s);
    const alarms = alarmsNamed(s, 'UrlFrontierCpuAtMaxTasks');
    expect(alarms).toHaveLength(1);
    const a = (alarms[0] as Cfn).Properties;
    expect(URL_FRONTIER_CPU_ALARM_PERCENT).toBe(85);
    expect(a).toMatchObject({
      Threshold: 85,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 3,
      TreatMissingData: 'notBreaching',
      AlarmActions: [topic],
    });
    const byId = Object.fromEntries((a.Metrics as Cfn[]).map((m) => [m.Id, m]));
    const returned = (a.Metrics as Cfn[]).filter((m) => m.ReturnData !== false);
    expect(returned.map((m) => m.Expression)).toEqual(['IF(tasks >= 9, cpu, 0)']);
    const dims = [
      { Name: 'ClusterName', Value: cluster },
      { Name: 'ServiceName', Value: service },
    ];
    expect(byId.cpu.MetricStat).toEqual({
      Metric: { Namespace: 'AWS/ECS', MetricName: 'CPUUtilization', Dimensions: dims },
      Period: 300,
      Stat: 'Average',
    });
    // At the maximum for the whole period, not for a moment of it.
    expect(byId.tasks.MetricStat).toEqual({
      Metric: { Namespace: 'ECS/ContainerInsights', MetricName: 'RunningTaskCount', Dimensions: dims },
      Period: 300,
      Stat: 'Minimum',
    });
    // The maximum follows the setting.
    const defaults = synthStack();
    const expression = (alarmsNamed(defaults, 'UrlFrontierCpuAtMaxTasks')[0] as Cfn).Properties.Metrics.find(
      (m: Cfn) => m.Expression,
    ).Expression;
    expect(expression).toBe('IF(tasks >= 6, cpu, 0)');
  });

  it('has neither widgets nor alarms with urlFrontier=false, and leaves the rest of the dashboard as it is', () => {
    const off = synthStack({ urlFrontier: false });
    const titles = (syn: Synthesized) => dashboardWidgets(syn).map((w) => w.title);
    const frontierTitles = titles(s).filter((t) => t.startsWith('URL Frontier'));
    expect(frontierTitles).toHaveLength(4);
    expect(titles(off)).toEqual(titles(s).filter((t) => !t.startsWith('URL Frontier')));
    const offMetrics = dashboardWidgets(off).flatMap((w) => w.metrics.map((m) => `${m.namespace} ${m.name}`));
    for (const gone of ['AWS/NetworkELB', 'AWS/ECS CPUUtilization', 'UrlFrontierBacklog'])
      expect(
        offMetrics.some((m) => m.includes(gone)),
        gone,
      ).toBe(false);
    const names = (syn: Synthesized) => alarmsOf(syn).map(([id]) => id);
    expect(names(s).filter((id) => id.includes('UrlFrontier'))).toHaveLength(2);
    expect(names(off).filter((id) => id.includes('UrlFrontier'))).toEqual([]);
    expect(names(off)).toHaveLength(names(s).length - 2);
    expect(off.stack.observability.alarms).toHaveLength(s.stack.observability.alarms.length - 2);
  });
});
