/**
 * Alarms on where the crawl's pages wait and land: the provisioned brokers' data disks and the archive sink. Each
 * reads at most {@link ALARM_METRICS_MAX} metrics (CloudWatch's limit for one alarm's metric math) and is billed per
 * metric. ./observability.ts creates them on its alarm topic.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { BROKER_DISK_ALARM_PERCENT } from '../kafka-sizing.ts';
import type { Kafka } from './kafka.ts';
import type { Sink } from './sink.ts';

/** Most metrics one alarm's metric math may use (CloudWatch's limit). */
export const ALARM_METRICS_MAX = 10;

const FIVE_MINUTES = Duration.minutes(5);

/** Creates an alarm that notifies the alarm topic. */
type Alarm = (id: string, props: cloudwatch.AlarmProps) => cloudwatch.Alarm;

/**
 * Provisioned brokers' data disks (KafkaDataLogsDiskUsed, a DEFAULT-level and so free MSK metric, per broker): one
 * alarm per {@link ALARM_METRICS_MAX} brokers on the fullest. A broker whose disk fills stops taking writes, and
 * the crawlers' pages back up. MSK Serverless has no broker disk (its limit is per partition, which the stack checks
 * at synth against pagesPerMonth).
 */
export function brokerDiskAlarms(kafka: Kafka, alarm: Alarm): void {
  if (kafka.mode !== 'provisioned') return;
  const disks = Array.from(
    { length: kafka.brokers },
    (_, i) =>
      new cloudwatch.Metric({
        namespace: 'AWS/Kafka',
        metricName: 'KafkaDataLogsDiskUsed',
        dimensionsMap: { 'Cluster Name': kafka.clusterName, 'Broker ID': String(i + 1) },
        statistic: 'Maximum',
        period: FIVE_MINUTES,
        label: `broker ${i + 1}`,
      }),
  );
  const groups = Math.ceil(disks.length / ALARM_METRICS_MAX);
  for (let g = 0; g < groups; g++) {
    const brokers = disks.slice(g * ALARM_METRICS_MAX, (g + 1) * ALARM_METRICS_MAX);
    const which =
      groups > 1 ? ` (brokers ${g * ALARM_METRICS_MAX + 1} to ${g * ALARM_METRICS_MAX + brokers.length})` : '';
    alarm(g === 0 ? 'BrokerDisk' : `BrokerDisk${g + 1}`, {
      metric: new cloudwatch.MathExpression({
        expression: `MAX([${brokers.map((_, i) => `d${i}`).join(', ')}])`,
        usingMetrics: Object.fromEntries(brokers.map((m, i) => [`d${i}`, m])),
        period: FIVE_MINUTES,
      }),
      threshold: BROKER_DISK_ALARM_PERCENT,
      evaluationPeriods: 2,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription:
        `A broker's data disk is over ${BROKER_DISK_ALARM_PERCENT}% full${which}: raise kafkaVolumeGiB (or deploy ` +
        'with pagesPerMonth to size it) or lower retentionHours before the brokers stop taking pages',
    });
  }
}

/**
 * The archive sink, failing or behind, in one alarm on two metrics: its errors (a failed batch is retried from its
 * partition, so errors that persist stop the archive) and its event source's offset lag. Two of three 5-minute
 * points, so that one burst of the crawl does not page anyone.
 */
export function sinkAlarm(sink: Sink, alarm: Alarm): void {
  const fn = sink.fn.function;
  alarm('SinkFailingOrBehind', {
    metric: new cloudwatch.MathExpression({
      expression: 'IF(errors >= 3 OR lag > 100000, 1, 0)',
      usingMetrics: {
        errors: fn.metricErrors({ period: FIVE_MINUTES }),
        lag: new cloudwatch.Metric({
          namespace: 'AWS/Lambda',
          metricName: 'OffsetLag',
          dimensionsMap: { FunctionName: fn.functionName },
          statistic: 'Maximum',
        }),
      },
      period: FIVE_MINUTES,
    }),
    threshold: 1,
    evaluationPeriods: 3,
    datapointsToAlarm: 2,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    alarmDescription:
      'The archive sink failed at least 3 times in 5 minutes, or is more than 100,000 pages behind, in 2 of the ' +
      'last 3 periods: its pages wait on the firehose (and leave it with the retention)',
  });
}
