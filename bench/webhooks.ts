// A release's webhook configurations switched off and on again, for with/without comparisons: off deletes
// them (kube-apiserver stops calling at once), on re-creates them from the copies read at the start.
import type { KubeClient } from '../src/kube/client.ts';
import { type KubeObject, Resources, type ResourceType } from '../src/kube/resources.ts';

export interface WebhookSwitch {
  /** The configurations as they were when the switch was made (the chart names both after the release). */
  saved: [ResourceType, KubeObject][];
  set(on: boolean): Promise<void>;
}

export async function webhookSwitch(admin: KubeClient, release: string): Promise<WebhookSwitch> {
  const saved: [ResourceType, KubeObject][] = [];
  for (const type of [Resources.validatingWebhookConfigurations, Resources.mutatingWebhookConfigurations]) {
    const hook = await admin.get<KubeObject>(type, release);
    if (hook) saved.push([type, hook]);
  }
  let hooked = true;
  return {
    saved,
    async set(on) {
      if (on === hooked) return;
      for (const [type, hook] of saved) {
        const { name, labels, annotations } = hook.metadata;
        if (on) await admin.create(type, { ...hook, metadata: { name, labels, annotations } } as KubeObject);
        else await admin.delete(type, name!);
      }
      hooked = on;
      // kube-apiserver picks the change up from its own watch (milliseconds); leave it a moment more.
      await new Promise((r) => setTimeout(r, 1000));
    },
  };
}
