// The sleep between rounds of a loop woken by events (certificate upkeep, garbage collection, discovery).
import { describe, expect, it } from 'vitest';
import { Alarm } from '../../src/kube/alarm.ts';

const day = 24 * 60 * 60 * 1000;
/** 'woke' if the sleep ended within `ms`, 'asleep' otherwise. */
const within = (sleeping: Promise<void>, ms = 200) =>
  Promise.race([sleeping.then(() => 'woke'), new Promise((r) => setTimeout(r, ms, 'asleep'))]);

describe('Alarm', () => {
  it('does not start a sleep on a signal aborted during the round before it', async () => {
    // The certificate loop's stop came while it was making a certificate: it then slept out its day.
    const stop = new AbortController();
    stop.abort();
    expect(await within(new Alarm().sleep(day, stop.signal))).toBe('woke');
  });

  it('wakes a sleeper on a ring and on an abort', async () => {
    const alarm = new Alarm();
    const stop = new AbortController();
    const first = alarm.sleep(day, stop.signal);
    expect(await within(first, 50)).toBe('asleep');
    alarm.ring();
    expect(await within(first)).toBe('woke');
    const second = alarm.sleep(day, stop.signal);
    expect(await within(second, 50)).toBe('asleep');
    stop.abort();
    expect(await within(second)).toBe('woke');
  });

  it('keeps a ring that came during a round for the next sleep, once', async () => {
    const alarm = new Alarm();
    const stop = new AbortController();
    alarm.ring();
    alarm.ring();
    expect(await within(alarm.sleep(day, stop.signal))).toBe('woke');
    expect(await within(alarm.sleep(day, stop.signal), 50)).toBe('asleep');
    stop.abort();
  });

  it('ends a sleep after its time', async () => {
    const started = Date.now();
    await new Alarm().sleep(30, new AbortController().signal);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
  });
});
