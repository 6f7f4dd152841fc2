/**
 * Node flags of the crawler worker process, wherever it runs: the image's CMD (functions/crawler/Dockerfile, kept
 * equal by test/unit/crawler-node-flags.test.ts), the local runtime's worker processes
 * (localstack/runtime/crawler-workers.ts) and the bench's profiled workers.
 *
 * `--max-semi-space-size=8` (MiB): V8's young generation sized for the crawler's allocation pattern. Each page
 * allocates ~100-200 KB that dies within milliseconds (the body, its text, the page's JSON and its bytes, the
 * Kafka encoding), and what survives a scavenge is only the in-flight pages (~16 × a few hundred KB). Node's
 * default semi-space on a 64-bit host is larger, so the young generation spans tens of MiB: scavenges are rarer
 * but the allocation area falls out of the CPU caches, and the process holds that much more memory. On the crawl
 * bench (article pages, concurrency 16, one worker) 8 MiB cut the worker's CPU per page by 10-25% and its peak
 * RSS from 284-298 to 243-248 MiB in six interleaved runs (bench/PROFILE.md).
 */
export const CRAWLER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8'];
