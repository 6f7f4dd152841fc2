/**
 * One Kafka code path (docs/design.md §4): a Lambda function bundled the way `cdk synth` bundles it (local esbuild,
 * the construct's own options) runs kafkajs from node_modules beside the bundle, so lib/kafka's fast path (the
 * CRC-32C, the Encoder, the request queue's pending check) replaces kafkajs's internals there as in the crawler image.
 * The other tests of this tier synthesize without bundling; this one bundles one function, kafka-monitor.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Duration, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as logs from 'aws-cdk-lib/aws-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CrawlFunction } from '../../cdk/constructs/crawl-function.ts';

const OUT = mkdtempSync(join(tmpdir(), 'cdk-bundle-'));
afterAll(() => rmSync(OUT, { recursive: true, force: true }));

/** Synthesizes a stack of one CrawlFunction with bundling on; returns the bundle's directory (the asset). */
function bundleFunction(name: string): string {
  const app = new App({ outdir: join(OUT, 'cdk.out') });
  const stack = new Stack(app, 'Bundle', { env: { account: '123456789012', region: 'us-east-1' } });
  const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 1, natGateways: 0 });
  new CrawlFunction(stack, 'Fn', {
    name,
    description: name,
    timeout: Duration.seconds(30),
    environment: {},
    vpc,
    subnets: { subnetType: ec2.SubnetType.PRIVATE_ISOLATED },
    securityGroups: [new ec2.SecurityGroup(stack, 'Sg', { vpc })],
    logRetention: logs.RetentionDays.ONE_WEEK,
  });
  // `npm ci` beside the bundle from npm's cache only: the tier runs offline. A native binary not in the cache (the
  // one for arm64 on another machine) is an optional package npm then leaves out; the CRC-32C is then the JS one.
  const offline = process.env.npm_config_offline;
  process.env.npm_config_offline = 'true';
  try {
    return assetDir(app.synth().directory);
  } finally {
    if (offline === undefined) delete process.env.npm_config_offline;
    else process.env.npm_config_offline = offline;
  }
}

/** The one bundled function's asset directory in a cloud assembly. */
function assetDir(assembly: string): string {
  const assets = readdirSync(assembly)
    .map((d) => join(assembly, d))
    .filter((d) => existsSync(join(d, 'index.mjs')));
  expect(assets).toHaveLength(1);
  return assets[0] as string;
}

/**
 * Run in a child Node from the bundle's directory: loads the bundle (its handler module, as Lambda does), then asks
 * kafkajs's own modules, resolved from there, what they run.
 */
const PROBE = `
import { createRequire } from 'node:module';
import { join } from 'node:path';
const dir = process.cwd();
await import(join(dir, 'index.mjs'));
const require = createRequire(join(dir, 'index.mjs'));
const kafkajs = require.resolve('kafkajs');
// The bundle loaded kafkajs from node_modules (an inlined copy would leave it unloaded).
const loadedFromNodeModules = require.cache[kafkajs] !== undefined;
// A record batch's checksum: kafkajs's record batch module takes its CRC-32C from '../crc32C'.
require('kafkajs/src/protocol/recordBatch/v0/index.js');
const crcDir = join(require.resolve('kafkajs/src/protocol/recordBatch/crc32C/index.js'), '..');
const batchCrc = require(join(crcDir, 'index.js'));
const ownCrcLoaded = require.cache[join(crcDir, 'crc32C.js')] !== undefined;
// The Encoder: a big buffer is appended by reference, as a chunk.
const Encoder = require('kafkajs/src/protocol/encoder.js');
const e = new Encoder().writeBytes(Buffer.alloc(4096, 1));
const encoderChunks = Array.isArray(e.chunks);
// The request queue: with nothing pending, no timer is armed.
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js');
const q = { pending: [], throttledUntil: 0, throttleCheckTimeoutId: null, checkPendingRequests() {} };
RequestQueue.prototype.scheduleCheckPendingRequests.call(q);
const idleTimer = q.throttleCheckTimeoutId !== null;
if (idleTimer) clearTimeout(q.throttleCheckTimeoutId);
console.log(JSON.stringify({
  loadedFromNodeModules,
  ownCrcLoaded,
  check: batchCrc(Buffer.from('123456789')),
  encoderChunks,
  encodedBytes: e.buffer.length,
  idleTimer,
}));
`;

describe('a Lambda bundle (kafka-monitor, bundled as cdk synth does)', () => {
  let dir: string;
  beforeAll(() => {
    dir = bundleFunction('kafka-monitor');
  });

  it('keeps kafkajs and @node-rs/crc32 out of the bundle, as packages in node_modules beside it', () => {
    const bundle = readFileSync(join(dir, 'index.mjs'), 'utf8');
    // kafkajs's own error names are in the bundle when it is inlined; as a package, the bundle imports it.
    expect(bundle.includes('KafkaJSNumberOfRetriesExceeded'), 'kafkajs inlined').toBe(false);
    expect(/from\s*"kafkajs"/.test(bundle), 'kafkajs imported').toBe(true);
    for (const pkg of ['kafkajs', '@node-rs/crc32'])
      expect(existsSync(join(dir, 'node_modules', pkg, 'package.json')), pkg).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, 'node_modules/kafkajs/package.json'), 'utf8')).version).toBe('2.2.4');
    // Only the native CRC-32C binary for the function's architecture (arm64 Linux), where one was installed.
    const native = readdirSync(join(dir, 'node_modules/@node-rs')).filter((d) => d.startsWith('crc32-'));
    expect(native.filter((d) => d !== 'crc32-linux-arm64-gnu')).toEqual([]);
    expect(statSync(join(dir, 'scripts')).isDirectory()).toBe(true);
  });

  it("runs lib/kafka's fast path on kafkajs: its CRC-32C, its Encoder and its request queue's pending check", () => {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', PROBE], {
      cwd: dir,
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        KAFKA_BROKERS: '127.0.0.1:9',
        REDIS_HOST: '127.0.0.1',
        POWERTOOLS_DEV: 'false',
      },
    });
    expect(JSON.parse(out.trim().split('\n').at(-1) as string)).toEqual({
      loadedFromNodeModules: true,
      ownCrcLoaded: false,
      check: 0xe3069283,
      encoderChunks: true,
      encodedBytes: 4100,
      idleTimer: false,
    });
  });
});
