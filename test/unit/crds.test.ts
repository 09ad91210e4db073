import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { staleCrdFiles } from '../../src/cli/generate.ts';
import { Nullable, toStructural } from '../../src/crds/schema.ts';

describe('CRD generation', () => {
  it('has config/crd/ up to date with src/crds (run `npm run generate` if this fails)', async () => {
    expect(await staleCrdFiles()).toEqual([]);
  });

  it('turns TypeBox schemas into structural schemas', () => {
    const schema = Type.Object(
      {
        mode: Type.Union([Type.Literal('A'), Type.Literal('B')], { default: 'A' }),
        labels: Type.Optional(Type.Record(Type.String(), Type.String())),
        items: Type.Array(Type.Integer({ minimum: 0 }), { maxItems: 3 }),
      },
      { 'x-kubernetes-validations': [{ rule: 'true', message: 'm' }] },
    );
    expect(toStructural(schema)).toEqual({
      type: 'object',
      'x-kubernetes-validations': [{ rule: 'true', message: 'm' }],
      properties: {
        mode: { type: 'string', enum: ['A', 'B'], default: 'A' },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        items: { type: 'array', maxItems: 3, items: { type: 'integer', minimum: 0 } },
      },
      required: ['mode', 'items'],
    });
  });

  it('turns Nullable into nullable: true, for enums and objects too', () => {
    const schema = Type.Object({
      list: Nullable(Type.Array(Type.String()), { description: 'd' }),
      mode: Type.Optional(Nullable(Type.Union([Type.Literal('A'), Type.Literal('B')]))),
      selector: Nullable(Type.Object({ a: Type.String() }, { 'x-kubernetes-map-type': 'atomic' })),
    });
    expect(toStructural(schema)).toEqual({
      type: 'object',
      properties: {
        list: { type: 'array', items: { type: 'string' }, nullable: true, description: 'd' },
        mode: { type: 'string', enum: ['A', 'B'], nullable: true },
        selector: {
          type: 'object',
          'x-kubernetes-map-type': 'atomic',
          properties: { a: { type: 'string' } },
          required: ['a'],
          nullable: true,
        },
      },
      required: ['list', 'selector'],
    });
  });

  it('refuses unions a CRD cannot express', () => {
    expect(() => toStructural(Type.Union([Type.String(), Type.Integer()]))).toThrow(/string literals/);
  });
});
