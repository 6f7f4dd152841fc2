/**
 * Synthesizes the stack the way `cdk synth` does (cdk.json's feature flags, cdk-nag as a validation plugin) but
 * without bundling the functions, so the cdk tier runs in seconds and offline.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { afterAll } from 'vitest';
import { REPO_ROOT } from '../../cdk/repo-root.ts';
import { readSettings } from '../../cdk/settings.ts';
import { CrawlClusterStack } from '../../cdk/stack.ts';

const CDK_JSON = JSON.parse(readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };

/**
 * CloudFormation JSON as the assertions hand it out: untyped, indexed freely by the tests.
 */
// biome-ignore lint/suspicious/noExplicitAny: template JSON has no static shape
export type Cfn = Record<string, any>;

/** Every synthesis of a test file writes under one directory, removed after the file's tests. */
const OUT_ROOT = mkdtempSync(join(tmpdir(), 'cdk-test-'));
afterAll(() => rmSync(OUT_ROOT, { recursive: true, force: true }));

export interface Synthesized {
  app: App;
  stack: CrawlClusterStack;
  /** The synthesized template (synthesizes the app on first use). */
  readonly template: Template;
}

/**
 * Builds the stack with the given context (on top of cdk.json's). With `nag`, cdk-nag runs at synthesis and
 * any unacknowledged finding makes `app.synth()` (or the first use of `template`) throw.
 */
export function synthStack(
  context: Record<string, unknown> = {},
  options: { nag?: boolean; stackName?: string } = {},
): Synthesized {
  const app = new App({
    outdir: mkdtempSync(join(OUT_ROOT, 'app-')),
    context: { ...CDK_JSON.context, ...context, 'aws:cdk:bundling-stacks': [] },
  });
  const stack = new CrawlClusterStack(app, options.stackName ?? 'CrawlCluster', {
    settings: readSettings(app.node),
    env: { account: '123456789012', region: 'us-east-1' },
  });
  if (options.nag) Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  let template: Template | undefined;
  return {
    app,
    stack,
    get template() {
      template ??= Template.fromStack(stack);
      return template;
    },
  };
}

/** A resource of the template by the construct that made it (its L1 default child, or itself). */
export function resourceOf(s: Synthesized, construct: IConstruct): { Type: string; Properties: Cfn } {
  const cfn = (construct.node.defaultChild ?? construct) as CfnElement;
  const id = s.stack.getLogicalId(cfn);
  const resource = s.template.toJSON().Resources[id];
  if (!resource) throw new Error(`no resource ${id} for ${construct.node.path}`);
  return resource;
}

/** The logical id of a construct's resource, as `Ref` / `Fn::GetAtt` name it. */
export function logicalIdOf(s: Synthesized, construct: IConstruct): string {
  return s.stack.getLogicalId((construct.node.defaultChild ?? construct) as CfnElement);
}

/** Every policy statement of the template (managed and inline), with the logical id of its policy or role. */
export function allStatements(s: Synthesized): { owner: string; Action: string[]; Resource: unknown[] }[] {
  const out: { owner: string; Action: string[]; Resource: unknown[] }[] = [];
  const asArray = <T>(v: T | T[]): T[] => (Array.isArray(v) ? v : [v]);
  for (const [id, r] of Object.entries(s.template.toJSON().Resources) as [string, Cfn][]) {
    const docs =
      r.Type === 'AWS::IAM::Policy'
        ? [r.Properties.PolicyDocument]
        : r.Type === 'AWS::IAM::Role'
          ? (r.Properties.Policies ?? []).map((p: Cfn) => p.PolicyDocument)
          : [];
    for (const doc of docs) {
      for (const st of doc.Statement) {
        if (st.Effect !== 'Allow') continue;
        out.push({ owner: id, Action: asArray(st.Action), Resource: asArray(st.Resource) });
      }
    }
  }
  return out;
}

/**
 * The findings of a synthesis's validation report (cdk.out/validation-report.json): every plugin report but the
 * stack's own synth warnings (the construct annotations plugin's warnings, which deploy advice such as pinning zones
 * raises), so that cdk-nag's findings and any error still fail a test.
 */
export function validationFindings(directory: string): unknown[] {
  const report = JSON.parse(readFileSync(join(directory, 'validation-report.json'), 'utf8')) as {
    pluginReports: { pluginName: string; violations: { severity: string }[] }[];
  };
  return report.pluginReports.filter(
    (r) => r.pluginName !== 'Construct Annotations' || r.violations.some((v) => v.severity !== 'warning'),
  );
}
