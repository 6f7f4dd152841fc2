import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { MSK_IAM_PORT } from '../../cdk/constructs/kafka.ts';
import { logicalIdOf, type Synthesized, synthStack } from './synth.ts';

let s: Synthesized;
beforeAll(() => {
  s = synthStack();
});

function ingressTo(syn: Synthesized, groupLogicalId: string) {
  return Object.values(syn.template.findResources('AWS::EC2::SecurityGroupIngress'))
    .map((r) => r.Properties)
    .filter((p) => JSON.stringify(p.GroupId) === JSON.stringify({ 'Fn::GetAtt': [groupLogicalId, 'GroupId'] }));
}

describe('network', () => {
  it('spans two AZs with public and private subnets and a NAT gateway per AZ', () => {
    s.template.resourceCountIs('AWS::EC2::Subnet', 4);
    s.template.resourceCountIs('AWS::EC2::NatGateway', 2);
    expect(s.stack.network.vpc.privateSubnets).toHaveLength(2);
    expect(new Set(s.stack.network.vpc.privateSubnets.map((x) => x.availabilityZone)).size).toBe(2);
  });

  it('keeps S3, ECR, CloudWatch Logs and Secrets Manager traffic off the NAT with endpoints', () => {
    const endpoints = Object.values(s.template.findResources('AWS::EC2::VPCEndpoint')).map((r) =>
      JSON.stringify(r.Properties.ServiceName),
    );
    for (const service of ['.s3', '.ecr.api', '.ecr.dkr', '.logs', '.secretsmanager'])
      expect(
        endpoints.some((e) => e.includes(service)),
        service,
      ).toBe(true);
  });

  it('admits Kafka clients on the IAM listener only from the functions, the crawlers and the MSK pollers', () => {
    const kafkaSg = logicalIdOf(s, s.stack.kafka.securityGroup);
    const rules = ingressTo(s, kafkaSg);
    const sources = rules.map((r) => r.SourceSecurityGroupId['Fn::GetAtt'][0]).sort();
    expect(sources).toEqual(
      [
        kafkaSg,
        logicalIdOf(s, s.stack.network.functionsSecurityGroup),
        logicalIdOf(s, s.stack.network.crawlerSecurityGroup),
      ].sort(),
    );
    for (const r of rules) expect([r.IpProtocol, r.FromPort, r.ToPort]).toEqual(['tcp', MSK_IAM_PORT, MSK_IAM_PORT]);
    expect(rules.some((r) => r.CidrIp !== undefined)).toBe(false);
  });

  it('lets the functions out to MSK, the cache and the Secrets Manager endpoint only', () => {
    const fnSg = logicalIdOf(s, s.stack.network.functionsSecurityGroup);
    const sg = s.template.toJSON().Resources[fnSg].Properties;
    expect(sg.SecurityGroupEgress).toBeUndefined();
    const egress = Object.values(s.template.findResources('AWS::EC2::SecurityGroupEgress'))
      .map((r) => r.Properties)
      .filter((p) => JSON.stringify(p.GroupId) === JSON.stringify({ 'Fn::GetAtt': [fnSg, 'GroupId'] }))
      .map((p) => [p.DestinationSecurityGroupId['Fn::GetAtt'][0], p.FromPort])
      .sort();
    expect(egress).toEqual(
      [
        [logicalIdOf(s, s.stack.cache.securityGroup), 6380],
        [logicalIdOf(s, s.stack.kafka.securityGroup), MSK_IAM_PORT],
        [logicalIdOf(s, s.stack.network.endpointsSecurityGroup as IConstruct), 443],
      ].sort(),
    );
  });

  it('logs rejected flows', () => {
    s.template.hasResourceProperties('AWS::EC2::FlowLog', { TrafficType: 'REJECT' });
  });
});

describe('MSK', () => {
  it('is Serverless with IAM authentication by default', () => {
    s.template.resourceCountIs('AWS::MSK::Cluster', 0);
    s.template.hasResourceProperties('AWS::MSK::ServerlessCluster', {
      ClientAuthentication: { Sasl: { Iam: { Enabled: true } } },
    });
  });

  it('is provisioned with TLS, IAM, no unauthenticated access and broker logs when asked', () => {
    const p = synthStack({ kafka: 'provisioned', kafkaBrokers: 4 });
    p.template.resourceCountIs('AWS::MSK::ServerlessCluster', 0);
    p.template.hasResourceProperties('AWS::MSK::Cluster', {
      NumberOfBrokerNodes: 4,
      ClientAuthentication: { Sasl: { Iam: { Enabled: true } }, Unauthenticated: { Enabled: false } },
      EncryptionInfo: { EncryptionInTransit: { ClientBroker: 'TLS', InCluster: true } },
      LoggingInfo: { BrokerLogs: { CloudWatchLogs: { Enabled: true } } },
    });
    expect(() => synthStack({ kafka: 'provisioned', kafkaBrokers: 3 })).toThrow(/kafkaBrokers/);
  });
});

describe('the standard profile with crawlers in public subnets (crawlerPublicSubnets=true)', () => {
  it('gives each crawler task a public IP and no NAT, and admits nothing into the crawlers from anywhere', () => {
    const pub = synthStack({ crawlerPublicSubnets: true });
    pub.template.resourceCountIs('AWS::EC2::NatGateway', 0);
    pub.template.resourceCountIs('AWS::EC2::EIP', 0);
    const crawlers = logicalIdOf(pub, pub.stack.network.crawlerSecurityGroup);
    // Neither inline rules nor rules between groups: a public IP takes no inbound connection.
    expect(pub.template.toJSON().Resources[crawlers].Properties.SecurityGroupIngress).toBeUndefined();
    expect(ingressTo(pub, crawlers)).toEqual([]);
    const service = pub.template.toJSON().Resources[logicalIdOf(pub, pub.stack.fleet.service)].Properties;
    expect(service.NetworkConfiguration.AwsvpcConfiguration.AssignPublicIp).toBe('ENABLED');
    expect(service.NetworkConfiguration.AwsvpcConfiguration.SecurityGroups).toEqual([
      { 'Fn::GetAtt': [crawlers, 'GroupId'] },
    ]);
    // The standard stack's other parts are as they were: the URL Frontier, Serverless, provisioned pollers.
    pub.template.resourceCountIs('AWS::ElasticLoadBalancingV2::LoadBalancer', 1);
    pub.template.resourceCountIs('AWS::MSK::ServerlessCluster', 1);
  });
});
