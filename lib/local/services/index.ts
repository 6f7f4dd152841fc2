/**
 * `crawl-cluster services up|down|status`: the native local services (no Docker) that the local runtime,
 * the tests and CI use. `up` is idempotent and returns only when every service really works; `down`
 * stops only the processes `up` started.
 */
import type { Variables } from '../../config/index.ts';
import { kafkaDown, kafkaStatus, kafkaUp } from './kafka-service.ts';
import { type Progress, type ServiceStatus, type ServicesLayout, servicesLayout } from './layout.ts';
import { redisDown, redisStatus, redisUp } from './redis-service.ts';

export { type Progress, REPO_ROOT, type ServiceStatus, type ServicesLayout, servicesLayout } from './layout.ts';

/** Starts standalone Redis, cluster-mode Redis and Kafka; Redis first, as Kafka's JVM start is the long pole. */
export async function servicesUp(layout: ServicesLayout, progress: Progress): Promise<ServiceStatus[]> {
  const redis = await redisUp(layout, 'redis', progress);
  const cluster = await redisUp(layout, 'redis-cluster', progress);
  const kafka = await kafkaUp(layout, progress);
  return [redis, cluster, kafka];
}

export async function servicesDown(layout: ServicesLayout, progress: Progress): Promise<void> {
  await kafkaDown(layout, progress);
  await redisDown(layout, 'redis-cluster', progress);
  await redisDown(layout, 'redis', progress);
}

export async function servicesStatus(layout: ServicesLayout): Promise<ServiceStatus[]> {
  return [await redisStatus(layout, 'redis'), await redisStatus(layout, 'redis-cluster'), await kafkaStatus(layout)];
}

/** Layout from the configuration variables. */
export function layoutFrom(vars: Variables): ServicesLayout {
  return servicesLayout(vars);
}
