/**
 * Physical names that must be unique in an account and region (ElastiCache replication group ids, MSK cluster names)
 * and are shorter than a stack name may be. Cutting the stack name alone makes two stacks that share a long prefix
 * collide, so every such name ends with a short hash of the whole stack name, account and region.
 */
import { createHash } from 'node:crypto';
import { Stack, Token } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/** Hex characters of the hash suffix. */
const NAME_HASH_LENGTH = 8;

/**
 * A short, stable hash of the stack's full name, account and region. An environment-agnostic stack (account or region
 * unresolved at synthesis) hashes its name alone: stack names are unique in an account and region, which is where
 * these names must be unique too.
 */
export function stackHash(scope: IConstruct): string {
  const stack = Stack.of(scope);
  const parts = [stack.stackName];
  for (const part of [stack.account, stack.region]) if (!Token.isUnresolved(part)) parts.push(part);
  return createHash('sha256').update(parts.join('/')).digest('hex').slice(0, NAME_HASH_LENGTH);
}

/**
 * `<cut of base>-<suffix>-<hash>` within `maxLength` characters: `base` is cut to fit (and loses trailing hyphens),
 * the rest is kept whole.
 */
export function uniqueName(base: string, suffix: string, hash: string, maxLength: number): string {
  const tail = `-${suffix}-${hash}`;
  const head = base.slice(0, Math.max(0, maxLength - tail.length)).replace(/-+$/, '');
  return `${head}${tail}`;
}
