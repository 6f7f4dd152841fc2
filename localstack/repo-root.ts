import { resolve } from 'node:path';

/** The repository root (this file is localstack/repo-root.ts): where the CLI, cdk/ and the tests find the tree. */
export const REPO_ROOT = resolve(import.meta.dirname, '..');
