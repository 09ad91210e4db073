// Which annotation keys are Velero's hooks, which writes add them, and how the webhook is registered
// (the API server calls it for the control plane's writes too, and only for objects with such keys).
import { describe, expect, it } from 'vitest';
import { podHookWebhook } from '../../src/backup/admission/webhooks.ts';
import { addedHookKeys, hookKeysAt, isVeleroHookKey } from '../../src/backup/policy/pod-hooks.ts';
import type { NonAdminBackupConfig } from '../../src/crds/backup.ts';
import type { Informer } from '../../src/kube/informer.ts';
import { webhookConfigurations } from '../../src/webhook/registration.ts';

describe('isVeleroHookKey', () => {
  it("knows each of Velero's hook prefixes and nothing that only looks like one", () => {
    for (const key of [
      'hook.backup.velero.io/command',
      'pre.hook.backup.velero.io/timeout',
      'post.hook.backup.velero.io/container',
      'post.hook.restore.velero.io/exec-timeout',
      'init.hook.restore.velero.io/container-image',
    ]) {
      expect(isVeleroHookKey(key), key).toBe(true);
    }
    for (const key of [
      'my.hook.backup.velero.io/command',
      'backup.velero.io/backup-volumes',
      'hook.backup.velero.io',
      'example.com/pre.hook.backup.velero.io',
      'command',
    ]) {
      expect(isVeleroHookKey(key), key).toBe(false);
    }
  });
});

describe('addedHookKeys', () => {
  const hooks = { 'pre.hook.backup.velero.io/command': '["sleep","9"]', team: 'a' };
  it('counts every hook key on create and only new or changed ones on update', () => {
    expect(addedHookKeys(hooks, undefined)).toEqual(['pre.hook.backup.velero.io/command']);
    expect(addedHookKeys({ ...hooks, team: 'b' }, hooks)).toEqual([]);
    expect(addedHookKeys({ ...hooks, 'pre.hook.backup.velero.io/command': '["sleep","99"]' }, hooks)).toEqual(
      ['pre.hook.backup.velero.io/command'],
    );
    expect(addedHookKeys({ team: 'a' }, hooks)).toEqual([]);
    expect(addedHookKeys(undefined, undefined)).toEqual([]);
  });
});

describe('the pod-hooks webhook', () => {
  it('is guarded at every step of its path', () => {
    expect(hookKeysAt(['metadata', 'annotations'])).toBe(
      "(has(object.metadata) && has(object.metadata.annotations) && object.metadata.annotations.exists(k, k.contains('hook.backup.velero.io/') || k.contains('hook.restore.velero.io/')))",
    );
  });

  it("reviews the control plane's writes too, fails closed, and only for objects with hook keys", () => {
    const definition = podHookWebhook({} as Informer<NonAdminBackupConfig>);
    const { validating } = webhookConfigurations('t', [definition], { url: 'https://w' }, 'ca');
    const entry = (
      validating as unknown as { webhooks: { name: string; [k: string]: unknown }[] }
    ).webhooks.find((w) => w.name === 'pod-hooks.tenantkit.io');
    expect(entry?.failurePolicy).toBe('Fail');
    expect(((entry?.matchConditions ?? []) as { name: string }[]).map((c) => c.name)).toEqual([
      'carries-velero-hook-annotations',
    ]);
    expect(entry?.namespaceSelector).toEqual({
      matchExpressions: [
        {
          key: 'kubernetes.io/metadata.name',
          operator: 'NotIn',
          values: ['kube-system', 'kube-public', 'kube-node-lease'],
        },
      ],
    });
  });
});
