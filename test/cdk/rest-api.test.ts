import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { HTTP_API_INTEGRATION_LIMIT_SECONDS } from '../../cdk/constructs/functions.ts';
import { REQUIRED_VARIABLES } from '../../cdk/runtime-env.ts';
import { VARIABLES } from '../../lib/config/index.ts';
import { allStatements, type Cfn, logicalIdOf, resourceOf, type Synthesized, synthStack } from './synth.ts';

let s: Synthesized;
beforeAll(() => {
  s = synthStack();
});

const apiId = () => logicalIdOf(s, s.stack.restApi.api);

describe('REST API', () => {
  it('is one HTTP API whose only route, $default, requires IAM (SigV4) authorization', () => {
    s.template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    expect(resourceOf(s, s.stack.restApi.api).Properties.ProtocolType).toBe('HTTP');
    const routes = Object.values(s.template.findResources('AWS::ApiGatewayV2::Route')) as Cfn[];
    expect(routes).toHaveLength(1);
    expect(routes[0]?.Properties).toMatchObject({
      ApiId: { Ref: apiId() },
      RouteKey: '$default',
      AuthorizationType: 'AWS_IAM',
    });
  });

  it('proxies to the rest function with payload format 2.0 and a timeout the function stays under', () => {
    const integrations = Object.values(s.template.findResources('AWS::ApiGatewayV2::Integration')) as Cfn[];
    expect(integrations).toHaveLength(1);
    const p = integrations[0]?.Properties;
    expect(p.IntegrationType).toBe('AWS_PROXY');
    expect(p.PayloadFormatVersion).toBe('2.0');
    expect(p.IntegrationUri).toEqual({ 'Fn::GetAtt': [logicalIdOf(s, s.stack.functions.rest.function), 'Arn'] });
    const fnTimeout = resourceOf(s, s.stack.functions.rest.function).Properties.Timeout;
    expect(p.TimeoutInMillis).toBe(HTTP_API_INTEGRATION_LIMIT_SECONDS * 1000);
    expect(fnTimeout * 1000).toBeLessThan(p.TimeoutInMillis);
  });

  it('gives the function at least 20 s: the reply wait (5 s) plus the Kafka (10 s) and Redis (2 s) bounds', () => {
    const p = resourceOf(s, s.stack.functions.rest.function).Properties;
    expect(p.Timeout).toBeGreaterThanOrEqual(20);
    expect(p.Environment.Variables.WAIT_FOR_RESPONSE_TIME).toBe('5');
    for (const v of REQUIRED_VARIABLES.rest) expect(p.Environment.Variables, v).toHaveProperty(v);
    expect(p.Environment.Variables.POWERTOOLS_SERVICE_NAME).toBe('rest');
  });

  it('follows a WAIT_FOR_RESPONSE_TIME override, and refuses one API Gateway would cut off', () => {
    const c = synthStack({ runtimeEnv: { WAIT_FOR_RESPONSE_TIME: '10' } });
    const p = resourceOf(c, c.stack.functions.rest.function).Properties;
    expect(p.Environment.Variables.WAIT_FOR_RESPONSE_TIME).toBe('10');
    expect(p.Timeout).toBe(25);
    expect(() => synthStack({ runtimeEnv: { WAIT_FOR_RESPONSE_TIME: '20' } })).toThrow(
      /context "runtimeEnv": WAIT_FOR_RESPONSE_TIME must be an integer in \[0, 13\]/,
    );
  });

  it('lets only API Gateway (this API) invoke the function', () => {
    const perms = Object.values(s.template.findResources('AWS::Lambda::Permission')).filter(
      (r) =>
        JSON.stringify(r.Properties.FunctionName) ===
        JSON.stringify({ 'Fn::GetAtt': [logicalIdOf(s, s.stack.functions.rest.function), 'Arn'] }),
    ) as Cfn[];
    expect(perms).toHaveLength(1);
    expect(perms[0]?.Properties.Principal).toBe('apigateway.amazonaws.com');
    expect(JSON.stringify(perms[0]?.Properties.SourceArn)).toContain(apiId());
  });

  it('serves the $default stage with auto-deploy, throttling and JSON access logs', () => {
    const stage = resourceOf(s, s.stack.restApi.stage).Properties;
    expect(stage.StageName).toBe('$default');
    expect(stage.AutoDeploy).toBe(true);
    expect(stage.DefaultRouteSettings).toEqual({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 });
    expect(stage.AccessLogSettings.DestinationArn).toEqual({
      'Fn::GetAtt': [logicalIdOf(s, s.stack.restApi.accessLogs), 'Arn'],
    });
    const format = JSON.parse(stage.AccessLogSettings.Format);
    expect(format).toMatchObject({ requestId: '$context.requestId', caller: '$context.identity.userArn' });
    expect(resourceOf(s, s.stack.restApi.accessLogs).Properties.RetentionInDays).toBe(30);
    s.template.resourceCountIs('AWS::ApiGatewayV2::Stage', 1);

    const c = synthStack({ restRateLimit: 5, restBurstLimit: 10 });
    expect(resourceOf(c, c.stack.restApi.stage).Properties.DefaultRouteSettings).toEqual({
      ThrottlingRateLimit: 5,
      ThrottlingBurstLimit: 10,
    });
  });

  it('bursts the stage at the REST in-flight bound (REST_MAX_IN_FLIGHT) and follows an override of it', () => {
    s.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: { ThrottlingBurstLimit: VARIABLES.REST_MAX_IN_FLIGHT.default },
    });
    const c = synthStack({ runtimeEnv: { REST_MAX_IN_FLIGHT: '40' } });
    c.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 40 },
    });
    const wins = synthStack({ runtimeEnv: { REST_MAX_IN_FLIGHT: '40' }, restBurstLimit: 70 });
    wins.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: { ThrottlingBurstLimit: 70 },
    });
    expect(() => synthStack({ runtimeEnv: { REST_MAX_IN_FLIGHT: '0' } })).toThrow(
      /context "runtimeEnv": REST_MAX_IN_FLIGHT must be an integer in \[1, 10000\]/,
    );
  });

  it('lets the function write only to <prefix>.incoming', () => {
    const fnRole = logicalIdOf(s, s.stack.functions.rest.role);
    const policies = Object.entries(s.template.findResources('AWS::IAM::Policy'))
      .filter(([, r]) => JSON.stringify(r.Properties.Roles) === JSON.stringify([{ Ref: fnRole }]))
      .map(([id]) => id);
    const statements = allStatements(s).filter((st) => policies.includes(st.owner));
    const writes = statements.filter((st) => st.Action.includes('kafka-cluster:WriteData'));
    expect(writes).toHaveLength(1);
    expect(writes[0]?.Resource).toHaveLength(1);
    expect(JSON.stringify(writes[0]?.Resource)).toMatch(/\/demo\.incoming"\]\]\}\]$/);
    const actions = new Set(statements.flatMap((st) => st.Action));
    expect(actions.has('kafka-cluster:ReadData')).toBe(false);
    expect([...actions].filter((a) => a.startsWith('s3:'))).toEqual([]);
  });

  it('offers callers a managed policy with execute-api:Invoke on this API only', () => {
    const p = resourceOf(s, s.stack.restApi.invokePolicy).Properties;
    expect(p.PolicyDocument.Statement).toEqual([
      {
        Effect: 'Allow',
        Action: 'execute-api:Invoke',
        Resource: { 'Fn::Join': ['', ['arn:aws:execute-api:us-east-1:123456789012:', { Ref: apiId() }, '/*']] },
      },
    ]);
  });

  it('outputs the URL and the invoke policy', () => {
    s.template.hasOutput('RestApiUrl', {
      Value: Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith([{ Ref: apiId() }])]) }),
    });
    s.template.hasOutput('RestApiInvokePolicy', { Value: { Ref: logicalIdOf(s, s.stack.restApi.invokePolicy) } });
  });

  it('alarms on 5xx answers and graphs them on the dashboard', () => {
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/ApiGateway',
      MetricName: '5xx',
      Dimensions: [{ Name: 'ApiId', Value: { Ref: apiId() } }],
      Statistic: 'Sum',
      Period: 300,
      Threshold: 5,
      AlarmActions: [{ Ref: logicalIdOf(s, s.stack.observability.alarmTopic) }],
    });
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalIdOf(s, s.stack.functions.rest.function) } }],
    });
    const body = JSON.stringify(resourceOf(s, s.stack.observability.dashboard).Properties.DashboardBody);
    expect(body).toContain('REST API requests per minute');
    expect(body).toContain('\\"5xx\\"');
    expect(body).toContain('Responses5xx');
  });
});
