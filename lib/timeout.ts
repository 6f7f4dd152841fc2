/**
 * Bounded waits: the one place a promise is raced against a timer. The work raced is never cancelled (a promise
 * cannot be); its late result, or late rejection, is dropped without an unhandled rejection. The timer is cleared
 * as soon as the race is decided, so a bounded wait leaves no handle keeping the process alive.
 */

/** Whether `promise` settled within `ms`: true when it fulfilled or rejected in time, false otherwise. Never rejects. */
export async function settlesWithin(promise: PromiseLike<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      Promise.resolve(promise).then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Settles like `promise` when it settles within `ms`; otherwise rejects with `late()` (called only then, so it
 * can build its message from the state at the deadline).
 */
export async function rejectAfter<T>(promise: PromiseLike<T>, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}
