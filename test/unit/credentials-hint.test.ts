import { describe, expect, it } from 'vitest';
import { credentialsHint } from '../../cdk/credentials-hint.ts';

describe('the CDK app without AWS credentials', () => {
  it('points to docs/deploy.md when the CDK resolved no account', () => {
    const hint = credentialsHint({});
    expect(hint).toContain('no AWS credentials found');
    expect(hint).toContain('docs/deploy.md');
    expect(credentialsHint({ CDK_DEFAULT_ACCOUNT: '' })).toBe(hint);
  });

  it('says nothing when the CDK resolved an account', () => {
    expect(credentialsHint({ CDK_DEFAULT_ACCOUNT: '123456789012' })).toBeUndefined();
  });
});
