/**
 * The lease reclaim job (functions/reclaim): requests leased by crawlers that died before acking them go back to
 * their queues.
 */
import type { MonitorContext } from './context.ts';

/** Returns expired leases of every spider type to their queues. @returns how many */
export async function reclaimLeases(ctx: MonitorContext): Promise<number> {
  let total = 0;
  for (const spider of await ctx.frontier.spiders()) total += await ctx.frontier.reclaim(spider, ctx.now());
  return total;
}
