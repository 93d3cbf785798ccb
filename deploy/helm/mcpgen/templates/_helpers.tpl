{{/* The chart's name, cut to what a label takes. */}}
{{- define "mcpgen.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name, the name of every object. */}}
{{- define "mcpgen.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mcpgen.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcpgen.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "mcpgen.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "mcpgen.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
mcpgen.dev/workspace: {{ .Values.workspace | quote }}
{{- end }}

{{- define "mcpgen.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mcpgen.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "mcpgen.configMapName" -}}
{{- default (include "mcpgen.fullname" .) .Values.existingConfigMap }}
{{- end }}

{{/* The Secret given to the pod as its environment, if any. */}}
{{- define "mcpgen.secretName" -}}
{{- if .Values.secret.existingSecret }}
{{- .Values.secret.existingSecret }}
{{- else if .Values.secret.create }}
{{- include "mcpgen.fullname" . }}
{{- end }}
{{- end }}
