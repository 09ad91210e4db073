// tenantkit dev's terminal shows people warnings and errors as plain lines; the JSON goes to a file.
import { describe, expect, it } from 'vitest';
import { plainLine } from '../../devenv/dev/log.ts';

describe('plainLine', () => {
  it('turns a JSON log line into time, level, message and the fields that matter', () => {
    const json = JSON.stringify({
      level: 40,
      time: '2026-11-24T19:03:04.123Z',
      pid: 1,
      hostname: 'h',
      component: 'tenantkit-dev',
      msg: 'reconcile failed',
      controller: 'nonadminbackup',
      err: 'conflict\n    at stack',
    });
    expect(plainLine(json)).toBe(
      '19:03:04 warning: reconcile failed (controller=nonadminbackup, err=conflict)',
    );
    expect(plainLine('{"level":50,"msg":"down"}')).toBe(' error: down');
    expect(plainLine('not json')).toBe('not json');
  });
});
