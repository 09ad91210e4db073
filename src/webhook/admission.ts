// AdmissionReview v1 types and the verdict helpers handlers return.
import type { UserInfo } from '../kube/access.ts';
import type { KubeObject } from '../kube/resources.ts';
import { diff, type JsonPatchOp } from './jsonpatch.ts';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface AdmissionRequest<T extends KubeObject = KubeObject> {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: Operation;
  userInfo: UserInfo;
  object?: T;
  oldObject?: T;
  dryRun?: boolean;
}

export interface AdmissionReview {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; reason?: string; message: string };
  warnings?: string[];
  patchType?: 'JSONPatch';
  patch?: string;
}

export interface Verdict {
  allowed: boolean;
  /** Shown to the client on denial: say what was wrong and how to fix it. */
  message?: string;
  code?: number;
  reason?: string;
  warnings?: string[];
  patch?: JsonPatchOp[];
}

export type AdmissionHandler = (request: AdmissionRequest, signal: AbortSignal) => Verdict | Promise<Verdict>;

export const allow = (warnings?: string[]): Verdict => ({
  allowed: true,
  ...(warnings?.length ? { warnings } : {}),
});

export const deny = (message: string, code = 403, reason = 'Forbidden'): Verdict => ({
  allowed: false,
  message,
  code,
  reason,
});

/** Allows the request with the patch that turns `original` into `mutated`. */
export const mutate = (original: unknown, mutated: unknown, warnings?: string[]): Verdict => {
  const patch = diff(original, mutated);
  return { ...allow(warnings), ...(patch.length ? { patch } : {}) };
};

export function toResponse(uid: string, verdict: Verdict): AdmissionResponse {
  const response: AdmissionResponse = { uid, allowed: verdict.allowed };
  if (!verdict.allowed) {
    response.status = {
      code: verdict.code ?? 403,
      reason: verdict.reason ?? 'Forbidden',
      message: verdict.message ?? 'denied',
    };
  }
  if (verdict.warnings?.length) response.warnings = verdict.warnings;
  if (verdict.allowed && verdict.patch?.length) {
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(JSON.stringify(verdict.patch)).toString('base64');
  }
  return response;
}
