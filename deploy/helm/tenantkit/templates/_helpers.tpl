{{- define "tenantkit.labels" -}}
app.kubernetes.io/name: tenantkit
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "tenantkit.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end }}

{{- define "tenantkit.podSecurity" -}}
securityContext:
  runAsNonRoot: true
  seccompProfile: { type: RuntimeDefault }
{{- end }}

{{- define "tenantkit.containerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities: { drop: ["ALL"] }
{{- end }}

{{- define "tenantkit.webhookTlsMode" -}}
{{- $mode := .Values.webhooks.tls.mode -}}
{{- if not (has $mode (list "self" "cert-manager" "secret")) -}}
{{- fail (printf "webhooks.tls.mode is %q; use self (tenantkit makes and rotates its certificate), cert-manager or secret" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end }}

{{/* The webhook configurations' annotations: cert-manager's CA injection, in that mode only. */}}
{{- define "tenantkit.webhookAnnotations" -}}
{{- if eq (include "tenantkit.webhookTlsMode" .) "cert-manager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s-webhook-tls" .Release.Namespace .Release.Name | quote }}
{{- end }}
{{- end }}

{{/*
The caBundle of each webhook, only where the admin gives it. In the other modes the chart renders none:
a rendered caBundle would make every `helm upgrade` reset the one tenantkit or cert-manager injected.
*/}}
{{- define "tenantkit.webhookCaBundle" -}}
{{- if eq (include "tenantkit.webhookTlsMode" .) "secret" }}
caBundle: {{ required "webhooks.tls.caBundle (the CA of Secret <release>-webhook-tls, PEM, base64) is required when webhooks.tls.mode is secret" .Values.webhooks.tls.caBundle | quote }}
{{- end }}
{{- end }}

{{/* Where search reads its database URL: the bundled database's Secret or the one the admin names. */}}
{{- define "tenantkit.searchDatabaseUrl" -}}
{{- if .Values.search.database.bundled.enabled -}}
secretKeyRef: { name: {{ .Release.Name }}-search-db, key: url }
{{- else -}}
secretKeyRef: {{ toYaml .Values.search.database.urlSecret | nindent 2 }}
{{- end }}
{{- end }}

{{- define "tenantkit.searchTlsSelf" -}}
{{- $mode := .Values.search.tls.mode -}}
{{- if not (has $mode (list "self" "secret")) -}}
{{- fail (printf "search.tls.mode is %q; use self (tenantkit makes and rotates its certificate) or secret" $mode) -}}
{{- end -}}
{{- if eq $mode "self" }}true{{ end -}}
{{- end }}

{{/*
A component's PodDisruptionBudget: a drain or an autoscaler takes one of its Pods at a time (with two
replicas one keeps serving; with one, the drain still goes on, where minAvailable: 1 would block it).
Call with (dict "root" . "component" "webhooks").
*/}}
{{- define "tenantkit.pdb" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .root.Release.Name }}-{{ .component }}
  namespace: {{ .root.Release.Namespace }}
  labels: {{- include "tenantkit.labels" .root | nindent 4 }}
spec:
  maxUnavailable: 1
  selector:
    matchLabels: { app.kubernetes.io/instance: {{ .root.Release.Name }}, app.kubernetes.io/component: {{ .component }} }
{{- end }}
