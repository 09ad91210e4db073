// The stall tracker's rules on plain objects and a clock the test moves; with a real Velero stopped
// mid-queue in test/integration/backup-nab.test.ts.
import { describe, expect, it } from 'vitest';
import { backupQueuePhases, backupRunningPhases, QueueTracker } from '../../src/backup/controllers/queue.ts';
import {
  StallTracker,
  stalledMessage,
  stallOutcome,
  stuckMessage,
} from '../../src/backup/controllers/stall.ts';
import type { KubeObject } from '../../src/kube/resources.ts';

type Obj = KubeObject & { status?: Record<string, unknown> };

const backup = (
  name: string,
  created: number,
  status?: Record<string, unknown>,
  namespace = 'velero',
): Obj => ({
  metadata: {
    name,
    namespace,
    creationTimestamp: `2026-01-01T00:00:0${created}Z`,
    annotations: { origin: `tenant/${name}` },
  },
  ...(status ? { status } : {}),
});

const phases = { queued: backupQueuePhases, running: backupRunningPhases };

function world(warnAfterMs = 10_000) {
  let now = 1_000_000;
  const queue = new QueueTracker({
    queuePhases: backupQueuePhases,
    originOf: (o) => o.metadata.annotations?.origin,
  });
  const stalls = new StallTracker({
    kind: 'Backup',
    queue,
    warnAfterMs: () => warnAfterMs,
    ownerOf: (o) => o.metadata.labels?.['velero.io/backup-name'],
    now: () => now,
  });
  const q = queue.handlers();
  const s = stalls.queueHandlers(phases);
  const ops = stalls.operationHandlers();
  return {
    stalls,
    tick: (ms: number) => {
      now += ms;
    },
    add: (o: Obj) => {
      q.onAdd!(o);
      s.onAdd!(o);
    },
    update: (p: Obj, o: Obj) => {
      q.onUpdate!(p, o);
      s.onUpdate!(p, o);
    },
    remove: (o: Obj) => {
      q.onDelete!(o);
      s.onDelete!(o);
    },
    ops,
  };
}

describe('StallTracker', () => {
  it('says a queue with unfinished Backups is stalled once nothing moved for the warning time', () => {
    const w = world();
    const running = backup('a', 1, { phase: 'InProgress', progress: { itemsBackedUp: 1 } });
    w.add(running);
    w.add(backup('b', 2, { phase: 'Queued' }));
    w.tick(4_000);
    expect(w.stalls.state('velero')).toEqual({ checkInMs: 6_000 });
    // Progress of the running one is a move: the clock starts again.
    const further = backup('a', 1, { phase: 'InProgress', progress: { itemsBackedUp: 2 } });
    w.update(running, further);
    w.tick(9_000);
    expect(w.stalls.state('velero')).toEqual({ checkInMs: 1_000 });
    // A Backup Velero writes without changing its status (a label, say) is no move.
    w.update(further, { ...further, metadata: { ...further.metadata, labels: { x: 'y' } } });
    w.tick(1_000);
    expect(w.stalls.state('velero')).toEqual({ stalledAfterMs: 10_000 });
    expect(w.stalls.stillFor('velero')).toBe(10_000);
    expect(w.stalls.drain()).toEqual([]);
  });

  it('counts a volume operation of any backup as a move, and reports the stalled queue’s NABs when it moves again', () => {
    const w = world();
    w.add(backup('a', 1, { phase: 'InProgress' }));
    w.add(backup('b', 2, { phase: 'New' }));
    w.tick(11_000);
    expect(w.stalls.state('velero')).toEqual({ stalledAfterMs: 10_000 });
    const pvb = { metadata: { name: 'a-x', namespace: 'velero' }, status: { phase: 'Accepted' } } as Obj;
    w.ops.onUpdate!(pvb, pvb);
    expect(w.stalls.state('velero')).toEqual({ stalledAfterMs: 10_000 });
    w.ops.onUpdate!(pvb, { ...pvb, status: { phase: 'InProgress' } });
    expect(w.stalls.state('velero')).toEqual({ checkInMs: 10_000 });
    expect(w.stalls.drain().sort()).toEqual(['tenant/a', 'tenant/b']);
    expect(w.stalls.drain()).toEqual([]);
  });

  it('does not count new or waiting Backups as moves: tenants creating backups cannot hide a stuck one', () => {
    const w = world();
    w.add(backup('a', 1, { phase: 'InProgress' }));
    w.tick(6_000);
    // Velero's queue controller marks a new one Queued and rewrites positions; the running one is stuck.
    const b = backup('b', 2);
    w.add(b);
    w.update(b, backup('b', 2, { phase: 'Queued', queuePosition: 1 }));
    w.add(backup('c', 3, { phase: 'New' }));
    w.remove(backup('c', 3, { phase: 'New' }));
    w.tick(4_000);
    expect(w.stalls.state('velero')).toEqual({ stalledAfterMs: 10_000 });
    // The running one removed (an admin's delete) is a move; so is the next one starting.
    w.remove(backup('a', 1, { phase: 'InProgress' }));
    expect(w.stalls.state('velero')).toEqual({ checkInMs: 10_000 });
    expect(w.stalls.drain()).toEqual(['tenant/b']);
  });

  it('starts the clock of a queue when its first Backup comes, not before', () => {
    const w = world();
    w.tick(60_000);
    w.add(backup('a', 1, { phase: 'New' }));
    expect(w.stalls.state('velero')).toEqual({ checkInMs: 10_000 });
    w.tick(10_000);
    // Velero does not run at all: nothing starts.
    expect(w.stalls.state('velero')).toEqual({ stalledAfterMs: 10_000 });
  });

  it('never calls an empty queue stalled, nor any queue when the warning is off', () => {
    const w = world();
    const done = backup('a', 1, { phase: 'Completed' });
    w.add(done);
    w.tick(60_000);
    expect(w.stalls.state('velero')).toBeUndefined();
    expect(w.stalls.stillFor('velero')).toBe(0);
    const off = world(0);
    off.add(backup('a', 1, { phase: 'InProgress' }));
    off.tick(60_000);
    expect(off.stalls.state('velero')).toBeUndefined();
    // The gauge still shows how long it has been still.
    expect(off.stalls.stillFor('velero')).toBe(60_000);
  });

  it('takes the clock of a queue it found already there from what Velero recorded, and keeps a move it saw', async () => {
    let now = 1_000_000;
    const recorded = new Map([
      ['velero', now - 20_000],
      ['other', now - 20_000],
    ]);
    const queue = new QueueTracker({
      queuePhases: backupQueuePhases,
      originOf: (o) => o.metadata.annotations?.origin,
    });
    const stalls = new StallTracker({
      kind: 'Backup',
      queue,
      warnAfterMs: () => 10_000,
      recorded: async (ns) => recorded.get(ns),
      now: () => now,
    });
    let live = false;
    const q = queue.handlers();
    const s = stalls.queueHandlers(phases, () => live);
    const add = (o: Obj) => {
      q.onAdd!(o);
      s.onAdd!(o);
    };
    // What the informer hands over while it first lists is no move: a restarted controller.
    add(backup('a', 1, { phase: 'InProgress' }));
    add(backup('b', 2, { phase: 'InProgress' }, 'other'));
    live = true;
    const before = backup('b', 2, { phase: 'InProgress' }, 'other');
    now += 1_000;
    // A move it sees itself is later than anything recorded before it.
    q.onUpdate!(before, backup('b', 2, { phase: 'InProgress', progress: { itemsBackedUp: 1 } }, 'other'));
    s.onUpdate!(before, backup('b', 2, { phase: 'InProgress', progress: { itemsBackedUp: 1 } }, 'other'));
    await stalls.recall('velero');
    await stalls.recall('other');
    expect(stalls.stillFor('velero')).toBe(21_000);
    expect(stalls.state('velero')).toEqual({ stalledAfterMs: 10_000 });
    expect(stalls.state('other')).toEqual({ checkInMs: 10_000 });
    // Read once: a later recall changes nothing.
    recorded.set('velero', now);
    await stalls.recall('velero');
    expect(stalls.stillFor('velero')).toBe(21_000);
  });

  it('with backups run side by side (--concurrent-backups 2), says the one that alone does not move is stuck while the queue moves', async () => {
    const w = world();
    const a = backup('a', 1, { phase: 'InProgress' });
    w.add(a);
    let b = backup('b', 2, { phase: 'InProgress', progress: { itemsBackedUp: 0 } });
    w.add(b);
    w.add(backup('c', 3, { phase: 'Queued' }));
    // b goes on, item after item and through its volume; a never changes again.
    const pvb = (phase: string) =>
      ({
        metadata: { name: 'b-x', namespace: 'velero', labels: { 'velero.io/backup-name': 'b' } },
        status: { phase },
      }) as Obj;
    for (let i = 1; i <= 4; i++) {
      w.tick(3_000);
      const next = backup('b', 2, { phase: 'InProgress', progress: { itemsBackedUp: i } });
      w.update(b, next);
      b = next;
    }
    w.ops.onUpdate!(pvb('Accepted'), pvb('InProgress'));
    expect(w.stalls.state('velero')).toEqual({ checkInMs: 10_000 });
    expect(w.stalls.state('velero', 'a')).toEqual({ stalledAfterMs: 10_000, alone: true });
    expect(w.stalls.state('velero', 'b')).toEqual({ checkInMs: 10_000 });
    // A waiting one is not held by a alone: the other worker takes it.
    expect(w.stalls.state('velero', 'c')).toEqual({ checkInMs: 10_000 });
    expect(w.stalls.runningStillness()).toEqual([['velero', 12]]);
    const outcome = await stallOutcome(w.stalls, {
      name: 'a',
      phase: 'InProgress',
      unfinished: true,
      position: 0,
      veleroNamespace: 'velero',
      conditions: undefined,
    });
    expect(outcome.stalled?.reason).toBe('VeleroBackupStuck');
    expect(outcome.event?.reason).toBe('VeleroBackupStuck');
    expect(w.stalls.drain()).toEqual([]);
    // One Event per diagnosis: none while the NAB already says so, one when it said the queue stalled.
    const said = (reason: string) => ({
      name: 'a',
      phase: 'InProgress',
      unfinished: true,
      position: 0,
      veleroNamespace: 'velero',
      conditions: [{ type: 'Queued', status: 'True' as const, reason, message: '', lastTransitionTime: '' }],
    });
    expect((await stallOutcome(w.stalls, said('VeleroBackupStuck'))).event).toBeUndefined();
    const changed = await stallOutcome(w.stalls, said('VeleroQueueStalled'));
    expect(changed.event).toMatchObject({ type: 'Warning', reason: 'VeleroBackupStuck' });
    expect(changed.event?.message).toMatch(/^Velero Backup a is InProgress, but neither it nor/);
    // Then the whole queue stands still: the diagnosis changes back, with its own Event.
    w.tick(10_000);
    const stalled = await stallOutcome(w.stalls, said('VeleroBackupStuck'));
    expect(stalled.stalled?.reason).toBe('VeleroQueueStalled');
    expect(stalled.event).toMatchObject({ type: 'Warning', reason: 'VeleroQueueStalled' });
    expect((await stallOutcome(w.stalls, said('VeleroQueueStalled'))).event).toBeUndefined();
    // a's own volume operation moves: a is no longer stuck, and the NABs of the stalled queue are told.
    const own = {
      metadata: { name: 'a-x', namespace: 'velero', labels: { 'velero.io/backup-name': 'a' } },
      status: { phase: 'Accepted' },
    } as Obj;
    w.ops.onUpdate!(own, { ...own, status: { phase: 'InProgress' } });
    expect(w.stalls.state('velero', 'a')).toEqual({ checkInMs: 10_000 });
    expect(w.stalls.drain()).toEqual(['tenant/a', 'tenant/b', 'tenant/c']);
    // Finished, it has no clock left.
    w.update(a, backup('a', 1, { phase: 'Completed' }));
    expect(w.stalls.runningStillFor('velero', 'a')).toBeUndefined();
  });

  it('takes the clock of a backup found running from its queue’s recorded clock, which later moves of others do not reset', async () => {
    let now = 1_000_000;
    const queue = new QueueTracker({
      queuePhases: backupQueuePhases,
      originOf: (o) => o.metadata.annotations?.origin,
    });
    const stalls = new StallTracker({
      kind: 'Backup',
      queue,
      warnAfterMs: () => 10_000,
      recorded: async () => now - 4_000,
      now: () => now,
    });
    let live = false;
    const q = queue.handlers();
    const s = stalls.queueHandlers(phases, () => live);
    const add = (o: Obj) => {
      q.onAdd!(o);
      s.onAdd!(o);
    };
    add(backup('a', 1, { phase: 'InProgress' }));
    let b = backup('b', 2, { phase: 'InProgress', progress: { itemsBackedUp: 0 } });
    add(b);
    live = true;
    await stalls.recall('velero');
    for (let i = 1; i <= 3; i++) {
      now += 2_000;
      const next = backup('b', 2, { phase: 'InProgress', progress: { itemsBackedUp: i } });
      q.onUpdate!(b, next);
      s.onUpdate!(b, next);
      b = next;
    }
    expect(stalls.runningStillFor('velero', 'a')).toBe(10_000);
    expect(stalls.state('velero', 'a')).toEqual({ stalledAfterMs: 10_000, alone: true });
    expect(stalls.state('velero', 'b')).toEqual({ checkInMs: 10_000 });
  });

  it('keeps each Velero namespace apart', () => {
    const w = world();
    w.add(backup('a', 1, { phase: 'InProgress' }, 'velero'));
    w.tick(8_000);
    w.add(backup('b', 2, { phase: 'InProgress' }, 'velero-2'));
    w.tick(3_000);
    expect(w.stalls.state('velero')).toEqual({ stalledAfterMs: 10_000 });
    expect(w.stalls.state('velero-2')).toEqual({ checkInMs: 7_000 });
  });
});

describe('the stalled message', () => {
  const restore = {
    name: 'shop-undo-u1',
    phase: 'InProgress',
    unfinished: true,
    position: 0,
    veleroNamespace: 'velero',
    conditions: undefined,
  };

  it('says of a backup stuck beside others that it holds one of the backups Velero runs at once', () => {
    const text = stuckMessage('Backup', { ...restore, name: 'nac-1' }, 600_000, ['PodVolumeBackup']);
    expect(text).toMatch(
      /^Velero Backup nac-1 is InProgress, but neither it nor any of its volume operations has changed for over 10m/,
    );
    expect(text).toContain('holding one of the backups Velero runs at once');
    expect(text).toContain('kubectl -n velero logs deploy/velero | grep nac-1');
    expect(text).toContain('A PodVolumeBackup in velero is Accepted but not started');
  });

  it('names what an admin can do for a volume operation the node-agent took and never started, and not whose it is', () => {
    // What bench:faults found: the node-agent SIGKILLed while a PodVolumeRestore was Accepted; restarted,
    // it left that one Accepted for its 30-minute prepare timeout, and every later restore waited: once
    // although its data mover Pod ran (annotating that Pod started it at once), once with no Pod made.
    const plain = stalledMessage('Restore', restore, 60_000);
    expect(plain).not.toContain('Accepted');
    const hinted = stalledMessage('Restore', restore, 60_000, ['PodVolumeRestore', 'DataDownload']);
    expect(hinted.startsWith(plain)).toBe(true);
    expect(hinted).toContain('A DataDownload or PodVolumeRestore in velero is Accepted but not started');
    expect(hinted).toContain('kubectl -n velero get datadownloads,podvolumerestores | grep Accepted');
    expect(hinted).toContain('kubectl -n velero annotate pod <its name> tenantkit.io/resume=1 --overwrite');
    expect(hinted).toContain('(kubectl -n velero rollout restart deploy/velero) fails the stuck restore');
  });
});
