import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { ConfigError } from '../../lib/errors.ts';
import { createKafka, kafkaSettings, mskIamSasl } from '../../lib/kafka/client.ts';

const base = {
  KAFKA_BROKERS: '127.0.0.1:9092',
  KAFKA_CLIENT_ID: 'crawl-cluster',
  KAFKA_SASL_MECHANISM: 'none' as const,
  KAFKA_SSL: false,
  KAFKA_CONNECT_TIMEOUT_MS: 5000,
  AWS_REGION: 'eu-west-1',
};

describe('kafka settings', () => {
  test('a comma-separated broker list is split and trimmed', () => {
    expect(kafkaSettings({ ...base, KAFKA_BROKERS: ' b-1:9098, b-2:9098 ,' }).brokers).toEqual([
      'b-1:9098',
      'b-2:9098',
    ]);
  });

  test('a broker without a port is refused naming KAFKA_BROKERS', () => {
    expect(() => kafkaSettings({ ...base, KAFKA_BROKERS: 'b-1' })).toThrow(ConfigError);
    expect(() => kafkaSettings({ ...base, KAFKA_BROKERS: 'b-1' })).toThrow(/KAFKA_BROKERS/);
  });
});

describe('MSK IAM auth', () => {
  const saved = { ...process.env };
  beforeEach(() => {
    process.env.AWS_ACCESS_KEY_ID = 'AKIAIOSFODNN7EXAMPLE';
    process.env.AWS_SECRET_ACCESS_KEY = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
  });
  afterEach(() => {
    process.env = { ...saved };
  });

  test('the OAUTHBEARER token is a presigned kafka-cluster:Connect URL for the configured region', async () => {
    const sasl = mskIamSasl('eu-west-1') as {
      mechanism: string;
      oauthBearerProvider: () => Promise<{ value: string }>;
    };
    expect(sasl.mechanism).toBe('oauthbearer');
    const { value } = await sasl.oauthBearerProvider();
    const url = new URL(Buffer.from(value, 'base64url').toString('utf8'));
    expect(url.hostname).toBe('kafka.eu-west-1.amazonaws.com');
    expect(url.searchParams.get('Action')).toBe('kafka-cluster:Connect');
    expect(url.searchParams.get('X-Amz-Credential')).toContain('AKIAIOSFODNN7EXAMPLE');
  });

  test('aws-msk-iam makes a client without throwing (TLS and SASL are set up, nothing connects yet)', () => {
    expect(() => createKafka({ brokers: ['b-1:9098'], clientId: 'x', saslMechanism: 'aws-msk-iam' })).not.toThrow();
  });
});
