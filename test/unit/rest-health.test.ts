/**
 * `GET /` under a crowd (lib/rest/health.ts): calls that arrive while a probe runs share it, so many health checks
 * cost one probe per service at a time; a hung probe releases its sharers at the bound and the next call probes
 * again.
 */
import { describe, expect, it } from 'vitest';
import type { HealthProbes, RestContext } from '../../lib/rest/context.ts';
import { createRestRouter } from '../../lib/rest/router.ts';
import { testContext } from '../helpers/fakes.ts';

/** A probe that waits until the test opens its gate (or never, while `hung`), counting its calls. */
function gatedProbe() {
  const state = { calls: 0, hung: false, open: () => {} };
  const probe = () => {
    state.calls += 1;
    return new Promise<void>((resolve) => {
      if (!state.hung) state.open = resolve;
    });
  };
  return { state, probe };
}

function routerWith(health: HealthProbes, probeTimeoutMs: number) {
  const ctx: RestContext = { ...testContext(), health, options: { probeTimeoutMs } };
  return createRestRouter(ctx);
}

const get = { method: 'GET', path: '/', headers: {} };

describe('GET / health probes', () => {
  it('shares one running probe per service among concurrent calls, and probes afresh after it ends', async () => {
    const redis = gatedProbe();
    const kafka = gatedProbe();
    const router = routerWith({ redis: redis.probe, kafka: kafka.probe }, 60_000);
    const answers = Array.from({ length: 20 }, () => router(get));
    await Promise.resolve();
    expect([redis.state.calls, kafka.state.calls]).toEqual([1, 1]);
    redis.state.open();
    kafka.state.open();
    for (const answer of await Promise.all(answers)) {
      expect(JSON.parse(answer.body)).toMatchObject({ node_health: 'GREEN' });
    }
    const next = router(get);
    await Promise.resolve();
    expect([redis.state.calls, kafka.state.calls]).toEqual([2, 2]);
    redis.state.open();
    kafka.state.open();
    expect(JSON.parse((await next).body)).toMatchObject({ node_health: 'GREEN' });
  });

  it('answers the sharers of a hung probe disconnected at the bound, and the next call probes again', async () => {
    const redis = gatedProbe();
    redis.state.hung = true;
    const router = routerWith({ redis: redis.probe, kafka: async () => {} }, 30);
    const answers = await Promise.all([router(get), router(get), router(get)]);
    for (const answer of answers) {
      expect(JSON.parse(answer.body)).toMatchObject({ redis_connected: false, node_health: 'YELLOW' });
    }
    expect(redis.state.calls).toBe(1);
    redis.state.hung = false;
    const next = router(get);
    await Promise.resolve();
    expect(redis.state.calls).toBe(2);
    redis.state.open();
    expect(JSON.parse((await next).body)).toMatchObject({ redis_connected: true, node_health: 'GREEN' });
  });
});
