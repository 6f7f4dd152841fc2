/**
 * The CDK app (`npx cdk synth|deploy`): one stack, with the AWS Solutions cdk-nag rules as a synthesis
 * validation, so synth fails on any finding that is not acknowledged with a reason.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { credentialsHint } from './credentials-hint.ts';
import { readSettings } from './settings.ts';
import { CrawlClusterStack } from './stack.ts';

const hint = credentialsHint(process.env);
if (hint !== undefined) process.stderr.write(`${hint}\n`);

const app = new App();
new CrawlClusterStack(app, app.node.tryGetContext('stackName') ?? 'CrawlCluster', {
  settings: readSettings(app.node),
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  description: 'crawl-cluster: serverless distributed crawler (MSK, ElastiCache Valkey, Lambda, Fargate)',
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
