/**
 * The deployment profiles (`-c profile=<name>`, docs/cost.md): named sets of defaults for the context keys that
 * ./settings.ts reads and validates, so a profile's values go through the same checks as keys given one by one.
 */

/** The profile names. */
const PROFILE_NAMES = ['standard', 'small'] as const;
export type Profile = (typeof PROFILE_NAMES)[number];

/**
 * What each profile sets, as context values (a key given with `-c` wins). `standard` sets nothing: the defaults
 * of ./settings.ts are the standard stack. docs/cost.md tables every key with both profiles' values and what it costs.
 */
export const PROFILES: Record<Profile, Record<string, unknown>> = {
  standard: {},
  small: {
    // MSK provisioned on the smallest broker (2 x kafka.t3.small; IAM accepts 4 new connections per second per t3
    // broker, enough for a fleet of a few tasks) instead of Serverless ($0.75/h before any byte).
    kafka: 'provisioned',
    kafkaInstanceType: 'kafka.t3.small',
    kafkaVolumeGiB: 10,
    kafkaMonitoring: 'DEFAULT',
    // No NAT gateway: crawlers in public subnets with a public IP each; functions and MSK in isolated subnets.
    crawlerPublicSubnets: true,
    // Interface endpoints in one zone: an outage of that zone stops cold starts of the functions and the monitors'
    // event sources until it is back, nothing else.
    endpointAzs: 1,
    // One cache node, no replica (no failover: a node failure loses what was queued since the last snapshot).
    cacheNodeType: 'cache.t4g.micro',
    cacheReplicas: 0,
    // No provisioned pollers (they cost more than everything else of this profile together).
    eventSourceMode: 'on-demand',
    // The functions take the Redis AUTH token from their environment (resolved at deploy): no Secrets Manager
    // endpoint, but the token is readable with the functions' configuration.
    redisTokenInEnvironment: true,
    containerInsights: false,
    // No CloudWatch dashboard: the alarms stay, the graphs are a console search away.
    dashboard: false,
    urlFrontier: false,
    maxTasks: 4,
    // Crawlers on Fargate Spot: an interruption is a SIGTERM two minutes ahead, drained like any stop.
    crawlerCapacity: 'spot',
  },
};
