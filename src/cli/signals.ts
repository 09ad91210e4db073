// SIGINT/SIGTERM as an AbortSignal for the long-running commands: the first stops gracefully, a second
// exits at once.
/** Resolves on SIGINT/SIGTERM, aborting the returned signal. */
export function shutdownSignal(): AbortController {
  const stop = new AbortController();
  const onSignal = (sig: string) => {
    if (stop.signal.aborted) {
      process.stderr.write(`second ${sig}: exiting now\n`);
      process.exit(130);
    }
    stop.abort();
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  return stop;
}
