/**
 * kafkajs 2.2.4's RequestQueue, fixed: once a broker connection has answered a request, its
 * `scheduleCheckPendingRequests` re-arms a timer whenever it runs, with nothing pending and no throttle
 * (`throttledUntil - Date.now()` is negative, so the timer fires after 1 ms and schedules the next): every kafkajs
 * connection of a process runs a 1 ms timer loop for its whole life (kafkajs issues #1556 and #1704, unfixed in the
 * pinned release), which keeps an idle crawler worker busy with timers through a crawl's tail. Installed here is the
 * method as it was meant: a check is scheduled only while requests are
 * pending, when the client-side throttle ends (at least kafkajs's 10 ms later); a request that cannot be sent at
 * once is pushed to `pending` and schedules its own check, and each answered request checks `pending` again, so
 * nothing waits on the loop that is gone. test/unit/kafka-request-queue.test.ts drives kafkajs's own class.
 * lib/kafka/client.ts imports this before kafkajs is used. Where kafkajs is not a module of its own (a bundle that
 * inlines it), this does nothing.
 */
import { kafkajsInternal } from './kafkajs-internal.ts';

/** The part of kafkajs's RequestQueue the fix reads and writes. */
interface KafkajsRequestQueue {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}
interface KafkajsRequestQueueClass {
  prototype: KafkajsRequestQueue;
}

/** kafkajs's CHECK_PENDING_REQUESTS_INTERVAL: the soonest a pending request is looked at again (ms). */
const CHECK_PENDING_REQUESTS_INTERVAL = 10;

/** kafkajs's RequestQueue class, or undefined where it cannot be loaded as a module of its own. */
const KafkajsRequestQueue = kafkajsInternal<KafkajsRequestQueueClass>('src/network/requestQueue/index.js');

/** Schedules one check of the pending requests when some are pending and none is scheduled; else nothing. */
function scheduleCheckPendingRequests(this: KafkajsRequestQueue): void {
  if (this.throttleCheckTimeoutId || this.pending.length === 0) return;
  const throttled = this.throttledUntil - Date.now();
  this.throttleCheckTimeoutId = setTimeout(
    () => {
      this.throttleCheckTimeoutId = null;
      this.checkPendingRequests();
    },
    Math.max(throttled, CHECK_PENDING_REQUESTS_INTERVAL),
  );
}

/** True when kafkajs's RequestQueue uses the fixed method (false where kafkajs is inlined in a bundle). */
export function kafkajsUsesFixedRequestQueue(): boolean {
  return KafkajsRequestQueue?.prototype.scheduleCheckPendingRequests === scheduleCheckPendingRequests;
}

if (KafkajsRequestQueue !== undefined)
  KafkajsRequestQueue.prototype.scheduleCheckPendingRequests = scheduleCheckPendingRequests;
