// Installs CustomResourceDefinitions and waits until the API server serves them.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient } from './client.ts';
import { type KubeObject, Resources } from './resources.ts';

interface CrdStatus extends KubeObject {
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

/** Applies the CRDs (server-side apply) and resolves once every one is Established. */
export async function installCrds(
  client: KubeClient,
  crds: KubeObject[],
  fieldManager = 'tenantkit',
  timeoutMs = 60_000,
) {
  for (const crd of crds) {
    await client.apply(Resources.customResourceDefinitions, crd, { fieldManager, force: true });
  }
  const deadline = Date.now() + timeoutMs;
  for (const crd of crds) {
    const name = crd.metadata.name!;
    for (;;) {
      const current = await client.get<CrdStatus>(Resources.customResourceDefinitions, name);
      const conditions = current?.status?.conditions ?? [];
      if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) break;
      const bad = conditions.find((c) => c.type === 'NamesAccepted' && c.status === 'False');
      if (bad) throw new Error(`CRD ${name} names not accepted: ${bad.message}`);
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established after ${timeoutMs} ms`);
      await sleep(100);
    }
  }
}
