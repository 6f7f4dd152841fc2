import type { BatchResponse, DecodedRecord } from '../../lib/kafka/msk-event.ts';
import { recordGroupKey } from '../../lib/kafka/msk-event.ts';

/** Failed records as Lambda's partial batch answer (one entry per record). */
export function toBatchResponse(failures: DecodedRecord[]): BatchResponse {
  return {
    batchItemFailures: failures.map((r) => ({
      itemIdentifier: { partition: recordGroupKey(r.topic, r.partition), offset: r.offset },
    })),
  };
}
