import { describe, expect, it } from 'vitest';
import { BatchFailedError, batchResult } from '../../functions/shared/msk.ts';
import { loadConfig } from '../../lib/config/index.ts';
import { ConfigError } from '../../lib/errors.ts';
import type { DecodedRecord } from '../../lib/kafka/record.ts';

const record = (partition: number, offset: number): DecodedRecord => ({
  topic: 'demo.incoming',
  partition,
  offset,
  timestamp: 0,
  key: undefined,
  value: Buffer.from('{}'),
  headers: {},
});

describe('batchResult: the answer of an MSK-triggered handler per event source mode', () => {
  it('answers partial batch failures with provisioned pollers (the default)', () => {
    const failures = [record(0, 7), record(1, 3)];
    const expected = {
      batchItemFailures: [
        { itemIdentifier: { partition: 'demo.incoming-0', offset: 7 } },
        { itemIdentifier: { partition: 'demo.incoming-1', offset: 3 } },
      ],
    };
    expect(batchResult(failures, undefined)).toEqual(expected);
    expect(batchResult(failures, 'provisioned')).toEqual(expected);
  });

  it('throws on-demand, where Lambda would ignore the answer and commit the failed records', () => {
    expect(() => batchResult([record(2, 41)], 'on-demand')).toThrow(BatchFailedError);
    expect(() => batchResult([record(2, 41)], 'on-demand')).toThrow(/demo\.incoming-2@41/);
  });

  it('answers an empty list in both modes when nothing failed', () => {
    expect(batchResult([], 'on-demand')).toEqual({ batchItemFailures: [] });
    expect(batchResult([], 'provisioned')).toEqual({ batchItemFailures: [] });
  });

  it('takes its mode from lib/config: MSK_EVENT_SOURCE_MODE, provisioned when unset, a wrong value refused at start', () => {
    expect(loadConfig({}).MSK_EVENT_SOURCE_MODE).toBe('provisioned');
    const onDemand = loadConfig({ MSK_EVENT_SOURCE_MODE: 'on-demand' }).MSK_EVENT_SOURCE_MODE;
    expect(() => batchResult([record(0, 1)], onDemand)).toThrow(BatchFailedError);
    expect(() => loadConfig({ MSK_EVENT_SOURCE_MODE: 'ondemand' })).toThrow(ConfigError);
    expect(() => loadConfig({ MSK_EVENT_SOURCE_MODE: 'ondemand' })).toThrow(/MSK_EVENT_SOURCE_MODE/);
  });
});
