// The OpenShift project flow. Tenants ask for a project with a ProjectRequest; the control plane then
// creates the Project (and its Namespace) itself, naming the tenant in the `openshift.io/requester`
// annotation. So:
// - a ProjectRequest from a user without a default organization is denied up front, with the fix;
// - a Project created by the (privileged) control plane gets the requester's default organization.
//   The annotation is trusted only from a privileged creator: anyone else who may create Projects
//   directly is treated as the requester themself, so a forged annotation gains nothing.
import type { KubeObject } from '../../kube/resources.ts';
import { type AdmissionRequest, allow, deny, mutate, type Verdict } from '../../webhook/admission.ts';
import type { ConfigSource, Directory, PrivilegeCheck } from '../model.ts';

export const requesterAnnotation = 'openshift.io/requester';

export interface ProjectPolicyDeps {
  config: ConfigSource;
  privileged: PrivilegeCheck;
  directory: Directory;
}

export function validateProjectRequest(deps: ProjectPolicyDeps, req: AdmissionRequest): Verdict {
  if (req.operation !== 'CREATE') return allow();
  const config = deps.config();
  if (deps.privileged(req.userInfo, config)) return allow();
  if (deps.directory.defaultOrganization(req.userInfo.username)) return allow();
  return deny(
    `namespace policy organization: you (${req.userInfo.username}) have no default organization, so a new project could not be assigned to one; ask an admin to set your default organization (TenantUser), or create a Namespace with label ${config.organizationLabel}`,
  );
}

export function mutateProject(deps: ProjectPolicyDeps, req: AdmissionRequest): Verdict {
  if (req.operation !== 'CREATE') return allow();
  const config = deps.config();
  const project = req.object as KubeObject;
  if (project.metadata.labels?.[config.organizationLabel]) return allow();
  const requester = deps.privileged(req.userInfo, config)
    ? project.metadata.annotations?.[requesterAnnotation]
    : req.userInfo.username;
  const organization = requester ? deps.directory.defaultOrganization(requester) : undefined;
  if (!organization) return allow();
  const mutated = {
    ...project,
    metadata: {
      ...project.metadata,
      labels: { ...project.metadata.labels, [config.organizationLabel]: organization },
    },
  };
  return mutate(project, mutated);
}
