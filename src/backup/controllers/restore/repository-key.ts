// Velero encrypts every kopia repository (file-system backups of volumes) with the password in Secret
// `velero-repo-credentials` of its namespace, and makes that Secret itself, with a password built into
// Velero and the same in every installation, when it is missing. A repository of a tenant's volumes that
// sits in a bucket the tenant owns (their own storage location) can then be rewritten by the tenant into
// any snapshot Velero will open; a file-system restore from it runs as root on the node and writes what
// the snapshot says, symlinks included. So a restore from a tenant's own location waits while the
// password is missing or the built-in one; the admin's own locations (which tenants cannot write) are not
// affected. Read on every such restore (no cache: rare, and a fix applies at once).

import type { KubeClient } from '../../../kube/client.ts';
import { type KubeObject, Resources } from '../../../kube/resources.ts';

export const RepositoryCredentialsSecret = 'velero-repo-credentials';
export const RepositoryPasswordKey = 'repository-password';
/** Velero v1.18's built-in password (pkg/repository/keys): public, so no secret at all. */
export const BuiltInRepositoryPassword = 'static-passw0rd';
export const RepositoryPasswordBuiltIn = 'RepositoryPasswordBuiltIn';

interface Secret extends KubeObject {
  data?: Record<string, string>;
}

/** Why a restore from a tenant's own location must wait, or undefined when the password is the admin's. */
export async function weakRepositoryPassword(
  client: KubeClient,
  veleroNamespace: string,
): Promise<string | undefined> {
  const secret = await client.get<Secret>(Resources.secrets, RepositoryCredentialsSecret, veleroNamespace);
  const encoded = secret?.data?.[RepositoryPasswordKey];
  const password = encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString();
  if (password && password !== BuiltInRepositoryPassword) return undefined;
  const state =
    password === undefined
      ? `has no Secret ${RepositoryCredentialsSecret} (key ${RepositoryPasswordKey}), so it would use the password built into Velero`
      : 'uses the password built into Velero';
  return `Velero in namespace ${veleroNamespace} ${state} for its volume data repositories; with it, whoever owns a storage location's bucket can forge what a restore writes, so restores from your own storage location wait until a cluster admin sets a password of their own (docs/backup.md, "Velero's repository password")`;
}
