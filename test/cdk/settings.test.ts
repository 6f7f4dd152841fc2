import { describe, expect, it } from 'vitest';
import { SettingsError } from '../../cdk/context-values.ts';
import { readSettings } from '../../cdk/settings.ts';
import { VARIABLES } from '../../lib/config/variables.ts';

describe('settings from context', () => {
  it('defaults to the runtime defaults where they overlap', () => {
    const s = readSettings({});
    expect(s.topicPrefix).toBe(VARIABLES.KAFKA_TOPIC_PREFIX.default);
    expect(s.topicPartitions).toBe(VARIABLES.KAFKA_TOPIC_PARTITIONS.default);
    expect(s.kafka).toBe('serverless');
    expect(s.crawlerPublicSubnets).toBe(false);
    expect(s.natGateways).toBe(s.maxAzs);
    expect(s.restRateLimit).toBe(50);
    expect(s.restBurstLimit).toBe(100);
    expect(s.urlFrontier).toBe(true);
    expect([s.urlFrontierTaskCpu, s.urlFrontierTaskMemoryMiB]).toEqual([512, 1024]);
    expect([s.urlFrontierMinTasks, s.urlFrontierMaxTasks]).toEqual([2, 6]);
    expect(s.urlFrontierCertificateArn).toBeUndefined();
  });

  it('accepts the strings `cdk -c key=value` passes', () => {
    const s = readSettings({ maxTasks: '50', cacheClusterMode: 'true', runtimeEnv: '{"QUEUE_HITS":"3"}' });
    expect(s.maxTasks).toBe(50);
    expect(s.cacheClusterMode).toBe(true);
    expect(s.runtimeEnv).toEqual({ QUEUE_HITS: '3' });
    const f = readSettings({ urlFrontier: 'false', urlFrontierMinTasks: '1', urlFrontierMaxTasks: '3' });
    expect([f.urlFrontier, f.urlFrontierMinTasks, f.urlFrontierMaxTasks]).toEqual([false, 1, 3]);
  });

  it('names the context key of a bad value', () => {
    expect(() => readSettings({ maxAzs: 1 })).toThrow(/context "maxAzs"/);
    expect(() => readSettings({ kafka: 'self-hosted' })).toThrow(/context "kafka"/);
    expect(() => readSettings({ minTasks: 5, maxTasks: 2 })).toThrow(/context "maxTasks"/);
    expect(() => readSettings({ taskCpu: 1000 })).toThrow(/context "taskCpu"/);
    expect(() => readSettings({ logRetentionDays: 10 })).toThrow(/context "logRetentionDays"/);
    expect(() => readSettings({ topicPrefix: 'has space' })).toThrow(SettingsError);
    expect(() => readSettings({ restRateLimit: 0 })).toThrow(/context "restRateLimit"/);
    expect(() => readSettings({ urlFrontier: 'yes' })).toThrow(/context "urlFrontier"/);
    expect(() => readSettings({ urlFrontierTaskCpu: 768 })).toThrow(/context "urlFrontierTaskCpu"/);
    expect(() => readSettings({ urlFrontierTaskMemoryMiB: 256 })).toThrow(/context "urlFrontierTaskMemoryMiB"/);
    expect(() => readSettings({ urlFrontierMinTasks: 0 })).toThrow(/context "urlFrontierMinTasks"/);
    expect(() => readSettings({ urlFrontierMinTasks: 4, urlFrontierMaxTasks: 3 })).toThrow(
      /context "urlFrontierMaxTasks"/,
    );
    expect(() => readSettings({ urlFrontierCertificateArn: 'arn:aws:iam::123456789012:server-certificate/x' })).toThrow(
      /context "urlFrontierCertificateArn"/,
    );
  });
});
