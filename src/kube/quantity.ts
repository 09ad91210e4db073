// Kubernetes resource quantities ("500m", "1.5", "2Gi", "512M", "1e3") as plain numbers of base units.

const suffixes: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const pattern = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$/;

/** Parses a quantity; undefined when it is not one. */
export function parseQuantity(text: string | number | undefined): number | undefined {
  if (typeof text === 'number') return text;
  // Anything else a client sent where a quantity belongs is no quantity.
  if (typeof text !== 'string' || !text) return undefined;
  const match = pattern.exec(text.trim());
  if (!match) return undefined;
  const base = Number(match[1]);
  if (match[2]) return base * 10 ** Number(match[2].slice(1));
  return base * (suffixes[match[3] ?? ''] ?? 1);
}
