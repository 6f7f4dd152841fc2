/**
 * The Redis AUTH token on AWS: the stack gives each function the ARN of its Secrets Manager secret
 * (REDIS_PASSWORD_SECRET_ARN), never the token itself, and the function reads the secret once per container, at cold
 * start, before it opens Redis. So the token is not readable through GetFunctionConfiguration, and a rotated token
 * reaches the next cold start without a redeploy. Without the variable (local runs, tests, and a stack deployed with
 * `redisTokenInEnvironment`, which puts the token itself in REDIS_PASSWORD: docs/cost.md) REDIS_PASSWORD is used as
 * it is.
 */
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Variables } from '../../lib/config/index.ts';

/** The variable holding the secret's ARN (lib/config/variables.ts); the stack sets it on every function that opens Redis. */
export const REDIS_PASSWORD_SECRET_ARN = 'REDIS_PASSWORD_SECRET_ARN';

/** Reads a secret's string value (Secrets Manager GetSecretValue; an in-memory fake in tests). */
export interface SecretReader {
  getSecretString(secretId: string): Promise<string>;
}

/** The Secrets Manager reader, with the default credential chain and region (the function's role and AWS_REGION). */
function secretsManagerReader(): SecretReader {
  let client: SecretsManagerClient | undefined;
  return {
    async getSecretString(secretId) {
      const { SecretsManagerClient, GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
      client ??= new SecretsManagerClient({});
      const out = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
      if (typeof out.SecretString !== 'string' || out.SecretString === '')
        throw new Error(`${REDIS_PASSWORD_SECRET_ARN}: the secret ${secretId} has no string value`);
      return out.SecretString;
    },
  };
}

/** Secret values by id, for the container's life; a failed read is forgotten, so the next cold start tries again. */
const cache = new Map<string, Promise<string>>();

/** Forgets the cached secret values (tests). */
export function clearSecretCache(): void {
  cache.clear();
}

/**
 * The variables with REDIS_PASSWORD taken from the secret that REDIS_PASSWORD_SECRET_ARN names, read once and
 * cached; the variables unchanged when it is not set.
 */
export async function withRedisPassword<V extends Pick<Variables, 'REDIS_PASSWORD' | 'REDIS_PASSWORD_SECRET_ARN'>>(
  vars: V,
  reader: SecretReader = secretsManagerReader(),
): Promise<V> {
  const arn = vars.REDIS_PASSWORD_SECRET_ARN;
  if (!arn) return vars;
  let pending = cache.get(arn);
  if (!pending) {
    pending = reader.getSecretString(arn).catch((error: unknown) => {
      throw new Error(`${REDIS_PASSWORD_SECRET_ARN}: cannot read ${arn}: ${(error as Error).message}`, {
        cause: error,
      });
    });
    cache.set(arn, pending);
    pending.catch(() => cache.delete(arn));
  }
  return { ...vars, REDIS_PASSWORD: await pending };
}
