/**
 * Loads one of kafkajs's internal modules (its `src/...` files) for the fixes that replace parts of it on load
 * (encoder.ts, request-queue.ts). Undefined where kafkajs is not a module of its own (a bundle that inlines it),
 * where those fixes then do nothing; the Lambda functions keep kafkajs in node_modules for them
 * (cdk/constructs/crawl-function.ts).
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** `kafkajs/<path>`'s exports, or undefined where it cannot be loaded. */
export function kafkajsInternal<T>(path: string): T | undefined {
  try {
    return require(`kafkajs/${path}`) as T;
  } catch {
    return undefined;
  }
}
