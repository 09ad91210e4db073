// ResourceQuotas and LimitRanges that tenantkit manages (labelled as reserved) are the cluster's
// guardrails inside a tenant's namespace: the namespace's admins may not change or delete them.
import type { KubeObject } from '../../kube/resources.ts';
import { type AdmissionRequest, allow, deny, type Verdict } from '../../webhook/admission.ts';
import { type ConfigSource, type PrivilegeCheck, reservedLabel } from '../model.ts';

export function validateReservedObject(
  config: ConfigSource,
  privileged: PrivilegeCheck,
  req: AdmissionRequest,
): Verdict {
  if (privileged(req.userInfo, config())) return allow();
  const old = req.oldObject as KubeObject | undefined;
  if (old?.metadata.labels?.[reservedLabel] !== 'true') return allow();
  const what = `${req.kind.kind} ${req.namespace}/${req.name}`;
  return deny(
    `namespace policy reserved-quota: ${what} is a guardrail managed by tenantkit and cannot be ${req.operation === 'DELETE' ? 'deleted' : 'changed'} by tenants; ask a cluster admin if its limits do not fit your workload`,
  );
}
