import { describe, expect, it } from 'vitest';
import { DeliveryGate } from '../../lib/crawl/crawler/gate.ts';

describe('DeliveryGate', () => {
  it('closes for 0.5 s on a first failure; failures while it waits for its probe do not lengthen the wait', () => {
    let now = 1000;
    const gate = new DeliveryGate(() => now, 50);
    expect(gate.failed()).toBe(true);
    expect(gate.closed).toBe(true);
    // The kept deliveries from before it closed fail again and again meanwhile (a shard failing over).
    for (now = 1100; now < 1500; now += 100) expect(gate.failed()).toBe(false);
    now = 1499;
    expect(gate.wait()).toBeGreaterThan(0);
    now = 1500;
    expect(gate.wait()).toBe(0);
    expect(gate.closings).toBe(1);
  });

  it('doubles the wait when a delivery fails again once the wait is over, up to 5 s', () => {
    let now = 0;
    const gate = new DeliveryGate(() => now, 50);
    /** Moves the clock on until the gate lets a probe go; returns how long that took. */
    const untilProbe = () => {
      const from = now;
      while (gate.wait() > 0) now += 10;
      return now - from;
    };
    gate.failed();
    const waits = [untilProbe()];
    for (let round = 0; round < 5; round++) {
      // The probe's delivery fails.
      gate.failed();
      waits.push(untilProbe());
    }
    expect(waits).toEqual([500, 1000, 2000, 4000, 5000, 5000]);
  });

  it('opens on the first page message or ack stored, saying how long it was closed', () => {
    let now = 0;
    const gate = new DeliveryGate(() => now, 50);
    expect(gate.worked()).toBeUndefined();
    gate.failed();
    now = 300;
    gate.failed();
    now = 420;
    expect(gate.worked()).toBe(420);
    expect(gate.closed).toBe(false);
    expect(gate.wait()).toBe(0);
  });
});
