// Which failures mean "the search database is gone" (answered 503, retry) and which do not (a bug or a
// bad value: answered as before), and the GraphQL replies that carry nothing but that.
import { describe, expect, it } from 'vitest';
import { databaseUnavailable } from '../../src/search/db/postgres.ts';
import { onlyUnavailable } from '../../src/search/graphql/server.ts';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('databaseUnavailable', () => {
  it('names lost connections, shutdowns and a starting server', () => {
    expect(databaseUnavailable(withCode('ECONNREFUSED'))).toBe('ECONNREFUSED');
    expect(databaseUnavailable(withCode('ECONNRESET'))).toBe('ECONNRESET');
    expect(
      databaseUnavailable(withCode('57P01', 'terminating connection due to administrator command')),
    ).toBe('57P01');
    expect(databaseUnavailable(withCode('08006'))).toBe('08006');
    expect(databaseUnavailable(withCode('57P03'))).toBe('57P03');
    expect(databaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(
      'Connection terminated unexpectedly',
    );
    expect(databaseUnavailable(new Error('timeout exceeded when trying to connect'))).toBeDefined();
  });

  it('leaves everything else alone: slow queries, bad values, bugs', () => {
    expect(
      databaseUnavailable(withCode('57014', 'canceling statement due to statement timeout')),
    ).toBeUndefined();
    expect(databaseUnavailable(withCode('22P02', 'invalid input syntax'))).toBeUndefined();
    expect(databaseUnavailable(new TypeError('cannot read properties of undefined'))).toBeUndefined();
    expect(databaseUnavailable('ECONNREFUSED')).toBeUndefined();
  });
});

describe('onlyUnavailable', () => {
  const reply = (...codes: string[]) =>
    JSON.stringify({ data: null, errors: codes.map((code) => ({ message: 'm', extensions: { code } })) });
  it('is true when every error is UNAVAILABLE', () => {
    expect(onlyUnavailable(reply('UNAVAILABLE'))).toBe(true);
    expect(onlyUnavailable(reply('UNAVAILABLE', 'UNAVAILABLE'))).toBe(true);
  });
  it('is false for answers, other errors and mixed ones', () => {
    expect(onlyUnavailable(JSON.stringify({ data: { search: [] } }))).toBe(false);
    expect(onlyUnavailable(reply('TIMEOUT'))).toBe(false);
    expect(onlyUnavailable(reply('UNAVAILABLE', 'INTERNAL'))).toBe(false);
    expect(onlyUnavailable('{"errors": "UNAVAILABLE"')).toBe(false);
  });
});
