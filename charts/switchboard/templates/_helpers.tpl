{{- define "switchboard.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "switchboard.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "switchboard.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "switchboard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "switchboard.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "switchboard.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}

{{/* The Secret and key holding the database URL. */}}
{{- define "switchboard.postgresSecret" -}}
{{- if .Values.postgres.existingSecret.name -}}
name: {{ .Values.postgres.existingSecret.name }}
key: {{ .Values.postgres.existingSecret.key }}
{{- else if .Values.postgres.url -}}
name: {{ include "switchboard.fullname" . }}
key: database-url
{{- else -}}
{{- fail "set postgres.url or postgres.existingSecret.name: Switchboard needs Postgres" -}}
{{- end -}}
{{- end -}}

{{- define "switchboard.redisSecret" -}}
{{- if .Values.redis.existingSecret.name -}}
name: {{ .Values.redis.existingSecret.name }}
key: {{ .Values.redis.existingSecret.key }}
{{- else if .Values.redis.url -}}
name: {{ include "switchboard.fullname" . }}
key: redis-url
{{- end -}}
{{- end -}}

{{/* Environment shared by every role and the migrate init container. */}}
{{- define "switchboard.env" -}}
{{- with .Values.publicURL }}
- name: SWITCHBOARD_PUBLIC_URL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.functions }}
- name: SWITCHBOARD_FUNCTION_RUNTIME
  value: {{ .runtime | default "local" | quote }}
{{- with .image }}
- name: SWITCHBOARD_FUNCTION_IMAGE
  value: {{ . | quote }}
{{- end }}
{{- with .npmRegistry }}
- name: SWITCHBOARD_NPM_REGISTRY
  value: {{ . | quote }}
{{- end }}
{{- with .gitBaseURL }}
- name: SWITCHBOARD_GIT_BASE_URL
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- with .Values.email.dnsServer }}
- name: SWITCHBOARD_DNS_SERVER
  value: {{ . | quote }}
{{- end }}
{{- with .Values.email.inboundHost }}
- name: SWITCHBOARD_EMAIL_INBOUND_HOST
  value: {{ . | quote }}
{{- end }}
{{- with .Values.email.spfInclude }}
- name: SWITCHBOARD_EMAIL_SPF_INCLUDE
  value: {{ . | quote }}
{{- end }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      {{- include "switchboard.postgresSecret" . | nindent 6 }}
{{- with include "switchboard.redisSecret" . }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      {{- . | nindent 6 }}
{{- end }}
{{- end -}}

{{/*
A Deployment of one role. Call with (dict "root" $ "role" "api" "replicas" 2 "resources" {...} "args" [...]).
*/}}
{{- define "switchboard.deployment" -}}
{{- $root := .root -}}
{{- $webhooks := and (or (eq .role "manager") (eq .role "all")) $root.Values.admissionWebhooks.enabled -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "switchboard.fullname" $root }}-{{ .role }}
  labels:
    {{- include "switchboard.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .role }}
spec:
  replicas: {{ .replicas }}
  selector:
    matchLabels:
      {{- include "switchboard.selectorLabels" $root | nindent 6 }}
      app.kubernetes.io/component: {{ .role }}
  template:
    metadata:
      labels:
        {{- include "switchboard.selectorLabels" $root | nindent 8 }}
        app.kubernetes.io/component: {{ .role }}
        {{- if .serves }}
        switchboard.io/serves-api: "true"
        {{- end }}
        {{- if $webhooks }}
        switchboard.io/serves-webhooks: "true"
        {{- end }}
      annotations:
        checksum/secret: {{ include (print $root.Template.BasePath "/secret.yaml") $root | sha256sum }}
        {{- with $root.Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "switchboard.serviceAccountName" $root }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: 45
      {{- if $root.Values.migrate.enabled }}
      initContainers:
        - name: migrate
          image: {{ include "switchboard.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args: ["migrate", "--log-format={{ $root.Values.logFormat }}"]
          env:
            {{- include "switchboard.env" $root | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
      {{- end }}
      containers:
        - name: switchboard
          image: {{ include "switchboard.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args:
            - {{ .role }}
            - --log-format={{ $root.Values.logFormat }}
            - --log-level={{ $root.Values.logLevel }}
            {{- if $root.Values.allowProjectProviderEndpoints }}
            - --allow-project-provider-endpoints
            {{- end }}
            {{- range .args }}
            - {{ . }}
            {{- end }}
            {{- if $webhooks }}
            - --webhook-cert-dir=/var/run/switchboard/webhook-certs
            {{- end }}
          env:
            {{- include "switchboard.env" $root | nindent 12 }}
            - name: POD_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            # npm keeps its cache and logs under HOME; the writable folder is /tmp.
            - name: HOME
              value: /tmp
          ports:
            {{- if .serves }}
            - name: http
              containerPort: 8080
            {{- if $root.Values.email.smtp.enabled }}
            - name: smtp
              containerPort: 2525
            {{- end }}
            {{- end }}
            {{- if $webhooks }}
            - name: webhooks
              containerPort: 9443
            {{- end }}
            - name: metrics
              containerPort: 9090
            - name: probes
              containerPort: 8081
          livenessProbe:
            httpGet: {path: /healthz, port: probes}
            periodSeconds: 10
          readinessProbe:
            httpGet: {path: /readyz, port: probes}
            periodSeconds: 5
          resources:
            {{- toYaml .resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            # The root filesystem is read-only: function builds (npm and its cache) and the
            # local function runtime's deployments write here.
            - name: tmp
              mountPath: /tmp
            {{- if $webhooks }}
            - name: webhook-certs
              mountPath: /var/run/switchboard/webhook-certs
              readOnly: true
            {{- end }}
      volumes:
        - name: tmp
          emptyDir: {}
        {{- if $webhooks }}
        - name: webhook-certs
          secret:
            secretName: {{ include "switchboard.fullname" $root }}-webhook-cert
        {{- end }}
      {{- with $root.Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}

{{/* --webhook-allow-cidr flags, as a YAML list. */}}
{{- define "switchboard.webhookAllowArgs" -}}
{{- $args := list -}}
{{- range .Values.worker.webhookAllowCidrs -}}
{{- $args = append $args (printf "--webhook-allow-cidr=%s" .) -}}
{{- end -}}
{{- toYaml $args -}}
{{- end -}}

{{/* The inbound SMTP listener's flags (api and all roles), as a YAML list. */}}
{{- define "switchboard.smtpArgs" -}}
{{- $args := list -}}
{{- if .Values.email.smtp.enabled -}}
{{- $args = append $args "--smtp-listen=:2525" -}}
{{- $args = append $args (printf "--smtp-max-message-bytes=%d" (int64 .Values.email.smtp.maxMessageBytes)) -}}
{{- $args = append $args (printf "--smtp-max-connections=%d" (int .Values.email.smtp.maxConnections)) -}}
{{- $args = append $args (printf "--smtp-max-connections-per-ip=%d" (int .Values.email.smtp.maxConnectionsPerIP)) -}}
{{- $args = append $args (printf "--smtp-session-timeout=%s" .Values.email.smtp.sessionTimeout) -}}
{{- $args = append $args (printf "--smtp-max-buffered-bytes=%d" (int64 .Values.email.smtp.maxBufferedBytes)) -}}
{{- end -}}
{{- toYaml $args -}}
{{- end -}}

{{/* Arguments of the roles that serve the API: the SMTP listener's, where a suspended project is sent, where invitation links point, and the caps of sub-accounts and broadcasts. */}}
{{- define "switchboard.apiArgs" -}}
{{- $args := include "switchboard.smtpArgs" . | fromYamlArray -}}
{{- if .Values.api.supportUrl -}}
{{- $args = append $args (printf "--support-url=%s" .Values.api.supportUrl) -}}
{{- end -}}
{{- if .Values.api.dashboardUrl -}}
{{- $args = append $args (printf "--dashboard-url=%s" .Values.api.dashboardUrl) -}}
{{- end -}}
{{- $args = append $args (printf "--max-sub-accounts=%d" (int .Values.api.maxSubAccounts)) -}}
{{- $args = append $args (printf "--broadcast-max-recipients=%d" (int .Values.api.broadcastMaxRecipients)) -}}
{{- $args = append $args (printf "--max-requests-in-flight=%d" (int .Values.api.maxRequestsInFlight)) -}}
{{- $args = append $args (printf "--knowledge-memory=%s" .Values.knowledgeMemory) -}}
{{- $args = concat $args (include "switchboard.retentionArgs" . | fromYamlArray) -}}
{{- toYaml $args -}}
{{- end -}}

{{/* How long what grows with traffic is kept: the same on every process that serves or works. */}}
{{- define "switchboard.retentionArgs" -}}
{{- toYaml (list (printf "--retain-messages-days=%d" (int .Values.retention.messagesDays)) (printf "--retain-webhook-deliveries-days=%d" (int .Values.retention.webhookDeliveriesDays)) (printf "--retain-webhook-attempts-days=%d" (int .Values.retention.webhookAttemptsDays)) (printf "--retain-idempotency-keys-days=%d" (int .Values.retention.idempotencyKeysDays))) -}}
{{- end -}}
