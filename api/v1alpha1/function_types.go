/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FunctionRuntime is the language runtime a function's bundle runs on.
// +kubebuilder:validation:Enum=nodejs24
type FunctionRuntime string

// RuntimeNodeJS24 is Node.js (the client's only value; the local runtime runs the machine's
// Node, 20 or later).
const RuntimeNodeJS24 FunctionRuntime = "nodejs24"

// FunctionMode is the traffic a function belongs to: the events it receives and the key it
// holds (docs/functions.md "Test and live").
// +kubebuilder:validation:Enum=live;test
type FunctionMode string

const (
	FunctionLive FunctionMode = "live"
	FunctionTest FunctionMode = "test"
)

// FunctionStatusValue is a function's lifecycle status as the API shows it.
type FunctionStatusValue string

const (
	FunctionDraft     FunctionStatusValue = "draft"
	FunctionBundling  FunctionStatusValue = "bundling"
	FunctionDeploying FunctionStatusValue = "deploying"
	FunctionActive    FunctionStatusValue = "active"
	FunctionFailed    FunctionStatusValue = "failed"
	FunctionDisabled  FunctionStatusValue = "disabled"
)

// FunctionSpec is a project's function: TypeScript run on the platform when a messaging event,
// a schedule or an HTTP request triggers it (docs/functions.md). Its settings and triggers live
// here; its code is either declared here (spec.source, for GitOps) or, for functions made
// through the API, kept as a draft in Postgres; every deployment is an immutable row in
// Postgres.
type FunctionSpec struct {
	// DisplayName is the function's name (`name` on the REST API).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	DisplayName string `json:"displayName"`

	// Description says what the function does.
	// +kubebuilder:validation:MaxLength=500
	// +optional
	Description string `json:"description,omitempty"`

	// Runtime is the language runtime: nodejs24.
	// +kubebuilder:default=nodejs24
	// +optional
	Runtime FunctionRuntime `json:"runtime,omitempty"`

	// MemoryMB is the memory a run may use: 128, 256, 512 or 1024.
	// +kubebuilder:validation:Enum=128;256;512;1024
	// +kubebuilder:default=256
	// +optional
	MemoryMB int32 `json:"memoryMb,omitempty"`

	// TimeoutSeconds bounds one run, 1 to 900.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=900
	// +kubebuilder:default=10
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// HTTPEnabled serves the function at its public URL (status.publicURL).
	// +optional
	HTTPEnabled bool `json:"httpEnabled,omitempty"`

	// Paused stops every trigger and the public URL; the function keeps its deployments.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Architecture is the CPU architecture the kubernetes runtime schedules the function on
	// (kubernetes.io/arch); empty: any. The local runtime ignores it.
	// +kubebuilder:validation:Enum=amd64;arm64
	// +optional
	Architecture string `json:"architecture,omitempty"`

	// Mode is the traffic the function serves: live (live events, a live key) or test (the
	// sandbox's events, a test key). Set at creation only.
	// +kubebuilder:default=live
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="mode is immutable: create another Function"
	// +optional
	Mode FunctionMode `json:"mode,omitempty"`

	// Source declares the function's code in the resource: every change of it is deployed.
	// Functions made through the API have none: their draft is kept by the API and deployed
	// with POST /v1/functions/{id}/deploy.
	// +optional
	Source *FunctionSource `json:"source,omitempty"`

	// Triggers are what runs the function besides HTTP: events and schedules.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Triggers []FunctionTrigger `json:"triggers,omitempty"`
}

// FunctionSource is a function's code declared in its resource: inline files, or a commit of a
// Git repository.
// +kubebuilder:validation:XValidation:rule="has(self.files) != has(self.git)",message="source has either files or git"
type FunctionSource struct {
	// Files are the source files by their path relative to the function's root (index.ts,
	// lib/orders.ts). At most 200 files and 900,000 bytes; package.json and node_modules/ are
	// not files of a function (dependencies say what to install).
	// +kubebuilder:validation:MaxProperties=200
	// +optional
	Files map[string]string `json:"files,omitempty"`

	// Git is a repository commit to deploy.
	// +optional
	Git *FunctionGitSource `json:"git,omitempty"`

	// Entrypoint is the file the function starts from (default index.ts).
	// +kubebuilder:validation:MaxLength=200
	// +optional
	Entrypoint string `json:"entrypoint,omitempty"`

	// Dependencies are npm packages by name, with their semver ranges.
	// +kubebuilder:validation:MaxProperties=100
	// +optional
	Dependencies map[string]string `json:"dependencies,omitempty"`
}

// FunctionGitSource is a commit of a Git repository served over HTTP(S).
type FunctionGitSource struct {
	// URL is the repository's clone URL (https://github.com/acme/order-bot.git).
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:MaxLength=500
	URL string `json:"url"`

	// Branch is the branch the commit is on.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	Branch string `json:"branch"`

	// Commit pins the commit (its full sha); empty: the branch's head when the resource changes.
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{40})?$`
	// +optional
	Commit string `json:"commit,omitempty"`

	// RootDir is the folder of the repository holding the function; empty: the root.
	// +kubebuilder:validation:MaxLength=200
	// +optional
	RootDir string `json:"rootDir,omitempty"`
}

// FunctionTrigger runs the function on an event (of one sender, or of all) or on a schedule.
// +kubebuilder:validation:XValidation:rule="(self.event == 'cron') == has(self.cron)",message="a cron trigger has a cron expression, and only a cron trigger"
// +kubebuilder:validation:XValidation:rule="self.event != 'cron' || !has(self.sender)",message="a cron trigger has no sender"
type FunctionTrigger struct {
	// Event is the event type (GET /v1/functions/event-types), or cron.
	// +kubebuilder:validation:Pattern=`^(cron|[a-z_]+\.[a-z_]+)$`
	// +kubebuilder:validation:MaxLength=100
	Event string `json:"event"`

	// Sender limits an event trigger to one Sender's events; empty: every sender's.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Sender string `json:"sender,omitempty"`

	// Cron is a five-field cron expression evaluated in UTC (minute hour day-of-month month
	// day-of-week).
	// +kubebuilder:validation:MaxLength=100
	// +optional
	Cron string `json:"cron,omitempty"`

	// Disabled keeps the trigger without running the function.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
}

// FunctionStatus is the observed state of a Function.
type FunctionStatus struct {
	// ObservedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready tells whether a deployment serves the function.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Phase is the function's status as the API shows it: draft, bundling, deploying, active,
	// failed or disabled.
	// +optional
	Phase FunctionStatusValue `json:"phase,omitempty"`

	// ActiveDeployment is the deployment that serves the function.
	// +optional
	ActiveDeployment string `json:"activeDeployment,omitempty"`

	// ActiveVersion is that deployment's version.
	// +optional
	ActiveVersion int32 `json:"activeVersion,omitempty"`

	// PublicURL is where the function answers HTTP, while spec.httpEnabled.
	// +optional
	PublicURL string `json:"publicURL,omitempty"`

	// SourceDigest is the digest of the spec.source last deployed.
	// +optional
	SourceDigest string `json:"sourceDigest,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=fn
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`,priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Version",type=integer,JSONPath=`.status.activeVersion`
// +kubebuilder:printcolumn:name="Deployment",type=string,JSONPath=`.status.activeDeployment`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.publicURL`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Function is a project's code run by the platform on events, schedules and HTTP requests.
// Its name is the function's slug and id on the REST API.
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 60 && self.metadata.name.matches('^[a-z0-9]+(-[a-z0-9]+)*$')",message="a Function's name is its slug: lowercase letters, digits and single hyphens, at most 60"
// +kubebuilder:validation:XValidation:rule="!(self.metadata.name in ['event-types', 'deployments', 'triggers', 'bundles'])",message="event-types, deployments, triggers and bundles are paths of the functions API, not names"
type Function struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FunctionSpec   `json:"spec,omitempty"`
	Status FunctionStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// FunctionList is a list of Functions.
type FunctionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Function `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Function{}, &FunctionList{})
}

// Reasons of a Function's Ready condition.
const (
	// ReasonNotDeployed: the function has never had a deployment that succeeded.
	ReasonNotDeployed = "NotDeployed"
	// ReasonDeploying: a deployment is being built; an earlier one may still serve.
	ReasonDeploying = "Deploying"
	// ReasonBuildFailed: the last deployment failed (the message says why); an earlier one may
	// still serve.
	ReasonBuildFailed = "BuildFailed"
	// ReasonPaused: spec.paused.
	ReasonPaused = "Paused"
)

// Labels and annotations of a Function's objects.
const (
	// FunctionLabel names the Function a Secret (its secrets) belongs to.
	FunctionLabel = "messaging.switchboard.io/function"
	// FunctionFinalizer holds a Function until its deployments, logs and key are gone.
	FunctionFinalizer = "messaging.switchboard.io/function-cleanup"
	// FunctionKeyIDAnnotation is the id of the API key provisioned for the function, revoked
	// when it is deleted.
	FunctionKeyIDAnnotation = "messaging.switchboard.io/function-key"
	// FunctionURLTokenAnnotation is the unguessable part of the function's public URL, kept
	// when HTTP is turned off so the URL is the same when it is turned on again.
	FunctionURLTokenAnnotation = "messaging.switchboard.io/url-token"
)
