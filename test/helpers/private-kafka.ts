/**
 * A Kafka broker of a test's own, for tests that stop and start a broker: the shared one on CRAWL_KAFKA_PORT
 * serves every other test at the same time and must never go down. It is the broker `services up` runs
 * (localstack/services/kafka-service.ts) with a data directory and ports of its own, and the jars of the shared
 * one (linked, never downloaded again). Its data outlives {@link PrivateKafka.stop}, as a restarted broker's does.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import { config } from '../../lib/config/index.ts';
import { createKafka } from '../../lib/kafka/client.ts';
import { kafkaDown, kafkaStatus, kafkaUp } from '../../localstack/services/kafka-service.ts';
import { type ServicesLayout, servicesLayout } from '../../localstack/services/layout.ts';
import { freePort } from '../../localstack/services/processes.ts';

export interface PrivateKafka {
  /** `127.0.0.1:port`, for KAFKA_BROKERS. */
  brokers: string;
  port: number;
  /** A kafkajs client of this broker. */
  kafka(): Kafka;
  /** Starts the broker (again) and waits until a produce/consume round trip works. */
  start(): Promise<void>;
  /** Stops the broker (SIGTERM, as `services down`); its data stays. */
  stop(): Promise<void>;
  /** Stops it and deletes its directory. */
  remove(): Promise<void>;
  /** Freezes the broker's process (SIGSTOP): connections stay open and nothing answers, as on a stalled host. */
  freeze(): Promise<void>;
  /** Lets a frozen broker run again (SIGCONT). */
  thaw(): Promise<void>;
}

/** Starts a broker of the test's own on free ports. */
export async function startPrivateKafka(): Promise<PrivateKafka> {
  const base = config();
  const shared = join(servicesLayout(base).dir, 'kafka', 'libs');
  if (!existsSync(join(shared, '.complete'))) {
    throw new Error(`no Kafka jars in ${shared}: run crawl-cluster services up once`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'cc-private-kafka-'));
  mkdirSync(join(dir, 'kafka'), { recursive: true });
  symlinkSync(shared, join(dir, 'kafka', 'libs'));
  const port = await freePort();
  let controllerPort = await freePort();
  while (controllerPort === port) controllerPort = await freePort();
  const layout: ServicesLayout = servicesLayout({
    ...base,
    CRAWL_SERVICES_DIR: dir,
    CRAWL_KAFKA_PORT: port,
    CRAWL_KAFKA_CONTROLLER_PORT: controllerPort,
    CRAWL_KAFKA_HEAP: '256m',
    CRAWL_LOCALSTACK: false,
  });
  const progress = (m: string) => process.stderr.write(`[private kafka] ${m}\n`);
  const brokers = `127.0.0.1:${port}`;
  const signal = async (name: NodeJS.Signals): Promise<void> => {
    const { pid } = await kafkaStatus(layout);
    if (pid === undefined) throw new Error('the private broker is not running');
    process.kill(pid, name);
  };
  const broker: PrivateKafka = {
    brokers,
    port,
    kafka: () => createKafka({ brokers: [brokers], clientId: 'crawl-cluster-test' }),
    start: async () => {
      await kafkaUp(layout, progress);
    },
    stop: () => kafkaDown(layout, progress),
    freeze: () => signal('SIGSTOP'),
    thaw: () => signal('SIGCONT'),
    async remove() {
      await signal('SIGCONT').catch(() => undefined);
      await kafkaDown(layout, progress).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await broker.start();
  } catch (error) {
    await broker.remove();
    throw error;
  }
  return broker;
}
