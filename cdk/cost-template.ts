/**
 * What the cost model reads from a synthesized template of the stack (./cost-model.ts, ./cost-volume.ts): the
 * resources indexed by type, a Fargate service's task shape and its hourly price on-demand and on Spot, the crawler
 * fleet's scaling bounds and container variables, and the cache's layout.
 */
import { VARIABLES } from '../lib/config/variables.ts';
import { PRICES } from './prices.ts';

// biome-ignore lint/suspicious/noExplicitAny: template JSON has no static shape
export type Cfn = Record<string, any>;

/** The frontier's cache as the template deploys it, and the partitions its clients split the frontier into. */
export interface CacheLayout {
  node_type: string;
  cluster_mode: boolean;
  /** Node groups: the shards in cluster mode, else 1. */
  shards: number;
  /** A primary and its replicas. */
  nodes_per_shard: number;
  /** FRONTIER_PARTITIONS of the crawler fleet (the stack gives every client the same). */
  frontier_partitions: number;
}

/** The template, indexed, with lookups the pricers share. */
export class Tmpl {
  readonly resources: Record<string, Cfn>;
  constructor(resources: Record<string, Cfn>) {
    this.resources = resources;
  }
  ofType(type: string): [string, Cfn][] {
    return Object.entries(this.resources).filter(([, r]) => r.Type === type);
  }
  /** The logical id a `Ref` / `Fn::GetAtt` points to. */
  target(ref: Cfn | string | undefined): string | undefined {
    if (ref && typeof ref === 'object') return ref.Ref ?? ref['Fn::GetAtt']?.[0];
    return undefined;
  }
}

/** A Fargate service's task shape and what a task-hour of it costs, on-demand and on Spot. */
interface ServiceShape {
  vcpu: number;
  gb: number;
  publicIp: boolean;
  /** Whether a capacity provider strategy puts tasks on FARGATE_SPOT. */
  spot: boolean;
  /** Tasks on on-demand Fargate before Spot takes the rest (all of them without Spot). */
  onDemandBase: number;
  onDemandHour: number;
  spotHour: number;
}

export function serviceShape(t: Tmpl, svc: Cfn): ServiceShape {
  const td = t.resources[t.target(svc.Properties.TaskDefinition) ?? ''];
  const vcpu = Number(td?.Properties.Cpu ?? 256) / 1024;
  const gb = Number(td?.Properties.Memory ?? 512) / 1024;
  const strategy: Cfn[] = svc.Properties.CapacityProviderStrategy ?? [];
  const spot = strategy.some((s) => s.CapacityProvider === 'FARGATE_SPOT' && Number(s.Weight ?? 0) > 0);
  const base = Number(strategy.find((s) => s.CapacityProvider === 'FARGATE')?.Base ?? 0);
  return {
    vcpu,
    gb,
    publicIp: svc.Properties.NetworkConfiguration?.AwsvpcConfiguration?.AssignPublicIp === 'ENABLED',
    spot,
    onDemandBase: spot ? base : Number.POSITIVE_INFINITY,
    onDemandHour: vcpu * PRICES.fargateArmVcpuHour.usd + gb * PRICES.fargateArmGbHour.usd,
    spotHour: vcpu * PRICES.fargateSpotArmVcpuHour.usd + gb * PRICES.fargateSpotArmGbHour.usd,
  };
}

/** The crawler fleet of a template: its service's shape, its scaling bounds and its container's variables. */
export interface CrawlerFleet extends ServiceShape {
  minTasks: number;
  maxTasks: number;
  /** A variable of the crawler container: undefined when it does not set it. */
  env(name: string): string | undefined;
}

/** The crawler fleet of a template, or undefined without one. */
export function crawlerFleet(template: Cfn): CrawlerFleet | undefined {
  const t = new Tmpl(template.Resources);
  const crawlerTask = (td: Cfn | undefined) =>
    (td?.Properties.ContainerDefinitions ?? []).some((c: Cfn) => c.Name === 'crawler');
  const found = t
    .ofType('AWS::ECS::Service')
    .find(([, s]) => crawlerTask(t.resources[t.target(s.Properties.TaskDefinition) ?? '']));
  if (!found) return undefined;
  const [id, svc] = found;
  const target = t
    .ofType('AWS::ApplicationAutoScaling::ScalableTarget')
    .find(([, s]) => JSON.stringify(s.Properties.ResourceId).includes(`"${id}"`));
  return {
    ...serviceShape(t, svc),
    minTasks: Number(target?.[1].Properties.MinCapacity ?? svc.Properties.DesiredCount ?? 0),
    maxTasks: Number(target?.[1].Properties.MaxCapacity ?? svc.Properties.DesiredCount ?? 1),
    env: (name) => crawlerVariable(t, name) ?? undefined,
  };
}

/** A replication group's shards and nodes as CloudFormation creates them, with the partitions of its clients. */
export function cacheLayout(r: Cfn, t: Tmpl): CacheLayout {
  const p = r.Properties;
  const clusterMode = p.ClusterMode === 'enabled' || p.NumNodeGroups !== undefined;
  return {
    node_type: p.CacheNodeType as string,
    cluster_mode: clusterMode,
    shards: clusterMode ? Number(p.NumNodeGroups ?? 1) : 1,
    nodes_per_shard: clusterMode ? 1 + Number(p.ReplicasPerNodeGroup ?? 0) : Number(p.NumCacheClusters ?? 1),
    frontier_partitions: Number(crawlerVariable(t, 'FRONTIER_PARTITIONS') ?? VARIABLES.FRONTIER_PARTITIONS.default),
  };
}

/**
 * A variable of the crawler container in the template (the fleet's task definition has it): null when the container
 * does not set it, undefined without a crawler container.
 */
function crawlerVariable(t: Tmpl, name: string): string | null | undefined {
  for (const [, td] of t.ofType('AWS::ECS::TaskDefinition')) {
    for (const c of td.Properties.ContainerDefinitions ?? []) {
      if (c.Name !== 'crawler') continue;
      return (c.Environment ?? []).find((e: Cfn) => e.Name === name)?.Value ?? null;
    }
  }
  return undefined;
}

/** The crawler task's KAFKA_COMPRESSION in the template. */
export function stackCompression(t: Tmpl): string | undefined {
  const codec = crawlerVariable(t, 'KAFKA_COMPRESSION');
  return codec === undefined ? undefined : (codec ?? 'none');
}
