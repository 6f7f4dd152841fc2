/**
 * Reads a V8 `.cpuprofile` (written by `node --cpu-prof`) and ranks where the samples were: self time per
 * function (`name file:line`), per file and per package, written as a Markdown report with these tables (the
 * reports in bench/profile/, read for bench/PROFILE.md).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { REPO_ROOT } from '../../localstack/repo-root.ts';
import { alignedTable } from './results.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

interface Ranked {
  name: string;
  ms: number;
  /** Share of the non-idle time, in percent. */
  pct: number;
}

export interface ProfileSummary {
  /** Wall time covered by the profile, ms. */
  totalMs: number;
  /** Sampled time not idle (program, GC and JavaScript), ms. */
  busyMs: number;
  idleMs: number;
  gcMs: number;
  functions: Ranked[];
  files: Ranked[];
  packages: Ranked[];
}

function shortFile(url: string): string {
  if (!url) return '(native)';
  const path = url.startsWith('file://') ? decodeURIComponent(new URL(url).pathname) : url;
  if (path.startsWith('node:')) return path;
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) return path.slice(nm + '/node_modules/'.length);
  return path.startsWith('/') ? relative(REPO_ROOT, path) : path;
}

function packageOf(url: string): string {
  const file = shortFile(url);
  if (file === '(native)' || file.startsWith('node:')) return file.startsWith('node:') ? 'node:internal' : file;
  if (!url.includes('/node_modules/')) return `repo: ${file.split('/').slice(0, 2).join('/')}`;
  const parts = file.split('/');
  return (parts[0] as string).startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] as string);
}

function rank(map: Map<string, number>, busy: number, top: number): Ranked[] {
  return [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, us]) => ({ name, ms: Math.round(us / 100) / 10, pct: Math.round((us / busy) * 1000) / 10 }));
}

export function summarizeCpuProfile(file: string, top = 25): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  // timeDeltas[i] is the time before sample i: attribute it to sample i (V8's own convention in DevTools).
  p.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  let idle = 0;
  let gc = 0;
  let busy = 0;
  const fn = new Map<string, number>();
  const files = new Map<string, number>();
  const packages = new Map<string, number>();
  for (const [id, us] of self) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    if (functionName === '(garbage collector)') gc += us;
    busy += us;
    const name = url
      ? `${functionName || '(anonymous)'} ${shortFile(url)}:${lineNumber + 1}`
      : functionName || '(native)';
    fn.set(name, (fn.get(name) ?? 0) + us);
    const f = url ? shortFile(url) : functionName || '(native)';
    files.set(f, (files.get(f) ?? 0) + us);
    const pkg = url ? packageOf(url) : functionName || '(native)';
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
  }
  return {
    totalMs: Math.round((p.endTime - p.startTime) / 1000),
    busyMs: Math.round(busy / 1000),
    idleMs: Math.round(idle / 1000),
    gcMs: Math.round(gc / 1000),
    functions: rank(fn, busy, top),
    files: rank(files, busy, top),
    packages: rank(packages, busy, top),
  };
}

/** A Markdown table of ranked rows, laid out as `biome format` wants it (bench/lib/results.ts). */
function rankedTable(title: string, rows: Ranked[]): string {
  const body = rows.map((r) => [`\`${r.name.replaceAll('|', '\\|')}\``, String(r.ms), String(r.pct)]);
  return alignedTable([[title, 'self ms', '% of busy'], ...body]).join('\n');
}

/** The profile's times in one sentence: wall time, busy (with GC) and idle. */
export function profileTimes(s: ProfileSummary): string {
  return `Profile ${s.totalMs} ms: busy ${s.busyMs} ms (GC ${s.gcMs} ms), idle ${s.idleMs} ms.`;
}

/**
 * Writes a profile's report to `path` and returns it: the Markdown heading `title`, the `intro` lines, then the
 * ranked tables of self time per function, file and package.
 */
export function writeProfileReport(path: string, title: string, intro: string[], s: ProfileSummary): string {
  const md = [
    `# ${title}`,
    '',
    ...intro,
    '',
    rankedTable('Function (self time)', s.functions),
    '',
    rankedTable('File', s.files),
    '',
    rankedTable('Package', s.packages),
    '',
  ].join('\n');
  writeFileSync(path, md);
  return md;
}
