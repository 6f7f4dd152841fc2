import { describe, expect, it } from 'vitest';
import { reclaimLeases } from '../../lib/monitor/reclaim-leases.ts';
import { testContext } from '../helpers/fakes.ts';

describe('reclaimLeases', () => {
  it('returns the expired leases summed over every spider type', async () => {
    const ctx = testContext();
    ctx.frontier.expireLeases('link', 3);
    ctx.frontier.expireLeases('wandering', 2);

    expect(await reclaimLeases(ctx)).toBe(5);
    expect(await reclaimLeases(ctx)).toBe(0);
  });

  it('returns 0 when no spider type ever had work', async () => {
    expect(await reclaimLeases(testContext())).toBe(0);
  });
});
