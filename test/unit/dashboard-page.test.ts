/**
 * The dashboard page as files (lib/rest/dashboard-page.ts): served with the style and scripts inline exactly as
 * they are in lib/rest/dashboard/, in the order they run, allowed by the hashes of those bytes; the scripts are
 * type-checked in their own DOM program; and the REST function's Lambda bundle, built the way the construct builds it, carries the files
 * and serves the same page.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { App, Duration, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as logs from 'aws-cdk-lib/aws-logs';
import { afterAll, describe, expect, it } from 'vitest';
import { CrawlFunction } from '../../cdk/constructs/crawl-function.ts';
import {
  DASHBOARD_DIR,
  DASHBOARD_FILES,
  DASHBOARD_HTML,
  DASHBOARD_SCRIPT_HASHES,
  DASHBOARD_SCRIPTS,
  DASHBOARD_STYLE_HASH,
} from '../../lib/rest/dashboard-page.ts';
import { createRestRouter } from '../../lib/rest/router.ts';
import { REPO_ROOT } from '../../localstack/repo-root.ts';
import { testContext } from '../helpers/fakes.ts';

const run = promisify(execFile);
const SOURCE_DIR = join(REPO_ROOT, 'lib', 'rest', DASHBOARD_DIR);
const source = (name: string) => readFileSync(join(SOURCE_DIR, name), 'utf8');
const sha256 = (text: string) => `sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}`;

/** The text of every `<tag ...>` element of the page, with its opening tag. */
function elements(html: string, tag: string): { open: string; text: string }[] {
  return [...html.matchAll(new RegExp(`(<${tag}\\b[^>]*>)([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => ({
    open: m[1] as string,
    text: m[2] as string,
  }));
}

describe('the dashboard page', () => {
  it('is index.html with style.css and its scripts inline, byte for byte, app.js last, nothing loaded from elsewhere', () => {
    const styles = elements(DASHBOARD_HTML, 'style');
    const scripts = elements(DASHBOARD_HTML, 'script');
    expect(styles).toEqual([{ open: '<style>', text: source('style.css') }]);
    expect(DASHBOARD_SCRIPTS.at(-1)).toBe('app.js');
    expect(scripts).toEqual(DASHBOARD_SCRIPTS.map((name) => ({ open: '<script>', text: source(name) })));
    // Every script of the directory is one of them: none is left out of the page.
    expect(
      readdirSync(SOURCE_DIR)
        .filter((f) => f.endsWith('.js'))
        .sort(),
    ).toEqual([...DASHBOARD_SCRIPTS].sort());
    // Everything else is index.html as it is.
    const rest = DASHBOARD_SCRIPTS.reduce(
      (html, name) => html.replace(`<script>${source(name)}</script>`, `<script src="${name}"></script>`),
      DASHBOARD_HTML.replace(`<style>${source('style.css')}</style>`, '<link rel="stylesheet" href="style.css">'),
    );
    expect(rest).toBe(source('index.html'));
    expect(DASHBOARD_HTML).not.toMatch(/<link rel="stylesheet"|<script[^>]* src=/);
  });

  it('is allowed by its CSP through the hashes of the served script and style', async () => {
    expect(DASHBOARD_SCRIPT_HASHES).toEqual(DASHBOARD_SCRIPTS.map((name) => sha256(source(name))));
    expect(DASHBOARD_STYLE_HASH).toBe(sha256(source('style.css')));
    const router = createRestRouter({ ...testContext(), health: { kafka: async () => {}, redis: async () => {} } });
    const page = await router({ method: 'GET', path: '/ui', headers: {} });
    expect(page.body).toBe(DASHBOARD_HTML);
    const csp = page.headers?.['content-security-policy'];
    expect(csp).toContain(`script-src ${DASHBOARD_SCRIPT_HASHES.map((h) => `'${h}'`).join(' ')};`);
    expect(csp).toContain(`style-src '${DASHBOARD_STYLE_HASH}'`);
  });

  it('has scripts that tsc checks in a program of its own: the DOM, no Node, one global scope', async () => {
    const tsc = [join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', SOURCE_DIR, '--pretty', 'false'];
    // Throws with tsc's diagnostics on any type error.
    await run(process.execPath, tsc, { cwd: REPO_ROOT });
    const { stdout } = await run(process.execPath, [...tsc, '--listFilesOnly'], { cwd: REPO_ROOT });
    const files = stdout.split('\n').map((f) => relative(REPO_ROOT, f));
    expect(files).toEqual(
      expect.arrayContaining([...DASHBOARD_SCRIPTS.map((s) => `lib/rest/dashboard/${s}`), 'lib/rest/dashboard-api.ts']),
    );
    expect(files.filter((f) => f.includes('@types/node'))).toEqual([]);
    expect(files.filter((f) => f.startsWith('lib/') && !f.startsWith('lib/rest/dashboard'))).toEqual([]);
  }, 60_000);
});

describe('the REST function’s Lambda bundle', () => {
  const outdir = mkdtempSync(join(tmpdir(), 'dashboard-bundle-'));
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  it('carries the page’s files and serves the page from them', async () => {
    // The construct as the stack uses it, bundled for real (local esbuild, as `cdk synth` does).
    const app = new App({ outdir });
    const stack = new Stack(app, 'Bundle', { env: { account: '123456789012', region: 'us-east-1' } });
    const subnets = { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };
    const vpc = new ec2.Vpc(stack, 'Vpc', {
      maxAzs: 1,
      natGateways: 0,
      subnetConfiguration: [{ name: 'i', ...subnets }],
    });
    new CrawlFunction(stack, 'Rest', {
      name: 'rest',
      description: 'dashboard bundle test',
      timeout: Duration.seconds(20),
      environment: {},
      vpc,
      subnets,
      securityGroups: [new ec2.SecurityGroup(stack, 'Sg', { vpc })],
      logRetention: logs.RetentionDays.ONE_DAY,
    });
    app.synth();
    const assets = readdirSync(outdir).filter((d) => d.startsWith('asset.'));
    expect(assets).toHaveLength(1);
    const bundle = join(outdir, assets[0] as string);

    const carried = join(bundle, DASHBOARD_DIR);
    expect(readdirSync(carried).sort()).toEqual([...DASHBOARD_FILES].sort());
    for (const file of DASHBOARD_FILES) expect(readFileSync(join(carried, file), 'utf8'), file).toBe(source(file));

    // The bundled handler in a plain Node process, as Lambda runs it: it reads the files next to index.mjs.
    const script = `
      const { restHandler } = await import(process.env.BUNDLE);
      const { testContext } = await import(process.env.FAKES);
      const { lambdaContext } = await import(process.env.LAMBDA_CONTEXT);
      const handler = restHandler(async () => testContext());
      const http = { method: 'GET', path: '/ui' };
      const event = { version: '2.0', routeKey: '$default', rawPath: '/ui', rawQueryString: '', headers: {},
        isBase64Encoded: false, requestContext: { http, stage: '$default' } };
      process.stdout.write(JSON.stringify(await handler(event, lambdaContext('rest'))));
    `;
    const url = (path: string) => pathToFileURL(path).href;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: bundle,
      timeout: 30_000,
      env: {
        ...process.env,
        LOG_LEVEL: 'SILENT',
        POWERTOOLS_METRICS_DISABLED: 'true',
        BUNDLE: url(join(bundle, 'index.mjs')),
        FAKES: url(join(REPO_ROOT, 'test', 'helpers', 'fakes.ts')),
        LAMBDA_CONTEXT: url(join(REPO_ROOT, 'localstack', 'runtime', 'lambda-context.ts')),
      },
    });
    const result = JSON.parse(stdout) as { statusCode: number; headers: Record<string, string>; body: string };
    expect(result.statusCode).toBe(200);
    expect(result.body).toBe(DASHBOARD_HTML);
    expect(result.headers['content-security-policy']).toContain(
      `script-src ${DASHBOARD_SCRIPT_HASHES.map((h) => `'${h}'`).join(' ')};`,
    );
  }, 300_000);
});
