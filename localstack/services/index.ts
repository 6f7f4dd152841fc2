/**
 * `crawl-cluster services up|down|status`: the native local services (no Docker) that the local runtime,
 * the tests and CI use. `up` is idempotent and returns only when every service really works; `down`
 * stops only the processes `up` started.
 */
import type { Variables } from '../../lib/config/index.ts';
import { kafkaDown, kafkaStatus, kafkaUp } from './kafka-service.ts';
import { type Progress, type ServiceStatus, type ServicesLayout, servicesLayout } from './layout.ts';
import { localstackDown, localstackStatus, localstackUp } from './localstack-service.ts';
import { withServicesLock } from './lock.ts';
import { redisDown, redisStatus, redisUp } from './redis-service.ts';

export type { Progress, ServiceStatus, ServicesLayout } from './layout.ts';

/** One service for {@link servicesUp}. */
interface Step {
  status(): Promise<ServiceStatus>;
  up(): Promise<ServiceStatus>;
  down(): Promise<void>;
}

/**
 * Starts standalone Redis, cluster-mode Redis, Kafka and (unless CRAWL_LOCALSTACK=false) LocalStack; Redis first,
 * as Kafka's JVM start is long, and LocalStack last, as its first start builds a Python virtualenv.
 * When one fails, the services this call started are stopped again (those that ran before are left alone),
 * so a failed `up` leaves nothing of its own running. Holds the services lock of the directory (lock.ts): another
 * `up` or `down` on it waits until this one is done.
 */
export async function servicesUp(layout: ServicesLayout, progress: Progress): Promise<ServiceStatus[]> {
  return withServicesLock(layout.dir, { command: 'services up', progress }, () => up(layout, progress));
}

async function up(layout: ServicesLayout, progress: Progress): Promise<ServiceStatus[]> {
  const steps: Step[] = [
    {
      status: () => redisStatus(layout, 'redis'),
      up: () => redisUp(layout, 'redis', progress),
      down: () => redisDown(layout, 'redis', progress),
    },
    {
      status: () => redisStatus(layout, 'redis-cluster'),
      up: () => redisUp(layout, 'redis-cluster', progress),
      down: () => redisDown(layout, 'redis-cluster', progress),
    },
    { status: () => kafkaStatus(layout), up: () => kafkaUp(layout, progress), down: () => kafkaDown(layout, progress) },
  ];
  if (layout.localstack) {
    steps.push({
      status: () => localstackStatus(layout),
      up: () => localstackUp(layout, progress),
      down: () => localstackDown(layout, progress),
    });
  }
  const statuses: ServiceStatus[] = [];
  const startedHere: (() => Promise<void>)[] = [];
  for (const step of steps) {
    const ranBefore = (await step.status()).state === 'running';
    if (!ranBefore) startedHere.push(step.down);
    try {
      statuses.push(await step.up());
    } catch (error) {
      if (startedHere.length > 0) progress('services up failed; stopping what it started');
      // The failed service too, when it is still alive (it did not become ready in time).
      for (const down of startedHere.reverse()) await down().catch(() => {});
      throw error;
    }
  }
  return statuses;
}

/**
 * Stops what `up` started, LocalStack too even when CRAWL_LOCALSTACK is now false. Holds the services lock, as `up`
 * does.
 */
export async function servicesDown(layout: ServicesLayout, progress: Progress): Promise<void> {
  await withServicesLock(layout.dir, { command: 'services down', progress }, async () => {
    await localstackDown(layout, progress);
    await kafkaDown(layout, progress);
    await redisDown(layout, 'redis-cluster', progress);
    await redisDown(layout, 'redis', progress);
  });
}

export async function servicesStatus(layout: ServicesLayout): Promise<ServiceStatus[]> {
  const statuses = [
    await redisStatus(layout, 'redis'),
    await redisStatus(layout, 'redis-cluster'),
    await kafkaStatus(layout),
  ];
  if (layout.localstack) statuses.push(await localstackStatus(layout));
  return statuses;
}

/** Layout from the configuration variables. */
export function layoutFrom(vars: Variables): ServicesLayout {
  return servicesLayout(vars);
}
