import { beforeAll, describe, expect, it } from 'vitest';
import { REQUIRED_VARIABLES } from '../../cdk/runtime-env.ts';
import { METRICS_NAMESPACE } from '../../functions/shared/observability.ts';
import { VARIABLES } from '../../lib/config/variables.ts';
import { logicalIdOf, resourceOf, type Synthesized, synthStack } from './synth.ts';

let s: Synthesized;
beforeAll(() => {
  s = synthStack();
});

const all = () => [...s.stack.functions.all, { name: 'topics', fn: s.stack.kafka.topicsFunction }];

describe('Lambda functions', () => {
  it('run Node 24 on arm64, in the private subnets, behind the functions security group', () => {
    const sg = logicalIdOf(s, s.stack.network.functionsSecurityGroup);
    const subnets = s.stack.network.vpc.privateSubnets.map((subnet) => ({ Ref: logicalIdOf(s, subnet) }));
    for (const { name, fn } of all()) {
      const p = resourceOf(s, fn.function).Properties;
      expect(p.Runtime, name).toBe('nodejs24.x');
      expect(p.Architectures, name).toEqual(['arm64']);
      expect(p.Handler, name).toBe('index.handler');
      expect(p.VpcConfig.SecurityGroupIds, name).toEqual([{ 'Fn::GetAtt': [sg, 'GroupId'] }]);
      expect(p.VpcConfig.SubnetIds, name).toEqual(subnets);
    }
  });

  it('give the monitors a minute and the schedules less than the minute between runs', () => {
    const timeout = (name: string) => {
      const f = s.stack.functions.all.find((x) => x.name === name);
      if (!f) throw new Error(`no function ${name}`);
      return resourceOf(s, f.fn.function).Properties.Timeout;
    };
    expect(timeout('kafka-monitor')).toBe(60);
    expect(timeout('redis-monitor')).toBe(60);
    for (const name of ['expire', 'stats', 'reclaim']) expect(timeout(name)).toBeLessThan(60);
  });

  it('log to their own group with the configured retention', () => {
    for (const { name, fn } of all()) {
      const p = resourceOf(s, fn.function).Properties;
      expect(p.LoggingConfig, name).toEqual({ LogGroup: { Ref: logicalIdOf(s, fn.logGroup) } });
      expect(resourceOf(s, fn.logGroup).Properties.RetentionInDays, name).toBe(30);
    }
  });

  it('set every variable a monitor needs on AWS, by the names of lib/config/variables.ts', () => {
    for (const { name, fn } of s.stack.functions.all) {
      const env = resourceOf(s, fn.function).Properties.Environment.Variables;
      const redisOnly = name === 'stats' || name === 'reclaim';
      const required = redisOnly ? REQUIRED_VARIABLES.redisOnly : REQUIRED_VARIABLES.monitor;
      for (const v of required) expect(env, `${name} ${v}`).toHaveProperty(v);
      for (const v of Object.keys(env)) {
        if (v.startsWith('POWERTOOLS_') || v === 'NODE_OPTIONS') continue;
        expect(VARIABLES, `${name} sets ${v}, which lib/config does not know`).toHaveProperty(v);
        // stats and reclaim get no Kafka settings at all: they never open a producer.
        if (redisOnly) expect(v.startsWith('KAFKA_'), `${name} sets ${v}`).toBe(false);
      }
      if (!redisOnly) {
        expect(env.KAFKA_SASL_MECHANISM).toBe('aws-msk-iam');
        expect(env.KAFKA_TOPIC_PREFIX).toBe('demo');
      }
      expect(env.REDIS_TLS).toBe('true');
      expect(env.REDIS_CLUSTER).toBe('false');
      expect(env.POWERTOOLS_SERVICE_NAME).toBe(name);
      expect(env.POWERTOOLS_METRICS_NAMESPACE).toBe(METRICS_NAMESPACE);
    }
  });

  it('set the variables the topics custom resource needs', () => {
    const env = resourceOf(s, s.stack.kafka.topicsFunction.function).Properties.Environment.Variables;
    for (const v of REQUIRED_VARIABLES.topics) expect(env).toHaveProperty(v);
  });

  it('point at the stack’s own brokers and cache, and never carry the AUTH token as a literal', () => {
    const env = resourceOf(s, s.stack.functions.kafkaMonitor.function).Properties.Environment.Variables;
    expect(env.KAFKA_BROKERS).toEqual({
      'Fn::GetAtt': [expect.stringMatching(/^KafkaBootstrapBrokers/), 'BootstrapBrokerStringSaslIam'],
    });
    expect(env.REDIS_HOST).toEqual({
      'Fn::GetAtt': [expect.stringMatching(/^CacheReplicationGroup/), 'PrimaryEndPoint.Address'],
    });
    expect(env.REDIS_PORT).toBe('6380');
    expect(env.REDIS_PASSWORD).toBeUndefined();
    expect(JSON.stringify(env)).not.toContain('{{resolve:secretsmanager:');
  });

  it('never allow private-network fetches or debug settings on AWS', () => {
    for (const { fn } of all()) {
      const env = resourceOf(s, fn.function).Properties.Environment.Variables;
      expect(env.ALLOW_PRIVATE_NETWORKS).toBeUndefined();
      expect(env.CRAWLER_HOST_MAP).toBeUndefined();
    }
  });

  it('pass runtime overrides from context through, and refuse to override what the stack owns', () => {
    const c = synthStack({ runtimeEnv: { QUEUE_HITS: '5', LOG_LEVEL: 'DEBUG' } });
    const env = resourceOf(c, c.stack.functions.scheduled.stats.function).Properties.Environment.Variables;
    expect(env.QUEUE_HITS).toBe('5');
    expect(env.LOG_LEVEL).toBe('DEBUG');
    expect(() => synthStack({ runtimeEnv: { REDIS_HOST: 'elsewhere' } })).toThrow(/REDIS_HOST is set by the stack/);
    expect(() => synthStack({ runtimeEnv: { NOT_A_VARIABLE: 'x' } })).toThrow(/NOT_A_VARIABLE is not a variable/);
  });
});
