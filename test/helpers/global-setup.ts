/**
 * Global setup of the integration and e2e tiers: starts the local services when they are not running
 * (reusing them when they are). CI's .ci/run brings them down afterwards; a developer keeps them warm.
 */
import { config } from '../../lib/config/index.ts';
import { layoutFrom, servicesUp } from '../../localstack/services/index.ts';

export default async function setup(): Promise<void> {
  const started = Date.now();
  await servicesUp(layoutFrom(config()), (m) => process.stderr.write(`[services] ${m}\n`));
  process.stderr.write(`[services] ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}
