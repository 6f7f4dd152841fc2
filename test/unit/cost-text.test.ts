import { describe, expect, it } from 'vitest';
import { costText } from '../../cdk/cost.ts';
import type { CostReport, ResourceCost } from '../../cdk/cost-model.ts';

const resource = (what: string, unit_usd: number, unit: string, idle: number): ResourceCost => ({
  id: what.replace(/\W/g, ''),
  type: 'AWS::Test::Thing',
  what,
  unit_usd,
  unit,
  source: 'https://example.com/pricing',
  idle_units_per_month: 730,
  idle_usd_per_month: idle,
});

describe('npm run cost, the text table', () => {
  it('prints every unit name whole, however long, with the price column as wide as the longest', () => {
    const report: CostReport = {
      idle_usd_per_month: 136.25,
      usd_per_million_pages: 1,
      resources: [
        resource('1 EPU for 2 minimum pollers', 0.185, 'EPU-hour (provisioned mode event source)', 135.05),
        resource('secret', 0.4, 'secret-month', 0.4),
      ],
      per_million_pages: [{ component: 'bytes', usd_per_million_pages: 1 }],
      compression: 'gzip',
      compression_ratio: 3.5,
    };

    const lines = costText(report, 'profile test').split('\n');

    expect(lines.some((l) => l.includes('$0.1850/EPU-hour (provisioned mode event source)'))).toBe(true);
    const header = lines.find((l) => l.startsWith('what')) as string;
    const epu = lines.find((l) => l.startsWith('1 EPU')) as string;
    const secret = lines.find((l) => l.startsWith('secret')) as string;
    // The columns line up: each row as long as the header.
    expect(epu.length).toBe(header.length);
    expect(secret.length).toBe(header.length);
  });
});
