import { afterEach, describe, expect, it } from 'vitest';
import {
  clearSecretCache,
  REDIS_PASSWORD_SECRET_ARN,
  type SecretReader,
  withRedisPassword,
} from '../../functions/shared/secrets.ts';

const ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:CacheAuthToken-AbCdEf';

/** An in-memory Secrets Manager: values by id, and the ids it was asked for. */
function fakeSecrets(values: Record<string, string | Error>): SecretReader & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    async getSecretString(id) {
      reads.push(id);
      const value = values[id];
      if (value === undefined) throw new Error(`ResourceNotFoundException: ${id}`);
      if (value instanceof Error) throw value;
      return value;
    },
  };
}

afterEach(() => clearSecretCache());

describe('the Redis AUTH token at cold start (REDIS_PASSWORD_SECRET_ARN)', () => {
  it('takes REDIS_PASSWORD from the secret the variable names', async () => {
    const secrets = fakeSecrets({ [ARN]: 't0ken' });
    const vars = await withRedisPassword(
      { REDIS_PASSWORD: '', REDIS_PASSWORD_SECRET_ARN: ARN, REDIS_HOST: 'h' },
      secrets,
    );
    expect(vars).toEqual({ REDIS_PASSWORD: 't0ken', REDIS_PASSWORD_SECRET_ARN: ARN, REDIS_HOST: 'h' });
    expect(secrets.reads).toEqual([ARN]);
  });

  it('reads the secret once per container, however many connections are opened', async () => {
    const secrets = fakeSecrets({ [ARN]: 't0ken' });
    const v = { REDIS_PASSWORD: '', REDIS_PASSWORD_SECRET_ARN: ARN };
    const all = await Promise.all([1, 2, 3].map(() => withRedisPassword(v, secrets)));
    await withRedisPassword(v, secrets);
    expect(all.map((v) => v.REDIS_PASSWORD)).toEqual(['t0ken', 't0ken', 't0ken']);
    expect(secrets.reads).toHaveLength(1);
  });

  it('leaves the variables as they are without the variable (local runs, tests)', async () => {
    const secrets = fakeSecrets({});
    const vars = { REDIS_PASSWORD: 'local', REDIS_PASSWORD_SECRET_ARN: '' };
    expect(await withRedisPassword(vars, secrets)).toBe(vars);
    expect(secrets.reads).toEqual([]);
  });

  it('names the variable and the secret when the read fails, and tries again on the next cold start', async () => {
    const values: Record<string, string | Error> = { [ARN]: new Error('AccessDeniedException') };
    const secrets = fakeSecrets(values);
    const v = { REDIS_PASSWORD: '', REDIS_PASSWORD_SECRET_ARN: ARN };
    await expect(withRedisPassword(v, secrets)).rejects.toThrow(
      `${REDIS_PASSWORD_SECRET_ARN}: cannot read ${ARN}: AccessDeniedException`,
    );
    values[ARN] = 'later';
    expect((await withRedisPassword(v, secrets)).REDIS_PASSWORD).toBe('later');
    expect(secrets.reads).toEqual([ARN, ARN]);
  });
});
