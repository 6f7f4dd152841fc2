/**
 * cdk-nag acknowledgements. Synth fails on any AwsSolutions finding that is not acknowledged, and every
 * acknowledgement names one finding and says why it is acceptable.
 */
import { Stack, Validations } from 'aws-cdk-lib';
import type * as ecs from 'aws-cdk-lib/aws-ecs';
// How cdk-nag prints a resource in its IAM5 finding ids (not re-exported by the package; version pinned).
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import type { IConstruct } from 'constructs';

/** Acknowledges one AwsSolutions finding (`IAM4[Policy::...]`, `SMG4`, ...) on a construct and its children. */
export function acknowledge(scope: IConstruct, finding: string, reason: string): void {
  Validations.of(scope).acknowledge({ id: `AwsSolutions-${finding}`, reason });
}

/** The IAM5 finding of a wildcard resource, e.g. `IAM5[Resource::<BucketABC.Arn>/*]` for `bucket.arnForObjects('*')`. */
export function wildcardResource(scope: IConstruct, arn: string): string {
  return `IAM5[Resource::${flattenCfnReference(Stack.of(scope).resolve(arn))}]`;
}

/**
 * The two findings every Fargate task of ours carries, with the same reasons: ECS2 (its environment holds endpoints
 * and settings; the Redis AUTH token comes in as an ECS secret) and the execution role's `*` for the image pull.
 */
export function acknowledgeRedisTask(taskDefinition: ecs.TaskDefinition): void {
  acknowledge(
    taskDefinition,
    'ECS2',
    'The environment holds endpoints and settings only; the Redis AUTH token is injected from Secrets Manager.',
  );
  acknowledge(
    taskDefinition.obtainExecutionRole(),
    'IAM5[Resource::*]',
    'ecr:GetAuthorizationToken has no resource-level permissions (ECS task execution role, image pull).',
  );
}
