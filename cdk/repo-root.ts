import { resolve } from 'node:path';

/**
 * The repository root (this file is cdk/repo-root.ts): where the stack finds the functions' entries, the lock file,
 * the crawler's Dockerfile and cdk.json. The deploy code's own, so that cdk/ depends on nothing of the local runtime.
 */
export const REPO_ROOT = resolve(import.meta.dirname, '..');
