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
 * concurrent marking and sweeping then cost the most. 16 MiB is where the crawl bench finds the worker's CPU per page
 * lowest on the image's Node without the RSS growth of a larger size (the figures: bench/PROFILE.md, "Worker flags").
 */
export const CRAWLER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16'];
