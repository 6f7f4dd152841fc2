import { type Admin, KafkaJSNonRetriableError, type ProducerBatch, type ProducerRecord } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { ConfigError } from '../../lib/errors.ts';
import {
  createKafka,
  ensureTopics,
  isSequenceError,
  kafkaSettings,
  mskIamSasl,
  renewingProducer,
} from '../../lib/kafka/client.ts';

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

describe('renewingProducer', () => {
  /** A stand-in producer: records what it sent; refuses the first `refusals` calls with `error`. */
  function fakeProducer(id: number, refusals: number, error: () => Error) {
    const sent: unknown[] = [];
    let left = refusals;
    const state = { id, sent, connected: false, disconnected: false };
    const send = async (what: unknown) => {
      if (!state.connected) throw new Error(`producer ${id} not connected`);
      if (left > 0) {
        left--;
        throw error();
      }
      sent.push(what);
      return [];
    };
    return {
      state,
      connect: async () => {
        state.connected = true;
      },
      disconnect: async () => {
        state.disconnected = true;
      },
      send: (record: ProducerRecord) => send(record),
      sendBatch: (batch: ProducerBatch) => send(batch),
    };
  }
  /** As kafkajs's retrier throws a protocol error it will not retry: wrapped, the original as its cause. */
  const outOfOrder = () => {
    const protocol = Object.assign(new Error('The broker received an out of order sequence number'), {
      type: 'OUT_OF_ORDER_SEQUENCE_NUMBER',
    });
    // (kafkajs's typings leave out the constructor's options, where the retrier passes the cause.)
    return Object.assign(new KafkaJSNonRetriableError(protocol), { cause: protocol });
  };
  const record = (value: string): ProducerRecord => ({ topic: 't', messages: [{ value }] });

  test('a send refused for its sequence number goes through a new producer, and later sends use that one', async () => {
    const made: ReturnType<typeof fakeProducer>[] = [];
    const p = renewingProducer(() => {
      const f = fakeProducer(made.length, made.length === 0 ? 1 : 0, outOfOrder);
      made.push(f);
      return f;
    });
    await p.connect();
    await p.send(record('a'));
    await p.sendBatch({ topicMessages: [record('b')] });

    expect(made).toHaveLength(2);
    expect(made[0]?.state.sent).toEqual([]);
    expect(made[0]?.state.disconnected).toBe(true);
    expect(made[1]?.state.sent).toEqual([record('a'), { topicMessages: [record('b')] }]);
  });

  test('sends refused together renew the producer once', async () => {
    const made: ReturnType<typeof fakeProducer>[] = [];
    const p = renewingProducer(() => {
      const f = fakeProducer(made.length, made.length === 0 ? 3 : 0, outOfOrder);
      made.push(f);
      return f;
    });
    await p.connect();
    await Promise.all([p.send(record('a')), p.send(record('b')), p.send(record('c'))]);

    expect(made).toHaveLength(2);
    expect(made[1]?.state.sent).toHaveLength(3);
  });

  test('other errors, and a second refusal of the same call, are thrown as they came', async () => {
    const other = renewingProducer(() => fakeProducer(0, 1, () => new Error('broker down')));
    await other.connect();
    await expect(other.send(record('a'))).rejects.toThrow('broker down');

    let made = 0;
    const stubborn = renewingProducer(() => fakeProducer(made++, 1, outOfOrder));
    await stubborn.connect();
    await expect(stubborn.send(record('a'))).rejects.toThrow(/out of order sequence/);
    expect(made).toBe(2);
  });

  test('isSequenceError looks through kafkajs wrappers and ignores other protocol errors', () => {
    expect(isSequenceError(outOfOrder())).toBe(true);
    expect(isSequenceError(Object.assign(new Error('x'), { type: 'UNKNOWN_PRODUCER_ID' }))).toBe(true);
    expect(isSequenceError(Object.assign(new Error('x'), { type: 'NOT_LEADER_FOR_PARTITION' }))).toBe(false);
    expect(isSequenceError('OUT_OF_ORDER_SEQUENCE_NUMBER')).toBe(false);
  });
});

describe('ensureTopics', () => {
  const unknown = () =>
    Object.assign(new Error('This server does not host this topic-partition'), {
      type: 'UNKNOWN_TOPIC_OR_PARTITION',
    });
  /** An admin whose createTopics gives up on the leaders (as kafkajs does under load) and whose metadata lags. */
  function laggingAdmin(lagCalls: number) {
    let metadataCalls = 0;
    const admin = {
      listTopics: async () => [],
      createTopics: async () => {
        throw unknown();
      },
      fetchTopicMetadata: async ({ topics }: { topics: string[] }) => {
        metadataCalls++;
        if (metadataCalls <= lagCalls) throw unknown();
        return { topics: topics.map((name) => ({ name, partitions: [{ partitionId: 0, leader: 1 }] })) };
      },
    };
    return { admin: admin as unknown as Admin, calls: () => metadataCalls };
  }

  test('waits for the leaders itself when kafkajs gave up on UNKNOWN_TOPIC_OR_PARTITION after creating them', async () => {
    const { admin, calls } = laggingAdmin(2);
    expect(await ensureTopics(admin, ['p.incoming'], 1)).toEqual(['p.incoming']);
    expect(calls()).toBe(3);
  });

  test('any other failure of createTopics is thrown as it is', async () => {
    const admin = {
      listTopics: async () => [],
      createTopics: async () => {
        throw new Error('not authorized');
      },
    } as unknown as Admin;
    await expect(ensureTopics(admin, ['p.incoming'], 1)).rejects.toThrow('not authorized');
  });
});
