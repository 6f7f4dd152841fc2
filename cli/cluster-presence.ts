/**
 * Whether a cluster already runs on a topic prefix: `local` (and `demo`) consume `<p>.incoming` in the consumer group
 * `<p>.kafka-monitor` (localstack/runtime/cluster.ts), so members in that group mean another one is running. `demo`
 * checks before it starts its own: two clusters on one prefix share the topics and the Redis queues, and the other
 * one's crawlers cannot resolve the demo's host names, so the demo's pages would fail.
 */
import type { Admin } from '../lib/kafka/types.ts';

/** The consumer group of the kafka-monitor of a cluster on `prefix`. */
function kafkaMonitorGroup(prefix: string): string {
  return `${prefix}.kafka-monitor`;
}

/** How many members the kafka-monitor group of `prefix` has now (0: no cluster consumes the prefix's requests). */
export async function runningMonitors(admin: Admin, prefix: string): Promise<number> {
  const { groups } = await admin.describeGroups([kafkaMonitorGroup(prefix)]);
  const [group] = groups;
  if (group === undefined || group.state === 'Dead' || group.state === 'Empty') return 0;
  return group.members.length;
}

/** What `demo` says when another cluster runs on its prefix. */
export function clusterRunningMessage(prefix: string, members: number): string {
  return (
    `another cluster is running on topic prefix "${prefix}" (its kafka-monitor group ${kafkaMonitorGroup(prefix)} has ` +
    `${members} member${members === 1 ? '' : 's'}): a \`crawl-cluster local\` or another demo. Stop it first (Ctrl-C in its ` +
    'terminal); both would share the topics and Redis queues, and its crawlers cannot reach the demo site. ' +
    'A cluster that was killed leaves its members until their Kafka session times out (about 30 s). ' +
    'To crawl your own site with the running cluster, use: crawl-cluster crawl <url>'
  );
}
