// Where tenantkit keeps what it builds once and reuses (control plane, Velero, images, the console page):
// $TENANTKIT_CACHE_DIR, else $XDG_CACHE_HOME/tenantkit or ~/.cache/tenantkit.
import { homedir } from 'node:os';
import { join } from 'node:path';

export function cacheDir(): string {
  return (
    process.env.TENANTKIT_CACHE_DIR ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'tenantkit')
  );
}
