import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../localstack/repo-root.ts';

const KAFKA_SERVICE = pathToFileURL(join(REPO_ROOT, 'localstack', 'services', 'kafka-service.ts')).href;

/**
 * A stand-in `mvn` that writes what Maven 3.8 writes with -q -B -Dstyle.color=never (bare ANSI resets) and, unless
 * told to fail, a Kafka jar into -DoutputDirectory.
 */
const FAKE_MVN = `#!/bin/sh
[ "$1" = "-v" ] && exit 0
printf '\\033[0m\\033[0m'
if [ -n "$FAKE_MVN_FAIL" ]; then
  printf '\\033[1;31m[ERROR]\\033[m Failed to execute goal: Could not resolve dependencies\\n' >&2
  exit 1
fi
for a in "$@"; do case "$a" in -DoutputDirectory=*) touch "\${a#-DoutputDirectory=}/kafka_2.13-3.9.1.jar";; esac; done
`;

describe("services up: fetching the Kafka jars with Maven (kafka-service.ts's kafkaLibs)", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** kafkaLibs in a process of its own, with the stand-in mvn first on PATH: what it printed, and how it ended. */
  function fetchLibs(env: Record<string, string> = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'kafka-libs-'));
    dirs.push(dir);
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'mvn'), FAKE_MVN);
    chmodSync(join(bin, 'mvn'), 0o755);
    const services = join(dir, 'services');
    const script = `import { kafkaLibs } from ${JSON.stringify(KAFKA_SERVICE)};
try { console.log(kafkaLibs({ dir: ${JSON.stringify(services)} }, (m) => console.log(m))); }
catch (error) { console.log('threw: ' + error.message); }`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { ...process.env, ...env, PATH: `${bin}:${process.env.PATH}` },
    });
    return { output: `${run.stdout}${run.stderr}`, log: join(services, 'kafka', 'mvn.log'), services };
  }

  it('prints no escape codes of Maven’s on success, only its own progress line, and keeps the output in mvn.log', () => {
    const { output, log, services } = fetchLibs();

    expect(output).not.toContain('\u001b');
    expect(output).toContain('kafka: fetching Apache Kafka jars from Maven Central into');
    expect(output).toContain(join(services, 'kafka', 'libs', 'kafka_2.13-3.9.1.jar'));
    expect(existsSync(log)).toBe(true);
    expect(readFileSync(log, 'utf8')).not.toContain('\u001b');
  });

  it('a failed fetch names Maven’s last lines without escape codes, and its log', () => {
    const { output, log } = fetchLibs({ FAKE_MVN_FAIL: '1' });

    expect(output).not.toContain('\u001b');
    expect(output).toContain(
      `threw: kafka: mvn could not fetch the Kafka jars ([ERROR] Failed to execute goal: Could not resolve dependencies); its output is in ${log}`,
    );
  });
});
