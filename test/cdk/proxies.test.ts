/**
 * The crawlers' proxies on AWS (docs/proxies.md "On AWS"): context `proxiesSecret` names a Secrets Manager secret whose
 * JSON keys CRAWLER_PROXIES and CRAWLER_PROXY_GROUPS reach both fleets as ECS secrets, read by the task execution
 * role at start and never in a task's environment; `runtimeEnv` cannot set them in plain text.
 */

import type * as ecs from 'aws-cdk-lib/aws-ecs';
import { beforeAll, describe, expect, it } from 'vitest';
import { allStatements, type Cfn, resourceOf, type Synthesized, synthStack } from './synth.ts';

const ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:crawl/proxies-AbC123';
const PROXY_VARIABLES = ['CRAWLER_PROXIES', 'CRAWLER_PROXY_GROUPS'];

function container(s: Synthesized, taskDefinition: ecs.TaskDefinition): Cfn {
  return resourceOf(s, taskDefinition).Properties.ContainerDefinitions[0] as Cfn;
}

function fleets(s: Synthesized): ecs.TaskDefinition[] {
  const browser = s.stack.browserFleet;
  if (!browser) throw new Error('no browser fleet');
  return [s.stack.fleet.taskDefinition, browser.taskDefinition];
}

describe('proxiesSecret', () => {
  let byName: Synthesized;
  beforeAll(() => {
    byName = synthStack({ proxiesSecret: 'crawl/proxies', browserFleet: true }, { nag: true });
  });

  it('gives both fleets the proxy variables as ECS secrets from the JSON keys of the named secret', () => {
    for (const td of fleets(byName)) {
      const c = container(byName, td);
      const secrets = Object.fromEntries((c.Secrets as { Name: string; ValueFrom: unknown }[]).map((x) => [x.Name, x]));
      for (const name of PROXY_VARIABLES) {
        const valueFrom = JSON.stringify(byName.stack.resolve(secrets[name]?.ValueFrom));
        expect(valueFrom, name).toContain(':secret:crawl/proxies');
        expect(valueFrom, name).toContain(`:${name}::`);
      }
      const environment = (c.Environment as { Name: string }[]).map((e) => e.Name);
      for (const name of PROXY_VARIABLES) expect(environment).not.toContain(name);
    }
  });

  it('lets the task execution roles read that secret, and nothing of it reaches the task roles', () => {
    const reads = allStatements(byName).filter(
      (st) =>
        st.Action.includes('secretsmanager:GetSecretValue') && JSON.stringify(st.Resource).includes('crawl/proxies'),
    );
    const owners = reads.map((st) => st.owner).sort();
    expect(owners).toHaveLength(2);
    for (const owner of owners) expect(owner).toMatch(/TaskExecutionRoleDefaultPolicy/);
    expect(JSON.stringify(reads.map((st) => st.Resource))).toContain(':secret:crawl/proxies-??????');
  });

  it('takes a complete ARN too', () => {
    const s = synthStack({ proxiesSecret: ARN });
    const c = container(s, s.stack.fleet.taskDefinition);
    const valueFrom = (c.Secrets as { Name: string; ValueFrom: unknown }[]).find((x) => x.Name === 'CRAWLER_PROXIES');
    expect(valueFrom?.ValueFrom).toBe(`${ARN}:CRAWLER_PROXIES::`);
  });

  it('adds nothing without it: the crawlers fetch directly', () => {
    const s = synthStack();
    const c = container(s, s.stack.fleet.taskDefinition);
    expect((c.Secrets as { Name: string }[]).map((x) => x.Name)).toEqual(['REDIS_PASSWORD']);
    expect(JSON.stringify(s.template.toJSON())).not.toContain('CRAWLER_PROXIES');
  });

  it('refuses the proxy variables in runtimeEnv (plain text in the task definition) and a malformed secret id', () => {
    for (const name of PROXY_VARIABLES) {
      expect(() => synthStack({ runtimeEnv: { [name]: 'http://u:pw@10.0.0.5:3128' } })).toThrow(
        `context "runtimeEnv": ${name} holds credentials: put it in the secret named by proxiesSecret`,
      );
    }
    expect(() =>
      synthStack({ proxiesSecret: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:crawl/proxies' }),
    ).toThrow(/proxiesSecret/);
    expect(() => synthStack({ proxiesSecret: 'has space' })).toThrow(/proxiesSecret/);
  });
});
