/**
 * Copies files next to a Lambda bundle, with Node's fs rather than a shell's cp, so that bundling works the same on
 * Windows (cmd) as on Linux and macOS (bash). The bundling hooks of ./constructs/crawl-function.ts run it as
 * `node <repo>/cdk/copy-files.ts <from> <to> [file ...]`: with file names, those files of `from` go into the
 * directory `to`; without, the directory `from` is copied to `to` recursively.
 */
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

export function copyFiles(from: string, to: string, files: readonly string[] = []): void {
  if (files.length === 0) {
    cpSync(from, to, { recursive: true });
    return;
  }
  mkdirSync(to, { recursive: true });
  for (const file of files) cpSync(join(from, file), join(to, file));
}

if (import.meta.main) {
  const [from, to, ...files] = process.argv.slice(2);
  if (!from || !to) {
    console.error('usage: node cdk/copy-files.ts <from> <to> [file ...]');
    process.exit(2);
  }
  copyFiles(from, to, files);
}
