/**
 * package-lock.json must let `npm ci` work on every platform a user may have: it lists every platform build of the
 * packages that ship native binaries as optional dependencies (Biome, esbuild), at the version their parent asks
 * for. A lock made where the registry lacked some builds leaves them out, and `npm ci` then refuses the lock
 * off Linux (issue 16). Biome is pinned to a version whose every platform build exists.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

interface LockEntry {
  version?: string;
  optionalDependencies?: Record<string, string>;
}
const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as {
  packages: Record<string, LockEntry>;
};

describe('package-lock.json', () => {
  for (const [name, minimum] of [
    ['@biomejs/biome', 8],
    ['esbuild', 20],
  ] as const) {
    it(`lists every platform build of ${name} at the version it asks for`, () => {
      const parent = lock.packages[`node_modules/${name}`];
      expect(parent, `${name} is in the lock`).toBeDefined();
      const builds = Object.entries(parent?.optionalDependencies ?? {});
      expect(builds.length).toBeGreaterThanOrEqual(minimum);
      for (const [build, version] of builds) {
        expect(lock.packages[`node_modules/${build}`]?.version, build).toBe(version);
      }
    });
  }

  it('lists the Biome builds for macOS and Windows, not just Linux', () => {
    const biome = Object.keys(lock.packages['node_modules/@biomejs/biome']?.optionalDependencies ?? {});
    expect(biome).toEqual(
      expect.arrayContaining(['@biomejs/cli-darwin-arm64', '@biomejs/cli-darwin-x64', '@biomejs/cli-win32-x64']),
    );
  });
});
