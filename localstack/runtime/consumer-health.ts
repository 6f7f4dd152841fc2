/**
 * `GET /` of `crawl-cluster local` counts the monitors' consumers as part of Kafka: a broker that answers while the
 * kafka-monitor's consumer is down (crashed, being restarted, given up) is not a cluster that reads its requests,
 * so the report must not say GREEN, nor `kafka_connected: true` while nothing reads `incoming`.
 */
import type { HealthProbes } from '../../lib/rest/context.ts';
import type { ConsumerHealth } from './consumer-supervisor.ts';

/** The consumers of `consumers` that are not reading their topic: down (being restarted) or given up. */
export function consumersDown(consumers: readonly ConsumerHealth[]): ConsumerHealth[] {
  return consumers.filter((c) => c.state === 'down' || c.state === 'failed');
}

/**
 * `probes` with a Kafka probe that also fails while one of `consumers()` is down, naming it; the broker is only
 * asked when every consumer reads. Redis is probed as before.
 */
export function withConsumerHealth(probes: HealthProbes, consumers: () => readonly ConsumerHealth[]): HealthProbes {
  return {
    redis: () => probes.redis(),
    async kafka() {
      const down = consumersDown(consumers());
      if (down.length > 0) {
        throw new Error(
          `Kafka consumer${down.length === 1 ? '' : 's'} down: ${down.map((c) => `${c.name} (${c.state}: ${c.lastError ?? 'no error'})`).join(', ')}`,
        );
      }
      await probes.kafka();
    },
  };
}
