/**
 * The line the CDK app prints before synthesis when the CDK CLI found no AWS account (it sets CDK_DEFAULT_ACCOUNT
 * from the credentials it resolves). Synthesis needs none, but `cdk deploy` then ends on the CDK's own "Unable to
 * resolve AWS account" error, which says nothing of what this stack needs: this names docs/deploy.md first.
 */

/** The hint for an environment without a resolved account, or undefined when the CDK found one. */
export function credentialsHint(env: Readonly<Record<string, string | undefined>>): string | undefined {
  if ((env.CDK_DEFAULT_ACCOUNT ?? '') !== '') return undefined;
  return (
    'crawl-cluster: no AWS credentials found (CDK_DEFAULT_ACCOUNT is not set). `cdk synth` works without them; ' +
    '`cdk deploy` needs them, and also a bootstrapped account, the ECS service-linked role and a builder for the ' +
    'linux/arm64 crawler image: see docs/deploy.md, Prerequisites.'
  );
}
