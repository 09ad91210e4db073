// Waiting on an AbortSignal. Its 'abort' event fires once: a listener added after that never runs, so a
// wait must look at `aborted` first.

/** Resolves when `signal` aborts, at once if it has already. */
export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
