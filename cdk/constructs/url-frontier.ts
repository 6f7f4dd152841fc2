/**
 * The URL Frontier API (crawler-commons URL Frontier 2.6 over gRPC, functions/url-frontier) as its own Fargate
 * service (arm64) in the fleet's ECS cluster: the crawler image with its command overridden, in the private
 * subnets, behind an internal Network Load Balancer (TCP 7071; TLS 7443 with ALPN h2 when a certificate is given).
 * It scales on CPU between its bounds and rolls back a failed deployment. It needs only Redis, which it reaches
 * exactly as the crawlers do (TLS, the AUTH token injected from Secrets Manager).
 */
import { Duration } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { acknowledge, acknowledgeRedisTask } from '../nag.ts';
import { environment, type RuntimeEnv } from '../runtime-env.ts';
import type { Settings } from '../settings.ts';
import type { Cache } from './cache.ts';
import { arm64TaskDefinition, taskLogGroup } from './crawler-service.ts';
import type { Network } from './network.ts';
import type { Storage } from './storage.ts';

/** The port functions/url-frontier/main.ts listens on (its URL_FRONTIER_PORT), and the plaintext listener's. */
export const URL_FRONTIER_PORT = 7071;
/** The TLS listener's port (with urlFrontierCertificateArn); it forwards to the tasks' plaintext port. */
export const URL_FRONTIER_TLS_PORT = 7443;
/** Average CPU utilization (%) the service scales to. */
export const URL_FRONTIER_CPU_TARGET = 60;
/** The container's command: the crawler image serving the URL Frontier API instead of crawling. */
export const URL_FRONTIER_COMMAND = ['node', 'functions/url-frontier/main.ts'];

/** The service's settings are the stack's (cdk/settings.ts documents each). */
export interface UrlFrontierProps {
  network: Network;
  cache: Cache;
  /** Its access-log bucket receives the load balancer's TLS access logs. */
  storage: Storage;
  /** The cluster the service runs in (the fleet's). */
  cluster: ecs.ICluster;
  /** The crawler image (Fleet.image), so both services run one build. */
  image: ecs.ContainerImage;
  /** ECS's service-linked role when the stack creates it (Fleet.serviceLinkedRole): the service waits for it. */
  serviceLinkedRole?: iam.CfnServiceLinkedRole;
  taskCpu: Settings['urlFrontierTaskCpu'];
  taskMemoryMiB: Settings['urlFrontierTaskMemoryMiB'];
  minTasks: Settings['urlFrontierMinTasks'];
  maxTasks: Settings['urlFrontierMaxTasks'];
  certificateArn?: Settings['urlFrontierCertificateArn'];
  logRetention: logs.RetentionDays;
  runtimeEnv: RuntimeEnv;
}

export class UrlFrontier extends Construct {
  readonly taskDefinition: ecs.FargateTaskDefinition;
  readonly service: ecs.FargateService;
  /** The tasks' security group: the gRPC port from the VPC only. */
  readonly securityGroup: ec2.SecurityGroup;
  readonly loadBalancer: elbv2.NetworkLoadBalancer;
  /** The load balancer's security group: the listener ports from the VPC only. */
  readonly loadBalancerSecurityGroup: ec2.SecurityGroup;
  readonly targetGroup: elbv2.NetworkTargetGroup;
  readonly logGroup: logs.LogGroup;
  /** `<NLB DNS name>:7071`, plaintext gRPC, for clients in the VPC. */
  readonly endpoint: string;
  /** `<NLB DNS name>:7443`, gRPC over TLS, when a certificate is given. */
  readonly tlsEndpoint?: string;
  /** The most tasks autoscaling runs (urlFrontierMaxTasks): past it, more load only raises their CPU. */
  readonly maxTasks: number;

  constructor(scope: Construct, id: string, props: UrlFrontierProps) {
    super(scope, id);
    const { network, cache } = props;
    this.maxTasks = props.maxTasks;
    const vpc = network.vpc;
    // A literal range (not the Vpc's CidrBlock attribute), so that cdk-nag can check the rules made from it.
    const fromVpc = ec2.Peer.ipv4(network.vpcCidr);

    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc,
      description: 'crawl-cluster URL Frontier tasks',
      allowAllOutbound: false,
    });
    // The load balancer does not preserve client IPs for IP targets over TCP: the tasks see its private addresses,
    // for traffic and health checks alike.
    this.securityGroup.addIngressRule(fromVpc, ec2.Port.tcp(URL_FRONTIER_PORT), 'gRPC from the VPC (load balancer)');
    this.securityGroup.addEgressRule(
      ec2.Peer.anyIpv4(),
      ec2.Port.tcp(443),
      'AWS APIs at task start: ECR, S3 (image layers), CloudWatch Logs, Secrets Manager',
    );
    cache.securityGroup.connections.allowFrom(
      this.securityGroup,
      ec2.Port.tcp(cache.port),
      'Valkey clients (TLS + AUTH)',
    );
    network.allowTaskEndpoints(this.securityGroup, 'URL Frontier tasks');

    this.taskDefinition = arm64TaskDefinition(this, props.taskCpu, props.taskMemoryMiB);
    this.logGroup = taskLogGroup(this, props.logRetention);
    const container = this.taskDefinition.addContainer('url-frontier', {
      image: props.image,
      command: URL_FRONTIER_COMMAND,
      essential: true,
      portMappings: [{ containerPort: URL_FRONTIER_PORT, protocol: ecs.Protocol.TCP }],
      logging: ecs.LogDrivers.awsLogs({ streamPrefix: 'url-frontier', logGroup: this.logGroup }),
      // The Redis connection as the crawlers have it; nothing else (no Kafka, no bucket).
      environment: environment(cache.clientEnvironment, props.runtimeEnv),
      // Injected by the ECS agent at start; never in the task definition.
      secrets: { REDIS_PASSWORD: ecs.Secret.fromSecretsManager(cache.authToken) },
      // main.ts gives running calls 5 s after SIGTERM, then closes Redis.
      stopTimeout: Duration.seconds(15),
    });
    acknowledgeRedisTask(this.taskDefinition);

    this.service = new ecs.FargateService(this, 'Service', {
      cluster: props.cluster,
      taskDefinition: this.taskDefinition,
      // No desiredCount: autoscaling owns it (a fixed count would be reset by every deploy).
      circuitBreaker: { enable: true, rollback: true },
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
      assignPublicIp: false,
      vpcSubnets: network.privateSubnets,
      securityGroups: [this.securityGroup],
      healthCheckGracePeriod: Duration.seconds(60),
      propagateTags: ecs.PropagatedTagSource.SERVICE,
      enableExecuteCommand: false,
    });
    if (props.serviceLinkedRole) this.service.node.addDependency(props.serviceLinkedRole);

    this.loadBalancerSecurityGroup = new ec2.SecurityGroup(this, 'LoadBalancerSecurityGroup', {
      vpc,
      description: 'crawl-cluster URL Frontier load balancer',
      allowAllOutbound: false,
    });
    this.loadBalancerSecurityGroup.addIngressRule(fromVpc, ec2.Port.tcp(URL_FRONTIER_PORT), 'gRPC clients in the VPC');
    this.loadBalancerSecurityGroup.addEgressRule(
      this.securityGroup,
      ec2.Port.tcp(URL_FRONTIER_PORT),
      'URL Frontier tasks (traffic and health checks)',
    );
    this.loadBalancer = new elbv2.NetworkLoadBalancer(this, 'LoadBalancer', {
      vpc,
      internetFacing: false,
      vpcSubnets: network.privateSubnets,
      securityGroups: [this.loadBalancerSecurityGroup],
      // With fewer tasks than zones, every load balancer node still reaches a task.
      crossZoneEnabled: true,
    });
    this.targetGroup = new elbv2.NetworkTargetGroup(this, 'Targets', {
      vpc,
      port: URL_FRONTIER_PORT,
      protocol: elbv2.Protocol.TCP,
      targetType: elbv2.TargetType.IP,
      targets: [this.service.loadBalancerTarget({ containerName: 'url-frontier', containerPort: URL_FRONTIER_PORT })],
      healthCheck: {
        protocol: elbv2.Protocol.TCP,
        interval: Duration.seconds(10),
        healthyThresholdCount: 2,
        unhealthyThresholdCount: 2,
      },
      // Calls are short (GetURLs streams a batch and ends): a stopping task is drained quickly.
      deregistrationDelay: Duration.seconds(30),
    });
    this.loadBalancer.addListener('Tcp', {
      port: URL_FRONTIER_PORT,
      protocol: elbv2.Protocol.TCP,
      defaultTargetGroups: [this.targetGroup],
    });
    this.endpoint = `${this.loadBalancer.loadBalancerDnsName}:${URL_FRONTIER_PORT}`;
    // ListNodes answers with the endpoint clients reach, not a task's own address.
    container.addEnvironment('URL_FRONTIER_ADVERTISE', this.endpoint);

    if (props.certificateArn) {
      // TLS ends at the load balancer, which forwards the HTTP/2 stream to the tasks' plaintext port; gRPC clients
      // require h2 by ALPN.
      this.loadBalancer.addListener('Tls', {
        port: URL_FRONTIER_TLS_PORT,
        protocol: elbv2.Protocol.TLS,
        certificates: [elbv2.ListenerCertificate.fromArn(props.certificateArn)],
        alpnPolicy: elbv2.AlpnPolicy.HTTP2_ONLY,
        defaultTargetGroups: [this.targetGroup],
      });
      this.loadBalancerSecurityGroup.addIngressRule(
        fromVpc,
        ec2.Port.tcp(URL_FRONTIER_TLS_PORT),
        'gRPC over TLS, clients in the VPC',
      );
      this.loadBalancer.logAccessLogs(props.storage.accessLogs, 'url-frontier');
      this.tlsEndpoint = `${this.loadBalancer.loadBalancerDnsName}:${URL_FRONTIER_TLS_PORT}`;
    } else {
      acknowledge(
        this.loadBalancer,
        'ELB2',
        'A Network Load Balancer writes access logs for TLS listeners only, and without urlFrontierCertificateArn ' +
          'this one has none: there would be nothing to log (rejected flows are in the VPC flow logs).',
      );
    }

    const scaling = this.service.autoScaleTaskCount({ minCapacity: props.minTasks, maxCapacity: props.maxTasks });
    scaling.scaleOnCpuUtilization('Cpu', {
      targetUtilizationPercent: URL_FRONTIER_CPU_TARGET,
      scaleOutCooldown: Duration.minutes(1),
      scaleInCooldown: Duration.minutes(5),
    });
  }
}
