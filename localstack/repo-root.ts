import { resolve } from 'node:path';

/**
 * The repository root (this file is localstack/repo-root.ts): where the CLI, the local runtime and the tests find the
 * tree. cdk/ has its own (cdk/repo-root.ts), so that the deploy code depends on nothing here.
 */
export const REPO_ROOT = resolve(import.meta.dirname, '..');
