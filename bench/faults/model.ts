// The fault suite's contract: the world a fault is injected into (tenantkit installed by its chart on the
// local node, one tenant working through her own credentials), a fault, and what one round of it counts.
// bench/faults.ts runs every fault many times; the e2e chart test runs a slice of the same faults.
import type { KubeClient } from '../../src/kube/client.ts';

/**
 * Where a volume restore fault kills: a PodVolumeRestore's phase reached, or `Pod made`: Accepted and its
 * data mover Pod made (the node-agent starts the operation only on that Pod's update to Running, which a
 * restarted node-agent never sees).
 */
export const restoreCrashPoints = ['New', 'Accepted', 'Pod made', 'InProgress'] as const;
export type RestoreCrashPoint = (typeof restoreCrashPoints)[number];

/** How the suite reaches what the tenant reaches: her API client, her search token, the release's Pods. */
export interface World {
  admin: KubeClient;
  /** The tenant: a member of `organization`, admin of `home` through it (the organization's binding). */
  tenant: KubeClient;
  organization: string;
  organizationLabel: string;
  /** The tenant's namespace: her NonAdminBackups, and the ConfigMaps her searches must find. */
  home: string;
  /** The ConfigMaps in `home` (their names): what each of her searches must answer, exactly. */
  known: string[];
  /**
   * A Completed NonAdminBackup of hers (her ConfigMaps) that her NonAdminRestores restore from, into
   * `home`, where every object of it already is: each restore then changes nothing that is searched.
   * Without it she does not restore.
   */
  baseBackup?: string;
  /**
   * A Completed NonAdminBackup of her store (its Deployment, ReplicaSet, Pod and claim; the claim's files
   * copied by Velero's node-agent) that the volume restore faults restore after she deleted the store.
   */
  volumeBackup?: string;
  /** The checksum lines her store printed before the first fault: what every restore must bring back. */
  volumeSums?: string;
  /**
   * An admin's ScopeTemplate (one role) that her ScopeInstances bind in `home`: her scope changes. Without
   * it she makes none.
   */
  scopeTemplate?: string;
  /** Where the volume restore faults may kill (default: each of `restoreCrashPoints`, picked per round). */
  restoreCrashPoints?: readonly RestoreCrashPoint[];
  /** The release (`helm install <release>`) and its namespace. */
  release: string;
  namespace: string;
  veleroNamespace: string;
  /** Stops etcd and kube-apiserver and starts them again on the same data (when the run owns them). */
  restartControlPlane?(): Promise<void>;
  /** Kills kubelet, kube-proxy, containerd and every container, then starts the node again (when the run owns it). */
  restartNode?(): Promise<void>;
  /**
   * Fills the disk of search's database (the node's volumes) or of Velero's object store to its last
   * byte; resolves with what it took and how to give it back (when the run owns those disks).
   */
  fillDisk?(what: 'database' | 'store'): Promise<{ bytes: number; release(): Promise<void> }>;
  /** The keys in Velero's bucket under `prefix` (when the run can read the bucket). */
  bucket?(prefix: string): Promise<string[]>;
  /** The tenant's search: the status and body of a GraphQL query posted with her token to one API Pod. */
  search(query: string): Promise<{ status: number; body: string }>;
  say(line: string): void;
}

/** A deterministic source of randomness: the same seed replays the same choices and moments. */
export interface Rng {
  /** In [0, 1). */
  next(): number;
  /** An integer in [min, max]. */
  between(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
}

/** One injection's handle: what was done, and how to tell (and make) the faulted part back. */
export interface Injected {
  /** What was hit, e.g. "SIGKILL bench-controllers-5f9c…/controllers (the leader)". */
  what: string;
  /** Resolves once the faulted part works again (it is back, and a probe through it succeeds). */
  recovered(): Promise<void>;
  /**
   * The end of what the fault itself had the tenant do (a restore of her volume data it hit), checked
   * once the round's work was: called after the round's checks, before its clean-up.
   */
  settled?(): Promise<FaultWork>;
}

/** What a fault had the tenant do, and how it ended. */
export interface FaultWork {
  /** Her requests (NonAdminRestores in `home`), the retries too: the round's clean-up deletes them. */
  restores: string[];
  wrong: string[];
  failedWithReason: number;
  retriesCompleted: number;
  /** What she read in their status, one line each. */
  seen: string[];
}

export interface Fault {
  name: string;
  /** Cheap faults (a Pod killed) run 100 rounds by default, the others 20. */
  cheap: boolean;
  /** The component's guarantee under this fault, in one sentence (docs/faults.md). */
  guarantee: string;
  /** `round` prefixes every name the injection makes (unique per run). */
  inject(world: World, rng: Rng, round: string): Promise<Injected>;
  /** The tenant's NABs back up her volume's files too (Velero's node-agent), not her objects alone. */
  volumeBackups?: boolean;
  /**
   * A backup or restore this fault hits may end Failed, with Velero's reason in the NAB's (NAR's)
   * status; the tenant's retry must then complete. Her NABs are removed with their data
   * (spec.deleteBackup), and none may stay.
   */
  backupsMayFail?: boolean;
  /**
   * Variables the controllers need for this fault (a failpoint that holds a crash point open), set on
   * them before the first fault when this fault is chosen.
   */
  controllersEnv?: Record<string, string>;
}

/** A tenant operation, and how it ended. */
export interface Operation {
  kind: 'namespace' | 'backup' | 'restore' | 'schedule' | 'scope' | 'search' | 'hook-pod';
  name: string;
  /** ms since the round started. */
  startedAt: number;
  /** How long the request took to be answered, in ms (a request kube-apiserver holds shows here). */
  tookMs?: number;
  /** The answer to the request itself: 'ok', or the HTTP status and message of a refusal. */
  answer: { ok: true } | { ok: false; status: number; message: string };
  /** Filled in by the round's check: undefined when the end state is right, else what is wrong. */
  wrong?: string;
}

/** What one round found, beyond each operation's outcome. */
export interface RoundFindings {
  duplicates: string[];
  orphans: string[];
  lost: string[];
}

/** One fault's line of the table: every round of it summed. */
export interface FaultRow {
  fault: string;
  guarantee: string;
  injected: number;
  /** Rounds whose work was checked and cleaned up to the end (a run stopped midway counts the others too). */
  roundsChecked: number;
  operations: number;
  /** Operations in flight when the fault hit (started before, not yet answered). */
  inFlight: number;
  wrong: string[];
  duplicates: string[];
  orphans: string[];
  lost: string[];
  /** Tenant requests answered 500 by the API server or a tenantkit API, but for those counted next. */
  serverErrors: number;
  /**
   * Tenant requests that kube-apiserver answered 500 because its call to a tenantkit webhook failed
   * ("failed calling webhook"): refused, as failurePolicy Fail wants, but with kube-apiserver's status.
   */
  webhookCallErrors: number;
  /** Tenant requests answered after more than a second, and the slowest answer (ms) with its kind. */
  slowAnswers: number;
  slowest?: { ms: number; kind: string; ok: boolean };
  /**
   * Backups and restores that ended Failed with Velero's reason (where the fault allows it), and their
   * retries that completed.
   */
  failedWithReason: number;
  retriesCompleted: number;
  recoveryMs: number[];
  /** Distinct things the tenant saw (refusals, statuses), with how often. */
  seen: Map<string, number>;
}
