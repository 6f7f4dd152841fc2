/**
 * Node flags of the crawler worker process, wherever it runs: the image's CMD (functions/crawler/Dockerfile, kept
 * equal by test/unit/crawler-node-flags.test.ts), the local runtime's worker processes
 * (localstack/runtime/crawler-workers.ts) and the bench's profiled workers.
 *
 * `--max-semi-space-size=16` (MiB): V8's young generation sized for the crawler's allocation pattern. Each page
 * allocates ~100-200 KB that dies within milliseconds (the body, its text, the page's JSON and its bytes, the
 * Kafka encoding), and what survives a scavenge is only the in-flight pages. Node's default semi-space on a 64-bit
 * host is larger, so the young generation spans tens of MiB: scavenges are rarer but the allocation area falls out
 * of the CPU caches, and the process holds that much more memory. Too small a one scavenges so often that a page's
 * objects (alive 25-40 ms, from lease to ack) survive two scavenges and are promoted, and the old generation's
 * concurrent marking and sweeping then cost the most (30 % of a worker's CPU went to V8's GC threads at 8 MiB on
 * Node 26). On the crawl bench (Node 26, one worker, 20,000 pages; bench/PROFILE.md), worker CPU per article page:
 * 8 MiB 0.301 / 0.387 / 0.309 ms, 16 MiB 0.262 / 0.265 / 0.279, 32 MiB 0.267 / 0.261 / 0.299; peak RSS 253-270,
 * 272-277 and 294-300 MiB. Plain pages: 0.175 at 8 MiB and 0.179 at 16 (RSS 288 and 291), 0.197 at 32 (RSS 329).
 * On Node 24, 8 MiB had been the best (it cut the worker's CPU by 10-25 % against the default).
 */
export const CRAWLER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16'];
