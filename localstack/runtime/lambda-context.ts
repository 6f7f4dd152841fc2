/**
 * The Lambda context object the local runtime passes to the real handlers: `Context` of `@types/aws-lambda`, so
 * middy and Powertools (which read function name, request id, memory and remaining time) behave as on AWS.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

/** The context of a local invocation: Lambda's own type. */
export type LocalLambdaContext = Context;

/** A fresh context for one invocation with `timeoutMs` to run (Lambda's function timeout). */
export function lambdaContext(functionName: string, timeoutMs = 60_000): LocalLambdaContext {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done() {},
    fail() {},
    succeed() {},
  };
}
