/**
 * One of the project's Lambda functions with the house defaults: Node 24 on arm64, bundled locally by esbuild
 * (no Docker) from functions/<name>/handler.ts with kafkajs beside the bundle in node_modules, in the VPC's private
 * subnets, with its own log group and a role that may write to that log group only (instead of the AWS managed
 * execution policies, which allow every group).
 */
import { join } from 'node:path';
import { type Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { DASHBOARD_DIR, DASHBOARD_FILES } from '../../lib/rest/dashboard-page.ts';
import { acknowledge } from '../nag.ts';
import { REPO_ROOT } from '../repo-root.ts';

/**
 * The packages every function keeps in node_modules instead of the bundle: kafkajs, whose internals lib/kafka's fast
 * path replaces by module file (crc32c.ts, encoder.ts, request-queue.ts), and the native CRC-32C it installs.
 */
const KAFKAJS_PACKAGES = ['kafkajs', '@node-rs/crc32'] as const;

/** npm's platform settings for installing a function's node_modules: `@node-rs/crc32`'s binary for Lambda's CPU. */
function npmPlatform(architecture: lambda.Architecture): Record<string, string> {
  return {
    npm_config_os: 'linux',
    npm_config_cpu: architecture === lambda.Architecture.ARM_64 ? 'arm64' : 'x64',
    npm_config_libc: 'glibc',
  };
}

export interface CrawlFunctionProps {
  /** The directory under functions/ that holds handler.ts. */
  name: string;
  description: string;
  timeout: Duration;
  /** @default 512 */
  memorySize?: number;
  environment: Record<string, string>;
  vpc: ec2.IVpc;
  subnets: ec2.SubnetSelection;
  securityGroups: ec2.ISecurityGroup[];
  logRetention: logs.RetentionDays;
  /** Copy lib/redis/scripts next to the bundle (lib/redis/scripts.ts reads them from there). @default true */
  luaScripts?: boolean;
  /**
   * Copy the dashboard page's files next to the bundle (lib/rest/dashboard-page.ts reads them from there as the
   * function starts). @default true for the `rest` function, false for the others
   */
  dashboardPage?: boolean;
}

export class CrawlFunction extends Construct {
  readonly function: NodejsFunction;
  readonly logGroup: logs.LogGroup;
  readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: CrawlFunctionProps) {
    super(scope, id);
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const lua = props.luaScripts ?? true;
    const dashboard = props.dashboardPage ?? props.name === 'rest';
    // Inline policies are part of the role resource, so they exist before Lambda checks them at creation.
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `crawl-cluster ${props.name} function`,
      inlinePolicies: {
        logs: new iam.PolicyDocument({
          statements: [
            new iam.PolicyStatement({
              actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
              resources: [this.logGroup.logGroupArn],
            }),
          ],
        }),
        vpc: new iam.PolicyDocument({
          statements: [
            new iam.PolicyStatement({
              actions: [
                'ec2:CreateNetworkInterface',
                'ec2:DescribeNetworkInterfaces',
                'ec2:DescribeSubnets',
                'ec2:DeleteNetworkInterface',
                'ec2:AssignPrivateIpAddresses',
                'ec2:UnassignPrivateIpAddresses',
              ],
              resources: ['*'],
            }),
          ],
        }),
      },
    });
    acknowledge(
      this.role,
      'IAM5[Resource::*]',
      'Lambda VPC networking (the AWSLambdaVPCAccessExecutionRole actions): EC2 network-interface actions and ' +
        'Describe* cannot be scoped to resources that do not exist yet.',
    );
    const architecture = lambda.Architecture.ARM_64;
    this.function = new NodejsFunction(this, 'Function', {
      entry: join(REPO_ROOT, 'functions', props.name, 'handler.ts'),
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
      description: props.description,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout,
      environment: { ...props.environment, NODE_OPTIONS: '--enable-source-maps' },
      vpc: props.vpc,
      vpcSubnets: props.subnets,
      securityGroups: props.securityGroups,
      logGroup: this.logGroup,
      role: this.role,
      awsSdkConnectionReuse: false,
      bundling: {
        // ESM keeps import.meta.dirname meaningful: lib/redis/scripts.ts locates its .lua files with it, and
        // lib/rest/dashboard-page.ts the page's files (both copied next to the bundle after bundling, below).
        format: OutputFormat.ESM,
        target: 'node24',
        mainFields: ['module', 'main'],
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        // Everything else is bundled, the AWS SDK too: the MSK IAM signer pins its own SDK packages.
        externalModules: [],
        // kafkajs (with @node-rs/crc32, the native CRC-32C) stays a package of its own, installed by `npm ci` beside
        // the bundle at the lock file's versions, as in the crawler image: lib/kafka's fast path replaces kafkajs's
        // internals by their module files, which an inlined copy does not have (docs/design.md §4).
        nodeModules: [...KAFKAJS_PACKAGES],
        // npm installs the optional native binaries for the function's platform, not the machine that bundles.
        environment: npmPlatform(architecture),
        tsconfig: join(REPO_ROOT, 'tsconfig.json'),
        // CommonJS dependencies in the bundle (ioredis, the MSK IAM signer) call require() for Node built-ins.
        banner:
          "import { createRequire as __ccRequire } from 'node:module'; const require = __ccRequire(import.meta.url);",
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          afterBundling: (inputDir: string, outputDir: string) =>
            afterBundlingCommands(inputDir, outputDir, { lua, dashboard }),
        },
      },
    });
  }
}

/**
 * The commands that run after esbuild: copy lib/redis/scripts to `./scripts/` beside the bundle, and the dashboard
 * page's served files (not its directory, which also holds the scripts' tsconfig.json) to `./dashboard/`. They run
 * ../copy-files.ts with Node (fs.cpSync), never cp or mkdir, so that local bundling works under cmd on Windows as
 * under bash; the script is addressed through `inputDir`, so Docker bundling finds it too.
 */
export function afterBundlingCommands(
  inputDir: string,
  outputDir: string,
  copy: { lua: boolean; dashboard: boolean },
): string[] {
  const script = join(inputDir, 'cdk', 'copy-files.ts');
  const run = (args: string[]) => ['node', ...[script, ...args].map((a) => `"${a}"`)].join(' ');
  return [
    ...(copy.lua ? [run([join(inputDir, 'lib', 'redis', 'scripts'), join(outputDir, 'scripts')])] : []),
    ...(copy.dashboard
      ? [run([join(inputDir, 'lib', 'rest', DASHBOARD_DIR), join(outputDir, DASHBOARD_DIR), ...DASHBOARD_FILES])]
      : []),
  ];
}
