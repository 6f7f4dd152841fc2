import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PutObjectCommand, type PutObjectCommandInput } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_BODY_CONTENT_TYPE,
  directoryBodyStore,
  type S3PutClient,
  s3BodyStore,
} from '../../lib/crawl/fetch/body-store.ts';

/** An S3 that keeps what it was sent; `fail` makes the next send reject like the SDK does. */
function fakeS3(): S3PutClient & { sent: PutObjectCommandInput[]; fail?: Error } {
  const fake: S3PutClient & { sent: PutObjectCommandInput[]; fail?: Error } = {
    sent: [],
    async send(command) {
      expect(command).toBeInstanceOf(PutObjectCommand);
      if (fake.fail) throw fake.fail;
      fake.sent.push(command.input);
      return { ETag: '"etag"' };
    },
  };
  return fake;
}

describe('s3BodyStore', () => {
  it('puts the body under prefix + key with its content type and returns the s3:// reference', async () => {
    const s3 = fakeS3();
    const store = s3BodyStore(s3, 'bodies-bucket', 'pages/');
    const body = Buffer.from('<html>big</html>');
    const ref = await store.put('app/c1/abc', body, 'text/html; charset=utf-8');
    expect(ref).toBe('s3://bodies-bucket/pages/app/c1/abc');
    expect(s3.sent).toHaveLength(1);
    expect(s3.sent[0]).toEqual({
      Bucket: 'bodies-bucket',
      Key: 'pages/app/c1/abc',
      Body: body,
      ContentType: 'text/html; charset=utf-8',
      ContentLength: body.byteLength,
    });
  });

  it('defaults the content type and leaves encryption to the bucket', async () => {
    const s3 = fakeS3();
    const ref = await s3BodyStore(s3, 'b').put('k', Buffer.alloc(3));
    expect(ref).toBe('s3://b/k');
    expect(s3.sent[0]?.ContentType).toBe(DEFAULT_BODY_CONTENT_TYPE);
    expect(s3.sent[0]).not.toHaveProperty('ServerSideEncryption');
    expect(s3.sent[0]).not.toHaveProperty('SSEKMSKeyId');
  });

  it('lets a failed put reject (the crawler then retries or releases the page)', async () => {
    const s3 = fakeS3();
    s3.fail = Object.assign(new Error('Access Denied'), { name: 'AccessDenied' });
    await expect(s3BodyStore(s3, 'b').put('k', Buffer.from('x'))).rejects.toThrow('Access Denied');
  });

  it('refuses an empty bucket name', () => {
    expect(() => s3BodyStore(fakeS3(), '')).toThrow(/bucket is required/);
  });
});

describe('directoryBodyStore', () => {
  const dir = mkdtempSync(join(tmpdir(), 'body-store-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the body under dir/key, creating directories, and returns a file:// reference', async () => {
    const store = directoryBodyStore(dir);
    const body = Buffer.from([0, 1, 2, 255]);
    const ref = await store.put('app/c%2F1/abc', body);
    expect(ref).toBe(pathToFileURL(join(dir, 'app', 'c%2F1', 'abc')).href);
    expect(fileURLToPath(ref)).toBe(join(dir, 'app', 'c%2F1', 'abc'));
    expect(readFileSync(fileURLToPath(ref))).toEqual(body);
    expect(readFileSync(join(dir, 'app', 'c%2F1', 'abc'))).toEqual(body);
  });

  it('overwrites a body stored under the same key', async () => {
    const store = directoryBodyStore(dir);
    await store.put('same', Buffer.from('one'));
    await store.put('same', Buffer.from('two'));
    expect(readFileSync(join(dir, 'same'), 'utf8')).toBe('two');
  });

  it('refuses a key that would leave the directory', async () => {
    const store = directoryBodyStore(join(dir, 'inner'));
    await expect(store.put('../outside', Buffer.from('x'))).rejects.toThrow(/leaves/);
    await expect(store.put('a/../../outside', Buffer.from('x'))).rejects.toThrow(/leaves/);
    await expect(store.put('/etc/passwd', Buffer.from('x'))).rejects.toThrow(/leaves/);
  });
});
