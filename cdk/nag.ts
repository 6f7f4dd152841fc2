/**
 * cdk-nag acknowledgements. Synth fails on any AwsSolutions finding that is not acknowledged, and every
 * acknowledgement names one finding and says why it is acceptable.
 */
import { Stack, Validations } from 'aws-cdk-lib';
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
