/** What a result was measured on: machine, Node and the git commit of the code under test. */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { REPO_ROOT } from '../../localstack/repo-root.ts';

export interface MachineInfo {
  cpus: number;
  cpu_model: string;
  mem_gib: number;
  node: string;
  platform: string;
  /** 1-minute load average when the scenario started: a busy shared machine explains slow numbers. */
  loadavg_1m: number;
}

export function machineInfo(): MachineInfo {
  const list = cpus();
  return {
    cpus: list.length,
    cpu_model: list[0]?.model.trim() ?? 'unknown',
    mem_gib: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    loadavg_1m: Math.round((loadavg()[0] ?? 0) * 100) / 100,
  };
}

export interface GitInfo {
  /** Short commit hash of HEAD ('unknown' outside a git checkout). */
  commit: string;
  /** True when the working tree had uncommitted changes (the numbers are then for HEAD plus those). */
  dirty: boolean;
}

export function gitInfo(): GitInfo {
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const commit = git('rev-parse', '--short=10', 'HEAD');
    const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
    return { commit, dirty };
  } catch {
    return { commit: 'unknown', dirty: false };
  }
}
