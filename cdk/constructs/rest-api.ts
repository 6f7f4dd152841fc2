/**
 * The REST API on AWS: an API Gateway HTTP API whose `$default` route sends every request to the rest function
 * (payload format 2.0; lib/rest/router.ts does the routing), with IAM authorization (callers sign with SigV4 and
 * need execute-api:Invoke), stage throttling and JSON access logs. A managed policy grants callers exactly that
 * invoke permission, so giving someone the API is attaching one policy.
 */
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { acknowledge, wildcardResource } from '../nag.ts';
import type { CrawlFunction } from './crawl-function.ts';
import { HTTP_API_INTEGRATION_LIMIT_SECONDS } from './functions.ts';

export interface RestApiProps {
  /** The rest function (Functions.rest). */
  fn: CrawlFunction;
  /** Steady requests per second of the `$default` stage. */
  rateLimit: number;
  /** Burst above the steady rate. */
  burstLimit: number;
  logRetention: logs.RetentionDays;
}

/** One JSON line per request; `caller` is the IAM principal that signed it. */
const ACCESS_LOG_FORMAT = {
  requestId: '$context.requestId',
  time: '$context.requestTime',
  ip: '$context.identity.sourceIp',
  caller: '$context.identity.userArn',
  account: '$context.identity.accountId',
  method: '$context.httpMethod',
  path: '$context.path',
  routeKey: '$context.routeKey',
  status: '$context.status',
  protocol: '$context.protocol',
  responseLength: '$context.responseLength',
  latency: '$context.responseLatency',
  integrationStatus: '$context.integrationStatus',
  integrationLatency: '$context.integrationLatency',
  integrationError: '$context.integrationErrorMessage',
  error: '$context.error.message',
};

export class RestApi extends Construct {
  readonly api: apigwv2.HttpApi;
  readonly stage: apigwv2.HttpStage;
  readonly accessLogs: logs.LogGroup;
  /** Grants execute-api:Invoke on this API: attach it to the roles or users that call the API. */
  readonly invokePolicy: iam.ManagedPolicy;

  constructor(scope: Construct, id: string, props: RestApiProps) {
    super(scope, id);
    const integration = new HttpLambdaIntegration('Rest', props.fn.function, {
      payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_2_0,
      // The function's own timeout is shorter (functions.ts restTimeoutSeconds), so its answer always arrives.
      timeout: Duration.seconds(HTTP_API_INTEGRATION_LIMIT_SECONDS),
    });
    this.api = new apigwv2.HttpApi(this, 'Api', {
      apiName: `${Stack.of(this).stackName}-rest`,
      description: 'crawl-cluster REST API (Scrapy Cluster compatible): /, /feed, /poll, /ui',
      // `$default` catches every method and path; IAM authorization applies to it.
      defaultIntegration: integration,
      defaultAuthorizer: new HttpIamAuthorizer(),
      // The stage below replaces the default one, to carry throttling and access logs.
      createDefaultStage: false,
    });

    this.accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.stage = new apigwv2.HttpStage(this, 'Stage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: props.rateLimit, burstLimit: props.burstLimit },
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(this.accessLogs),
        format: apigw.AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FORMAT)),
      },
    });

    this.invokePolicy = new iam.ManagedPolicy(this, 'InvokePolicy', {
      description: 'crawl-cluster: call the REST API (SigV4-signed requests to any method and path)',
      statements: [
        new iam.PolicyStatement({
          actions: ['execute-api:Invoke'],
          resources: [this.invokeArn()],
        }),
      ],
    });
    acknowledge(
      this.invokePolicy,
      wildcardResource(this, this.invokeArn()),
      'Callers of the REST API may use every method and path of this one API (lib/rest/router.ts answers 404 for ' +
        'unknown routes); the wildcard is within this API only.',
    );
  }

  /** The endpoint URL (`https://<id>.execute-api.<region>.amazonaws.com/`). */
  get url(): string {
    return this.stage.url;
  }

  /** The resource of execute-api:Invoke covering every stage, method and path of this API. */
  invokeArn(): string {
    return Stack.of(this).formatArn({
      service: 'execute-api',
      resource: this.api.apiId,
      resourceName: '*',
    });
  }
}
