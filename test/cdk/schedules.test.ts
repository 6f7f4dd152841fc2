import { beforeAll, describe, expect, it } from 'vitest';
import { logicalIdOf, type Synthesized, synthStack } from './synth.ts';

let s: Synthesized;
beforeAll(() => {
  s = synthStack();
});

describe('schedules', () => {
  it('invokes expire, stats and reclaim every minute, without retries that would overlap the next run', () => {
    const schedules = Object.values(s.template.findResources('AWS::Scheduler::Schedule')).map((r) => r.Properties);
    expect(schedules).toHaveLength(3);
    const targets = schedules.map((p) => p.Target.Arn['Fn::GetAtt'][0]).sort();
    expect(targets).toEqual(
      Object.values(s.stack.functions.scheduled)
        .map((f) => logicalIdOf(s, f.function))
        .sort(),
    );
    for (const p of schedules) {
      expect(p.ScheduleExpression).toBe('rate(1 minute)');
      expect(p.State).toBe('ENABLED');
      expect(p.Target.RetryPolicy).toEqual({ MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 });
    }
  });

  it('invokes through one role that can invoke those three functions and nothing else', () => {
    const role = logicalIdOf(s, s.stack.functions.node.findChild('SchedulerRole'));
    for (const p of Object.values(s.template.findResources('AWS::Scheduler::Schedule')).map((r) => r.Properties))
      expect(p.Target.RoleArn).toEqual({ 'Fn::GetAtt': [role, 'Arn'] });
    const policy = Object.values(s.template.findResources('AWS::IAM::Policy')).find(
      (r) => JSON.stringify(r.Properties.Roles) === JSON.stringify([{ Ref: role }]),
    );
    const actions = policy?.Properties.PolicyDocument.Statement.flatMap(
      (st: { Action: string | string[] }) => st.Action,
    );
    expect(actions).toEqual(['lambda:InvokeFunction']);
  });
});
