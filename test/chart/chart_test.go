// Package chart renders charts/switchboard with helm and applies the result to a real
// kube-apiserver, so a manifest the API server would refuse fails here, not at install time.
package chart

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const chartDir = "../../charts/switchboard"

func helmTemplate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"tool", "helm", "template", "sb", chartDir, "--namespace", "switchboard-system", "--include-crds"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stderr.String(), err
	}
	return stdout.String(), nil
}

func decode(t *testing.T, manifests string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufioReader(manifests))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs
}

func kinds(objs []*unstructured.Unstructured) map[string][]*unstructured.Unstructured {
	out := map[string][]*unstructured.Unstructured{}
	for _, o := range objs {
		out[o.GetKind()] = append(out[o.GetKind()], o)
	}
	return out
}

func TestChartNeedsPostgres(t *testing.T) {
	out, err := helmTemplate(t)
	if err == nil || !strings.Contains(out, "set postgres.url or postgres.existingSecret.name") {
		t.Fatalf("helm template without Postgres = %v:\n%s", err, out)
	}
}

func TestChartRefusesAnUnknownProfile(t *testing.T) {
	out, err := helmTemplate(t, "--set", "postgres.url=postgres://db/x", "--set", "profile=huge")
	if err == nil || !strings.Contains(out, "profile must be small or split") {
		t.Fatalf("helm template with profile=huge = %v:\n%s", err, out)
	}
}

func TestChartInstallsOnARealAPIServer(t *testing.T) {
	k8s := startAPIServer(t)
	ctx := context.Background()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "switchboard-system"}}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name        string
		args        []string
		deployments map[string]string // name → role
	}{
		{"small", []string{"--set", "postgres.url=postgres://u:p@db:5432/sb"},
			map[string]string{"sb-switchboard-all": "all"}},
		{"split", []string{"--set", "profile=split", "--set", "postgres.existingSecret.name=db", "--set", "redis.url=redis://redis:6379/0",
			"--set", "worker.webhookAllowCidrs={10.20.0.0/16}"},
			map[string]string{"sb-switchboard-manager": "manager", "sb-switchboard-api": "api", "sb-switchboard-worker": "worker"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helmTemplate(t, tc.args...)
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, out)
			}
			objs := decode(t, out)
			byKind := kinds(objs)
			bases, _ := filepath.Glob("../../config/crd/bases/*.yaml")
			if n := len(byKind["CustomResourceDefinition"]); n != len(bases) || n == 0 {
				t.Errorf("chart carries %d CRDs, want every one of config/crd/bases (%d)", n, len(bases))
			}
			deps := byKind["Deployment"]
			if len(deps) != len(tc.deployments) {
				t.Fatalf("%d Deployments, want %d", len(deps), len(tc.deployments))
			}
			for _, d := range deps {
				role, ok := tc.deployments[d.GetName()]
				if !ok {
					t.Fatalf("unexpected Deployment %s", d.GetName())
				}
				containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
				c := containers[0].(map[string]any)
				args := c["args"].([]any)
				if args[0] != role {
					t.Errorf("%s runs %v, want role %s first", d.GetName(), args, role)
				}
				if role == "worker" && !slices.Contains(args, any("--webhook-allow-cidr=10.20.0.0/16")) {
					t.Errorf("worker args %v lack the webhook allow-list", args)
				}
				envText, _ := yaml.Marshal(c["env"])
				if !strings.Contains(string(envText), "DATABASE_URL") || strings.Contains(string(envText), "postgres://") {
					t.Errorf("%s: DATABASE_URL must come from a Secret, not in clear:\n%s", d.GetName(), envText)
				}
			}

			checkAdmissionWebhooks(t, byKind)

			// Everything the chart renders is accepted by a real API server (CRDs first).
			for _, o := range objs {
				if o.GetKind() == "CustomResourceDefinition" {
					create(t, ctx, k8s, o)
				}
			}
			for _, o := range objs {
				if o.GetKind() != "CustomResourceDefinition" {
					if o.GetNamespace() == "" && o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "ValidatingWebhookConfiguration" {
						o.SetNamespace("switchboard-system")
					}
					create(t, ctx, k8s, o)
				}
			}
		})
	}
}

func create(t *testing.T, ctx context.Context, k8s client.Client, o *unstructured.Unstructured) {
	t.Helper()
	err := k8s.Create(ctx, o, client.DryRunAll)
	if apierrors.IsAlreadyExists(err) {
		return
	}
	if err != nil {
		t.Errorf("API server refuses %s %s: %v", o.GetKind(), o.GetName(), err)
	}
	if o.GetKind() == "CustomResourceDefinition" {
		// CRDs are created for real, as helm installs them before anything else.
		if err := k8s.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("create CRD %s: %v", o.GetName(), err)
		}
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

func TestKustomizeDefaultBuildsAndApplies(t *testing.T) {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../../config/default")
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	k8s := startAPIServer(t)
	ctx := context.Background()
	objs := decode(t, string(out))
	// Namespaces and CRDs for real, the rest as a server-side dry run.
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			if err := k8s.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			create(t, ctx, k8s, o)
		}
	}
	for _, o := range objs {
		if o.GetKind() != "Namespace" && o.GetKind() != "CustomResourceDefinition" {
			create(t, ctx, k8s, o)
		}
	}
	if n := len(kinds(objs)["Deployment"]); n != 1 {
		t.Errorf("config/default has %d Deployments, want 1", n)
	}
}

// startAPIServer starts a bare kube-apiserver and etcd, stopped when t ends.
func startAPIServer(t *testing.T) client.Client {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set; run the tests through `make test`")
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	k8s, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return k8s
}

// checkAdmissionWebhooks: the chart's ValidatingWebhookConfiguration has the rules controller-gen
// generated from the code (config/webhook), points at the webhook Service with a CA that signed
// the serving certificate for that Service's name, and the manager role mounts the certificate.
func checkAdmissionWebhooks(t *testing.T, byKind map[string][]*unstructured.Unstructured) {
	t.Helper()
	configs := byKind["ValidatingWebhookConfiguration"]
	if len(configs) != 1 {
		t.Fatalf("%d ValidatingWebhookConfigurations, want 1", len(configs))
	}
	generated, err := os.ReadFile("../../config/webhook/manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want admissionv1.ValidatingWebhookConfiguration
	if err := yaml.Unmarshal(generated, &want); err != nil {
		t.Fatal(err)
	}
	var got admissionv1.ValidatingWebhookConfiguration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(configs[0].Object, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Webhooks) != len(want.Webhooks) {
		t.Fatalf("chart has %d webhooks, the code %d", len(got.Webhooks), len(want.Webhooks))
	}
	var secret *unstructured.Unstructured
	for _, s := range byKind["Secret"] {
		if s.GetName() == "sb-switchboard-webhook-cert" {
			secret = s
		}
	}
	if secret == nil {
		t.Fatal("no webhook certificate Secret")
	}
	for i, w := range got.Webhooks {
		g := want.Webhooks[i]
		if w.Name != g.Name || *w.ClientConfig.Service.Path != *g.ClientConfig.Service.Path || !reflect.DeepEqual(w.Rules, g.Rules) ||
			*w.SideEffects != *g.SideEffects || !reflect.DeepEqual(w.AdmissionReviewVersions, g.AdmissionReviewVersions) ||
			*w.FailurePolicy != *g.FailurePolicy {
			t.Errorf("chart webhook %s differs from config/webhook:\n%+v\n%+v", w.Name, w, g)
		}
		if w.ClientConfig.Service.Name != "sb-switchboard-webhook" || w.ClientConfig.Service.Namespace != "switchboard-system" {
			t.Errorf("webhook %s calls %+v", w.Name, w.ClientConfig.Service)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(w.ClientConfig.CABundle) {
			t.Fatalf("webhook %s has no CA bundle", w.Name)
		}
		crt, _, _ := unstructured.NestedString(secret.Object, "data", "tls.crt")
		pemCrt, _ := base64.StdEncoding.DecodeString(crt)
		block, _ := pem.Decode(pemCrt)
		if block == nil {
			t.Fatal("the webhook Secret's tls.crt is not PEM")
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "sb-switchboard-webhook.switchboard-system.svc"}); err != nil {
			t.Errorf("the serving certificate does not verify against the CA bundle: %v", err)
		}
	}
	served := 0
	for _, d := range byKind["Deployment"] {
		text, _ := yaml.Marshal(d.Object)
		if strings.Contains(string(text), "--webhook-cert-dir=") {
			served++
			if !strings.Contains(string(text), "secretName: sb-switchboard-webhook-cert") {
				t.Errorf("%s serves webhooks without the certificate's volume", d.GetName())
			}
		}
	}
	if served != 1 {
		t.Errorf("%d Deployments serve the admission webhooks, want the manager's (or all's) only", served)
	}
}

// TestChartGrafanaDashboard: with grafana.dashboard.enabled the chart carries a ConfigMap for
// Grafana's sidecar holding a dashboard whose every expression reads metrics the code registers
// (a renamed metric would leave a panel empty); with metrics.podMonitor.enabled a PodMonitor
// scrapes every pod's metrics port. Neither is rendered by default.
func TestChartGrafanaDashboard(t *testing.T) {
	out, err := helmTemplate(t, "--set", "postgres.url=postgres://db/x", "--set", "grafana.dashboard.enabled=true",
		"--set", "grafana.dashboard.annotations.grafana_folder=Switchboard", "--set", "metrics.podMonitor.enabled=true")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	byKind := kinds(decode(t, out))
	var dashboard string
	for _, cm := range byKind["ConfigMap"] {
		if cm.GetName() == "sb-switchboard-grafana-dashboard" {
			if cm.GetLabels()["grafana_dashboard"] != "1" || cm.GetAnnotations()["grafana_folder"] != "Switchboard" {
				t.Errorf("dashboard ConfigMap labels %v annotations %v", cm.GetLabels(), cm.GetAnnotations())
			}
			dashboard, _, _ = unstructured.NestedString(cm.Object, "data", "switchboard.json")
		}
	}
	if dashboard == "" {
		t.Fatal("no dashboard ConfigMap")
	}
	var d struct {
		SchemaVersion int `json:"schemaVersion"`
		Templating    struct {
			List []struct{ Name, Type, Query string }
		}
		Panels []struct {
			Type, Title string
			Datasource  struct{ Type, UID string }
			Targets     []struct{ Expr string }
		}
	}
	if err := json.Unmarshal([]byte(dashboard), &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if d.SchemaVersion < 36 || len(d.Templating.List) == 0 || d.Templating.List[0].Name != "datasource" ||
		d.Templating.List[0].Type != "datasource" || d.Templating.List[0].Query != "prometheus" {
		t.Errorf("dashboard schemaVersion %d, templating %+v: want a prometheus datasource variable", d.SchemaVersion, d.Templating)
	}

	registered := registeredMetrics(t)
	used := map[string]bool{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d targets", p.Title, p.Datasource, len(p.Targets))
		}
		for _, target := range p.Targets {
			for _, name := range metricName.FindAllString(target.Expr, -1) {
				used[name] = true
				base := name
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if b, ok := strings.CutSuffix(name, suffix); ok && registered[b] {
						base = b
					}
				}
				if !registered[base] {
					t.Errorf("panel %q reads %s, which no code registers", p.Title, name)
				}
			}
		}
	}
	if len(used) < 10 {
		t.Errorf("the dashboard reads %d metrics (%v); want the sends', queues', webhooks', broadcasts' and circuits'", len(used), used)
	}

	monitors := byKind["PodMonitor"]
	if len(monitors) != 1 {
		t.Fatalf("%d PodMonitors, want 1", len(monitors))
	}
	endpoints, _, _ := unstructured.NestedSlice(monitors[0].Object, "spec", "podMetricsEndpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != "metrics" {
		t.Errorf("PodMonitor endpoints %v, want the pods' metrics port", endpoints)
	}

	out, err = helmTemplate(t, "--set", "postgres.url=postgres://db/x")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	byKind = kinds(decode(t, out))
	if len(byKind["ConfigMap"]) != 0 || len(byKind["PodMonitor"]) != 0 {
		t.Errorf("by default the chart renders %d ConfigMaps and %d PodMonitors, want none", len(byKind["ConfigMap"]), len(byKind["PodMonitor"]))
	}
}

var (
	metricName = regexp.MustCompile(`\bswitchboard_[a-z0-9_]+`)
	// registration matches a metric's name where Go code defines it (Opts' Name, NewDesc).
	registration = regexp.MustCompile(`(?:Name:\s*|NewDesc\(\s*)"(switchboard_[a-z0-9_]+)"`)
)

// registeredMetrics are the metric names the code defines, read from its sources.
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir("../../internal", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range registration.FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("found no metric defined in internal/")
	}
	return names
}
