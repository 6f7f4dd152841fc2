/**
 * A real Apache Kafka broker from its Maven Central artifacts (localstack/kafka/pom.xml), run on
 * the machine's Java as one KRaft broker+controller on loopback with auto topic creation off (as MSK).
 * Ready means a topic create, a produce and a consume all succeeded.
 */
import { Buffer } from 'node:buffer';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { ServiceStartError } from '../../lib/errors.ts';
import { createKafka } from '../../lib/kafka/client.ts';
import { REPO_ROOT } from '../repo-root.ts';
import type { Progress, ServiceStatus, ServicesLayout } from './layout.ts';
import { bringUp, ownedPid, type ServiceSpec, serviceStatus, startService, stopProcess } from './processes.ts';

const POM = join(REPO_ROOT, 'localstack', 'kafka', 'pom.xml');
const READY_TOPIC = '__crawl_cluster_ready';

function paths(layout: ServicesLayout) {
  const dir = join(layout.dir, 'kafka');
  return {
    dir,
    libs: join(dir, 'libs'),
    libsDone: join(dir, 'libs', '.complete'),
    mvnLog: join(dir, 'mvn.log'),
    data: join(dir, 'data'),
    logs: join(dir, 'logs'),
    props: join(dir, 'server.properties'),
    log4j: join(dir, 'log4j.properties'),
    pid: join(dir, 'kafka.pid'),
    out: join(dir, 'kafka.out'),
    serverLog: join(dir, 'logs', 'server.log'),
  };
}

/** Where the broker `services up` starts keeps its partitions (`log.dirs`): `<topic>-<partition>/` each. */
export function kafkaDataDir(layout: ServicesLayout): string {
  return paths(layout).data;
}

/**
 * Downloads Kafka and its runtime dependencies from Maven Central once (later runs are offline). Maven's output goes
 * to `<kafka dir>/mvn.log`, not the terminal: even in batch mode without colour it writes bare ANSI resets, and on
 * success it has nothing to say. A failure names its last lines and the log.
 */
function ensureLibs(p: ReturnType<typeof paths>, progress: Progress): string {
  if (!existsSync(p.libsDone)) {
    if (spawnSync('mvn', ['-v'], { stdio: 'ignore' }).status !== 0) {
      throw new ServiceStartError('Maven (mvn) is needed to fetch Kafka from Maven Central: apt-get install -y maven');
    }
    progress(`kafka: fetching Apache Kafka jars from Maven Central into ${p.libs} (first run only)`);
    mkdirSync(p.libs, { recursive: true });
    const mvn = spawnSync(
      'mvn',
      [
        '-q',
        '-B',
        '-Dstyle.color=never',
        '-f',
        POM,
        'dependency:copy-dependencies',
        `-DoutputDirectory=${p.libs}`,
        '-DincludeScope=runtime',
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 },
    );
    const output = stripVTControlCharacters(`${mvn.stdout ?? ''}${mvn.stderr ?? ''}`);
    writeFileSync(p.mvnLog, output);
    if (mvn.status !== 0) {
      const tail = output
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '')
        .slice(-5)
        .join(' | ');
      throw new ServiceStartError(
        `kafka: mvn could not fetch the Kafka jars (${tail || mvn.error?.message || `exit code ${mvn.status}`}); ` +
          `its output is in ${p.mvnLog}`,
      );
    }
    writeFileSync(p.libsDone, new Date().toISOString());
  }
  const jars = readdirSync(p.libs).filter((f) => f.endsWith('.jar'));
  if (!jars.some((j) => j.startsWith('kafka_2.13-'))) {
    throw new ServiceStartError(`kafka: no kafka_2.13 jar in ${p.libs}; delete that folder and run again`);
  }
  return jars.map((j) => join(p.libs, j)).join(':');
}

/**
 * The Kafka jars of a services directory, fetched with Maven on the first call; their classpath.
 * @public (imported by a test's child process, which knip cannot see)
 */
export function kafkaLibs(layout: ServicesLayout, progress: Progress): string {
  return ensureLibs(paths(layout), progress);
}

function writeConfig(layout: ServicesLayout, p: ReturnType<typeof paths>): void {
  const props = [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${layout.kafkaControllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${layout.kafkaPort},CONTROLLER://127.0.0.1:${layout.kafkaControllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${layout.kafkaPort}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
    `log.dirs=${p.data}`,
    'num.partitions=1',
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=10',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    // As on MSK: topics are created up front, never by a typo.
    'auto.create.topics.enable=false',
    'group.initial.rebalance.delay.ms=0',
    // Large enough for the contract's page messages; bodies beyond it go to the object store.
    'message.max.bytes=10485760',
    'log.retention.hours=24',
    'log.segment.bytes=67108864',
  ];
  writeFileSync(p.props, `${props.join('\n')}\n`);
  writeFileSync(
    p.log4j,
    [
      'log4j.rootLogger=WARN, file',
      'log4j.appender.file=org.apache.log4j.RollingFileAppender',
      `log4j.appender.file.File=${join(p.logs, 'server.log')}`,
      'log4j.appender.file.MaxFileSize=20MB',
      'log4j.appender.file.MaxBackupIndex=2',
      'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
      'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
      'log4j.logger.kafka.server.KafkaServer=INFO',
      'log4j.logger.kafka.server.BrokerServer=INFO',
      '',
    ].join('\n'),
  );
}

function formatStorage(cp: string, p: ReturnType<typeof paths>, progress: Progress): void {
  if (existsSync(join(p.data, 'meta.properties'))) return;
  progress('kafka: formatting KRaft storage');
  const java = (args: string[]) =>
    execFileSync('java', ['-cp', cp, `-Dlog4j.configuration=file:${p.log4j}`, ...args], { encoding: 'utf8' }).trim();
  const clusterId = java(['kafka.tools.StorageTool', 'random-uuid']).split('\n').pop() ?? '';
  java(['kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', p.props, '--ignore-formatted']);
}

/** True when a produce and a consume through the broker both work. */
async function roundTrip(port: number): Promise<boolean> {
  const kafka = createKafka({
    brokers: [`127.0.0.1:${port}`],
    clientId: 'crawl-cluster-ready',
    connectionTimeoutMs: 1000,
  });
  const admin = kafka.admin();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  const consumer = kafka.consumer({ groupId: `${READY_TOPIC}-${process.pid}-${Date.now()}` });
  try {
    await admin.connect();
    const topics = await admin.listTopics();
    if (!topics.includes(READY_TOPIC)) {
      await admin.createTopics({ waitForLeaders: true, topics: [{ topic: READY_TOPIC, numPartitions: 1 }] });
    }
    const token = `ready-${Date.now()}-${Math.random()}`;
    await producer.connect();
    await producer.send({ topic: READY_TOPIC, messages: [{ value: token }] });
    await consumer.connect();
    await consumer.subscribe({ topic: READY_TOPIC, fromBeginning: true });
    const seen = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 20_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          if (message.value?.toString() === token) {
            clearTimeout(timer);
            resolve(true);
          }
        },
      });
    });
    return await seen;
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
  }
}

/** How long a listener on the Kafka port has to answer as a broker before `up` calls it a stranger. */
const PROBE_MS = 3000;

/**
 * Whether what listens on `port` answers as a Kafka broker: an ApiVersions v0 request must get a response
 * that carries its correlation id. A plain socket, not kafkajs: kafkajs retries a connection to a listener
 * that never answers for minutes, and would keep this command alive that long.
 * @returns why not, or `undefined` when it does
 */
function notKafka(port: number): Promise<string | undefined> {
  const clientId = Buffer.from('crawl-cluster-probe');
  const correlationId = 0x0c0ffee;
  const request = Buffer.alloc(4 + 10 + clientId.length);
  request.writeInt32BE(request.length - 4, 0);
  request.writeInt16BE(18, 4); // ApiVersions
  request.writeInt16BE(0, 6); // version 0
  request.writeInt32BE(correlationId, 8);
  request.writeInt16BE(clientId.length, 12);
  clientId.copy(request, 14);
  return new Promise((resolve) => {
    let received = Buffer.alloc(0);
    const socket = connect({ port, host: '127.0.0.1' });
    const done = (why: string | undefined) => {
      socket.destroy();
      resolve(why);
    };
    socket.setTimeout(PROBE_MS, () => done(`no Kafka answer within ${PROBE_MS / 1000} s`));
    socket.once('connect', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 8) return;
      done(received.readInt32BE(4) === correlationId ? undefined : 'it does not answer the Kafka protocol');
    });
    socket.once('end', () => done('it closed the connection without a Kafka answer'));
    socket.once('error', (error) => done(error.message));
  });
}

/** Starts the broker (idempotent) and waits until a produce/consume round trip works. */
/** What bringUp / serviceStatus need of the broker (processes.ts). */
function spec(layout: ServicesLayout, progress: Progress): ServiceSpec {
  const p = paths(layout);
  return {
    name: 'kafka',
    what: 'Kafka',
    port: layout.kafkaPort,
    pidFile: p.pid,
    marker: p.props,
    out: p.out,
    logs: [p.serverLog],
    portVariable: 'CRAWL_KAFKA_PORT',
    timeoutMs: layout.timeoutSec * 1000,
    foreign: () => notKafka(layout.kafkaPort),
    start: async () => {
      mkdirSync(p.logs, { recursive: true });
      mkdirSync(p.data, { recursive: true });
      const cp = ensureLibs(p, progress);
      writeConfig(layout, p);
      formatStorage(cp, p, progress);
      progress(`kafka: starting broker on 127.0.0.1:${layout.kafkaPort} (log ${p.out}, ${p.serverLog})`);
      return startService(
        'kafka',
        'java',
        [
          '-Xms128m',
          `-Xmx${layout.kafkaHeap}`,
          '-XX:+UseSerialGC',
          '-XX:TieredStopAtLevel=1',
          '-Djava.awt.headless=true',
          `-Dlog4j.configuration=file:${p.log4j}`,
          `-Dkafka.logs.dir=${p.logs}`,
          '-cp',
          cp,
          'kafka.Kafka',
          p.props,
        ],
        { out: p.out, pidFile: p.pid, logs: [p.serverLog] },
      );
    },
    ready: () => roundTrip(layout.kafkaPort),
    readyNote: 'produce/consume checked',
  };
}

export function kafkaUp(layout: ServicesLayout, progress: Progress): Promise<ServiceStatus> {
  return bringUp(spec(layout, progress), progress);
}

export async function kafkaDown(layout: ServicesLayout, progress: Progress): Promise<void> {
  const p = paths(layout);
  const pid = ownedPid(p.pid, p.props);
  if (pid === undefined) return;
  progress(`kafka: stopping pid ${pid}`);
  // A clean shutdown of a KRaft broker takes a few seconds; SIGKILL after 30 s.
  await stopProcess(pid, p.pid, 30_000);
}

export function kafkaStatus(layout: ServicesLayout): Promise<ServiceStatus> {
  return serviceStatus(spec(layout, () => {}));
}
