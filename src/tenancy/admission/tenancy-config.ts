// Admission for the TenancyConfig: unknown keys are mistakes, and mistakes are rejected loudly.
import { tenancyConfigKeys } from '../../crds/tenancy.ts';
import { type AdmissionRequest, allow, deny, type Verdict } from '../../webhook/admission.ts';
import { unknownConfigKeys } from '../policy/config.ts';

export function validateTenancyConfig(req: AdmissionRequest): Verdict {
  const unknown = unknownConfigKeys((req.object as { spec?: Record<string, unknown> }).spec);
  if (unknown.length === 0) return allow();
  return deny(
    `TenancyConfig: unknown key in spec: ${unknown.join(', ')}; allowed keys: ${tenancyConfigKeys.join(', ')}`,
    422,
    'Invalid',
  );
}
