/**
 * Keeps one Kafka consumer alive (docs/design.md §10: "a supervisor notices what died ... and restarts it or exits
 * so its own supervisor does; health reports it").
 *
 * kafkajs restarts a crashed consumer by itself only when it judges the error retriable (its CRASH event says
 * `restart: true`). After a broker restart it gives up on errors it calls final, such as
 * `KafkaJSGroupCoordinatorNotFound` ("Failed to find group coordinator", `restart: false`): that consumer is
 * disconnected and never reads again, while the process looks healthy. So:
 * - `restart: true`: kafkajs restarts it; the supervisor only records that it is down until it joins again.
 * - `restart: false`: the supervisor has the owner build a NEW consumer (a kafkajs consumer that crashed is not
 *   reused) after a backoff that doubles per failed attempt, up to a cap.
 * - Down (crashed, not joined again) longer than `giveUpAfterMs`, whoever was restarting it: the supervisor gives
 *   up and tells the owner, which exits non-zero so that its own supervisor (systemd, ECS, a person) takes over.
 * Every step is logged, and {@link ConsumerSupervisor.health} says what state the consumer is in.
 */
import { InfrastructureError } from '../../lib/errors.ts';
import { errorFields, type RuntimeLog } from './log.ts';

/** How a consumer that kafkajs will not restart is restarted, and when to stop trying. */
export interface RestartPolicy {
  /** Wait before the first restart, in ms; it doubles per failed attempt. @default 1000 */
  initialBackoffMs: number;
  /**
   * Cap of the wait between two attempts, in ms: also the longest a consumer stays down after its broker is back.
   * @default 10_000
   */
  maxBackoffMs: number;
  /**
   * A consumer down this long (from its crash to a join) is given up on: long enough for a broker to be
   * restarted or a leader to be elected, short enough that a lasting outage reaches whoever supervises the process.
   * @default 300_000
   */
  giveUpAfterMs: number;
}

/** The defaults of {@link RestartPolicy}. */
export const DEFAULT_RESTART_POLICY: Readonly<RestartPolicy> = {
  initialBackoffMs: 1000,
  maxBackoffMs: 10_000,
  giveUpAfterMs: 300_000,
};

/**
 * The wait before restart attempt `attempt` (0 for the first): `initialBackoffMs * 2^attempt`, never more than
 * `maxBackoffMs`. No jitter: one process restarts one consumer per group, there is no herd to spread.
 */
export function restartBackoffMs(attempt: number, policy: RestartPolicy = DEFAULT_RESTART_POLICY): number {
  const doubled = policy.initialBackoffMs * 2 ** Math.min(Math.max(0, attempt), 30);
  return Math.min(policy.maxBackoffMs, doubled);
}

/** What to do about a crash: wait for kafkajs's own restart, restart it ourselves, or give up. */
export type CrashDecision = 'kafkajs-restarts' | 'restart' | 'give-up';

/**
 * The decision for a crash of a consumer that has been down for `downForMs` (0 when it was running until now).
 * @param kafkajsRestarts the CRASH event's `payload.restart`
 */
export function crashDecision(
  kafkajsRestarts: boolean,
  downForMs: number,
  policy: RestartPolicy = DEFAULT_RESTART_POLICY,
): CrashDecision {
  if (downForMs >= policy.giveUpAfterMs) return 'give-up';
  return kafkajsRestarts ? 'kafkajs-restarts' : 'restart';
}

/**
 * `starting`: not joined yet; `consuming`: joined its group; `down`: crashed, being restarted (by kafkajs or by
 * the supervisor); `failed`: given up; `stopped`: stopped by its owner.
 */
export type ConsumerState = 'starting' | 'consuming' | 'down' | 'failed' | 'stopped';

/** One consumer's state for health reports. */
export interface ConsumerHealth {
  /** Names the consumer (the function it feeds, or its group). */
  name: string;
  state: ConsumerState;
  /** When it went down (epoch ms), while `down` or `failed`. */
  downSince?: number;
  /** Restarts the supervisor attempted so far (a new consumer each, whether it got in or not). */
  restarts: number;
  /** The last crash's message, while `down` or `failed`. */
  lastError?: string;
}

/** A consumer that stayed down longer than {@link RestartPolicy.giveUpAfterMs}. */
export class ConsumerDownError extends InfrastructureError {}

/** Options of {@link ConsumerSupervisor}. */
export interface ConsumerSupervisorOptions {
  /** Names the consumer in log lines and health. */
  name: string;
  log: RuntimeLog;
  /**
   * Disconnects the crashed consumer (bounded) and starts a new one: connect, subscribe, run. Rejects when it
   * cannot (Kafka still away); the supervisor then tries again after the next backoff.
   */
  replace(): Promise<void>;
  /** Called once when the supervisor gives up; the consumer is not restarted after it. */
  onGiveUp(error: ConsumerDownError): void;
  /** @default {@link DEFAULT_RESTART_POLICY} */
  policy?: Partial<RestartPolicy>;
  /** The clock. @default Date.now */
  now?: () => number;
}

/**
 * The restart logic of one consumer, fed its events by the owner: call {@link joined} on every GROUP_JOIN and
 * {@link crashed} on every CRASH. Timers only; it holds no connection.
 */
export class ConsumerSupervisor {
  private readonly options: ConsumerSupervisorOptions;
  private readonly policy: RestartPolicy;
  private readonly now: () => number;
  private state: ConsumerState = 'starting';
  private downSince: number | undefined;
  private lastError: string | undefined;
  private restarts = 0;
  /** Failed restart attempts since the consumer was last consuming: the backoff's exponent. */
  private attempts = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private giveUpTimer: NodeJS.Timeout | undefined;
  private replacing = false;
  /** A crash (or a failed replace) came while a replace ran: try again once it is over. */
  private again = false;

  constructor(options: ConsumerSupervisorOptions) {
    this.options = options;
    this.policy = { ...DEFAULT_RESTART_POLICY, ...options.policy };
    this.now = options.now ?? Date.now;
  }

  /** The consumer joined its group (first start, a rebalance, or back after a restart). */
  joined(): void {
    if (this.state === 'stopped' || this.state === 'failed') return;
    if (this.state === 'down') {
      this.options.log('info', 'consumer is consuming again', {
        consumer: this.options.name,
        downForMs: this.now() - (this.downSince ?? this.now()),
        restarts: this.restarts,
      });
    }
    this.state = 'consuming';
    this.downSince = undefined;
    this.lastError = undefined;
    this.attempts = 0;
    clearTimeout(this.giveUpTimer);
    this.giveUpTimer = undefined;
  }

  /**
   * The consumer crashed.
   * @param kafkajsRestarts the CRASH event's `payload.restart`: kafkajs restarts it itself
   */
  crashed(error: unknown, kafkajsRestarts: boolean): void {
    if (this.state === 'stopped' || this.state === 'failed') return;
    const now = this.now();
    if (this.state !== 'down') {
      this.state = 'down';
      this.downSince = now;
      // Bounds the outage whoever restarts it: kafkajs may retry a retriable error forever.
      this.giveUpTimer = setTimeout(() => this.giveUp(), this.policy.giveUpAfterMs);
    }
    this.lastError = errorFields(error).error;
    const decision = crashDecision(kafkajsRestarts, now - (this.downSince ?? now), this.policy);
    this.options.log('error', 'consumer crashed', {
      consumer: this.options.name,
      restart: kafkajsRestarts,
      by: decision === 'kafkajs-restarts' ? 'kafkajs' : decision === 'restart' ? 'supervisor' : 'nobody',
      ...errorFields(error),
    });
    if (decision === 'give-up') this.giveUp();
    else if (decision === 'restart') this.scheduleRestart();
  }

  /** The consumer's state now. */
  health(): ConsumerHealth {
    const health: ConsumerHealth = { name: this.options.name, state: this.state, restarts: this.restarts };
    if (this.downSince !== undefined) health.downSince = this.downSince;
    if (this.lastError !== undefined) health.lastError = this.lastError;
    return health;
  }

  /** No restart after this; a restart under way finishes, and its owner's stop disconnects what it built. */
  stop(): void {
    this.state = 'stopped';
    this.clearTimers();
  }

  private scheduleRestart(): void {
    if (this.replacing) {
      this.again = true;
      return;
    }
    if (this.restartTimer !== undefined) return;
    const delay = restartBackoffMs(this.attempts, this.policy);
    this.attempts += 1;
    this.options.log('warn', 'restarting the consumer', {
      consumer: this.options.name,
      inMs: delay,
      attempt: this.attempts,
    });
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      void this.restartNow();
    }, delay);
  }

  private async restartNow(): Promise<void> {
    if (this.state !== 'down') return;
    this.replacing = true;
    this.again = false;
    // Counted before: the new consumer's join (and its log line) comes before replace() resolves.
    this.restarts += 1;
    try {
      await this.options.replace();
    } catch (error) {
      this.again = true;
      this.lastError = errorFields(error).error;
      this.options.log('warn', 'consumer restart failed', { consumer: this.options.name, ...errorFields(error) });
    } finally {
      this.replacing = false;
    }
    if (this.again && this.state === 'down') this.scheduleRestart();
  }

  private giveUp(): void {
    if (this.state === 'stopped' || this.state === 'failed') return;
    const downForMs = this.now() - (this.downSince ?? this.now());
    this.state = 'failed';
    this.clearTimers();
    const error = new ConsumerDownError(
      `consumer ${this.options.name} has been down for ${Math.round(downForMs / 1000)} s (last error: ${this.lastError ?? 'none'}); giving up`,
    );
    this.options.log('error', 'consumer given up', {
      consumer: this.options.name,
      downForMs,
      restarts: this.restarts,
      error: this.lastError,
    });
    this.options.onGiveUp(error);
  }

  private clearTimers(): void {
    clearTimeout(this.restartTimer);
    clearTimeout(this.giveUpTimer);
    this.restartTimer = undefined;
    this.giveUpTimer = undefined;
  }
}
