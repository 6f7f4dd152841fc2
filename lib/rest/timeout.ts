/**
 * Bounds on calls to Redis and Kafka: their clients retry for a long time on their own (ioredis reconnects,
 * kafkajs backs off), and an HTTP caller should hear about an outage in seconds, not after the clients give up.
 */
import { InfrastructureError } from '../errors.ts';
import { rejectAfter } from '../timeout.ts';

/**
 * Settles like `promise`, or rejects with an {@link InfrastructureError} naming `what` when it has not
 * settled after `ms`. The underlying call is not cancelled; its late result is ignored.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return rejectAfter(promise, ms, () => new InfrastructureError(`${what} did not answer within ${ms} ms`));
}
