// The live tenancy configuration: read from the TenancyConfig informer on every request, so an edit takes
// effect without a restart.
import { type TenancyConfig, TenancyConfigCrd } from '../../crds/tenancy.ts';
import type { Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import type { ConfigSource, EffectiveConfig } from '../model.ts';
import { effective } from '../policy/config.ts';

export function configSource(manager: Manager, namespace: string): ConfigSource {
  const informer: Informer<TenancyConfig> = manager.informer(TenancyConfigCrd.type);
  // Worked out once per version of the object (the cache replaces it on every change), not per request.
  let last: { source: TenancyConfig | undefined; config: EffectiveConfig } | undefined;
  return () => {
    const source = informer.get('cluster');
    if (last?.source !== source || !last)
      last = { source, config: Object.freeze(effective(source, namespace)) };
    return last.config;
  };
}
