/**
 * The sink's output port: where whole objects are written, listed and removed. `file:///dir` here, `s3://bucket/prefix`
 * in lib/sink/s3-output.ts. Keys are `/`-separated paths under the URI.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';

export interface SinkOutput {
  /** The URI the keys are under, for logs and locations (`file:///dir/`, `s3://bucket/prefix/`). */
  readonly uri: string;
  /** Writes one object whole, replacing any of that key: a reader sees the old object or the new one, never part. */
  put(key: string, chunks: readonly Uint8Array[], contentType: string): Promise<void>;
  /** Keys that start with `prefix` (which ends within one folder: it never spans a `/`). */
  list(prefix: string): Promise<string[]>;
  /** Removes these objects; a key already gone is no error. */
  remove(keys: readonly string[]): Promise<void>;
}

/** Marks a file being written; such a file left by a crash is removed with the stale objects of its stem. */
const TEMP_MARK = '.tmp-';

/**
 * Objects as files under `dir`, each written to a temporary file beside it and renamed into place (a rename within a
 * folder is atomic). A key that would leave `dir` is refused.
 */
export function fileOutput(dir: string): SinkOutput {
  const root = resolve(dir);
  const pathOf = (key: string) => {
    const path = resolve(root, key);
    if (!path.startsWith(root + sep)) throw new Error(`sink: key ${JSON.stringify(key)} leaves ${root}`);
    return path;
  };
  return {
    uri: `file://${root}/`,
    async put(key, chunks) {
      const path = pathOf(key);
      await mkdir(dirname(path), { recursive: true });
      const temp = `${path}${TEMP_MARK}${process.pid}-${randomBytes(4).toString('hex')}`;
      try {
        await writeFile(temp, chunks);
        await rename(temp, path);
      } catch (error) {
        await rm(temp, { force: true });
        throw error;
      }
    },
    async list(prefix) {
      const cut = prefix.lastIndexOf('/') + 1;
      const keyFolder = prefix.slice(0, cut);
      const start = prefix.slice(cut);
      let names: string[];
      try {
        names = await readdir(keyFolder === '' ? root : pathOf(keyFolder));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw error;
      }
      return names.filter((n) => n.startsWith(start)).map((n) => `${keyFolder}${n}`);
    },
    async remove(keys) {
      await Promise.all(keys.map((key) => rm(pathOf(key), { force: true })));
    },
  };
}
