/**
 * The VPC: private subnets for the functions, MSK and the cache; the crawler fleet either in the same private
 * subnets behind NAT (default) or in public subnets with a public IP per task and no NAT at all (cheaper, and each
 * task has its own egress IP for IP-scoped throttles). Endpoints keep image pulls, logs, secrets and S3 off the NAT,
 * let tasks in isolated private subnets (the URL Frontier with crawlerPublicSubnets) start without one, and give the
 * functions Secrets Manager without any egress beyond the VPC. The monitors' MSK event sources need no NAT and no
 * Lambda or STS endpoint with provisioned pollers, for which Lambda makes the connections itself; on-demand pollers
 * run in the cluster's subnets and call Lambda and STS from there, so without NAT they get those two endpoints
 * ({@link Network.allowEventSourcePollers}). Interface endpoints span `endpointAzs` zones (one is the cheapest:
 * every zone's clients reach an endpoint's address in another zone).
 */
import { CfnResource, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

export interface NetworkProps {
  /** @default 2 */
  maxAzs: number;
  /** Pinned zones (then maxAzs is their count). */
  availabilityZones?: string[];
  /** Zones the interface endpoints span (at most maxAzs). */
  endpointAzs: number;
  /** Ignored with crawlerPublicSubnets (no NAT then). */
  natGateways: number;
  crawlerPublicSubnets: boolean;
  logRetention: logs.RetentionDays;
}

/** The VPC's address range (CDK's default), as a literal so that security group rules from it stay checkable. */
const VPC_CIDR = '10.0.0.0/16';

export class Network extends Construct {
  readonly vpc: ec2.Vpc;
  /** {@link VPC_CIDR}: where clients in the VPC connect from. */
  readonly vpcCidr = VPC_CIDR;
  /** Where the functions, MSK and the cache live. */
  readonly privateSubnets: ec2.SubnetSelection;
  /** Where crawler tasks run. */
  readonly crawlerSubnets: ec2.SubnetSelection;
  /** Whether crawler tasks get a public IP (public subnets). */
  readonly crawlerPublicIp: boolean;
  /** Every Lambda function (monitors, schedules, topics custom resource). */
  readonly functionsSecurityGroup: ec2.SecurityGroup;
  /** The crawler tasks. */
  readonly crawlerSecurityGroup: ec2.SecurityGroup;
  /** Whether the private subnets reach the Internet through NAT (not with crawlerPublicSubnets: isolated then). */
  readonly privateEgress: boolean;
  /** The interface endpoints' security group, once allowTaskEndpoints created them. */
  #endpoints?: ec2.SecurityGroup;
  readonly #endpointAzs: number;

  constructor(scope: Construct, id: string, props: NetworkProps) {
    super(scope, id);
    this.#endpointAzs = props.endpointAzs;
    const privateType = props.crawlerPublicSubnets
      ? ec2.SubnetType.PRIVATE_ISOLATED
      : ec2.SubnetType.PRIVATE_WITH_EGRESS;
    this.vpc = new ec2.Vpc(this, 'Vpc', {
      ipAddresses: ec2.IpAddresses.cidr(VPC_CIDR),
      ...(props.availabilityZones ? { availabilityZones: props.availabilityZones } : { maxAzs: props.maxAzs }),
      natGateways: props.crawlerPublicSubnets ? 0 : props.natGateways,
      subnetConfiguration: [
        { name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 22 },
        { name: 'private', subnetType: privateType, cidrMask: 22 },
      ],
    });
    this.privateSubnets = { subnetType: privateType };
    this.crawlerPublicIp = props.crawlerPublicSubnets;
    this.crawlerSubnets = props.crawlerPublicSubnets ? { subnetType: ec2.SubnetType.PUBLIC } : this.privateSubnets;

    // Rejected flows only: the fleet's accepted traffic is the whole web, too much to log for what it tells.
    const flowLogGroup = new logs.LogGroup(this, 'FlowLogs', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.vpc.addFlowLog('FlowLog', {
      destination: ec2.FlowLogDestination.toCloudWatchLogs(flowLogGroup),
      trafficType: ec2.FlowLogTrafficType.REJECT,
    });

    // Gateway endpoints are free; the MSK event sources also need S3 for their on-failure destination.
    this.vpc.addGatewayEndpoint('S3', {
      service: ec2.GatewayVpcEndpointAwsService.S3,
      subnets: [{ subnetType: ec2.SubnetType.PUBLIC }, this.privateSubnets],
    });

    // The functions talk to MSK and the cache only; their egress rules are added by those constructs.
    this.functionsSecurityGroup = new ec2.SecurityGroup(this, 'Functions', {
      vpc: this.vpc,
      description: 'crawl-cluster Lambda functions',
      allowAllOutbound: false,
    });
    // Crawlers fetch arbitrary web sites.
    this.crawlerSecurityGroup = new ec2.SecurityGroup(this, 'Crawlers', {
      vpc: this.vpc,
      description: 'crawl-cluster crawler tasks',
      allowAllOutbound: true,
    });

    this.privateEgress = !props.crawlerPublicSubnets;
    // Image pulls and logs of every task start would otherwise cross the NAT (billed per GB). Only tasks use them
    // (Lambda ships its logs outside the VPC).
    if (this.privateEgress) this.#taskEndpoints();

    this.#restrictDefaultSgLogs(props.logRetention);
  }

  /** The interface endpoints' security group, once an endpoint exists. */
  get endpointsSecurityGroup(): ec2.SecurityGroup | undefined {
    return this.#endpoints;
  }

  /**
   * Lets Fargate tasks with the security group `client` reach, through interface endpoints, what a task needs to
   * start: ECR (the image layers come through the S3 gateway endpoint) and CloudWatch Logs, plus Secrets Manager
   * (the ECS secrets). The endpoints are created on first use. Their private DNS names apply to the whole VPC, so
   * the crawler tasks are always let in too, wherever they run.
   */
  allowTaskEndpoints(client: ec2.ISecurityGroup, description: string): void {
    this.#taskEndpoints().addIngressRule(client, ec2.Port.tcp(443), description);
  }

  /**
   * Lets the functions (security group `client`, which has no default egress) reach Secrets Manager through its
   * interface endpoint: they read the Redis AUTH token at cold start. With NAT too, so that their egress stays
   * limited to the VPC; without NAT (crawlerPublicSubnets) the endpoint is their only way to it.
   */
  allowSecretsManager(client: ec2.SecurityGroup, description: string): void {
    this.#endpoint('SecretsManager', ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER);
    this.#endpointsGroup().connections.allowFrom(client, ec2.Port.tcp(443), description);
  }

  /**
   * On-demand MSK event source pollers run in the cluster's subnets with its security group (`pollers`) and call
   * Lambda (to invoke) and STS (to assume the function's role for IAM auth): without NAT they need both endpoints.
   * With NAT (or provisioned pollers) nothing is created.
   */
  allowEventSourcePollers(pollers: ec2.ISecurityGroup): void {
    if (this.privateEgress) return;
    this.#endpoint('Lambda', ec2.InterfaceVpcEndpointAwsService.LAMBDA);
    this.#endpoint('Sts', ec2.InterfaceVpcEndpointAwsService.STS);
    this.#endpointsGroup().connections.allowFrom(pollers, ec2.Port.tcp(443), 'MSK event source pollers (on-demand)');
  }

  #taskEndpoints(): ec2.SecurityGroup {
    const services: [string, ec2.InterfaceVpcEndpointAwsService][] = [
      ['EcrApi', ec2.InterfaceVpcEndpointAwsService.ECR],
      ['EcrDocker', ec2.InterfaceVpcEndpointAwsService.ECR_DOCKER],
      ['Logs', ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS],
      ['SecretsManager', ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER],
    ];
    for (const [name, service] of services) this.#endpoint(name, service);
    return this.#endpointsGroup();
  }

  /** The interface endpoints' security group: HTTPS from the crawler tasks, and from whoever is let in later. */
  #endpointsGroup(): ec2.SecurityGroup {
    if (!this.#endpoints) {
      this.#endpoints = new ec2.SecurityGroup(this, 'Endpoints', {
        vpc: this.vpc,
        description: 'crawl-cluster interface endpoints (AWS APIs from the VPC)',
        allowAllOutbound: false,
      });
      this.#endpoints.addIngressRule(this.crawlerSecurityGroup, ec2.Port.tcp(443), 'crawler tasks');
    }
    return this.#endpoints;
  }

  /** One interface endpoint in the private subnets, created once. */
  #endpoint(name: string, service: ec2.InterfaceVpcEndpointAwsService): void {
    if (this.vpc.node.tryFindChild(name)) return;
    const subnets = this.vpc.selectSubnets(this.privateSubnets).subnets.slice(0, this.#endpointAzs);
    this.vpc.addInterfaceEndpoint(name, {
      service,
      subnets: { subnets },
      privateDnsEnabled: true,
      securityGroups: [this.#endpointsGroup()],
      open: false,
    });
  }

  /**
   * aws-cdk-lib's Vpc removes the default security group's rules with a custom resource whose function (a
   * stack-level singleton) logs to a group Lambda creates, which keeps events forever. Give it a group of ours.
   */
  #restrictDefaultSgLogs(retention: logs.RetentionDays): void {
    const provider = Stack.of(this).node.tryFindChild('Custom::VpcRestrictDefaultSGCustomResourceProvider');
    const handler = provider?.node.tryFindChild('Handler');
    if (!(handler instanceof CfnResource)) return;
    const group = new logs.LogGroup(this, 'RestrictDefaultSgLogs', { retention, removalPolicy: RemovalPolicy.DESTROY });
    // A reference: the function is created after its group.
    handler.addPropertyOverride('LoggingConfig', { LogGroup: group.logGroupName });
  }
}
