// Package controlplane runs a local kube-apiserver and etcd (the envtest binaries of
// hack/envtest-assets.sh) with Switchboard's CRDs installed, for `switchboard dev`.
package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/switchboard-io/switchboard/config/crd"
)

// K8sVersion is the Kubernetes version of the control plane, kept in step with hack/envtest-assets.sh.
const K8sVersion = "1.37.1"

// ControlPlane is a running local control plane.
type ControlPlane struct {
	env *envtest.Environment
	// Config connects as cluster administrator.
	Config *rest.Config
}

// AssetsDir returns where the control-plane binaries are: KUBEBUILDER_ASSETS when set, else
// setup-envtest's default store, where hack/envtest-assets.sh puts them.
func AssetsDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	data := os.Getenv("XDG_DATA_HOME")
	if data == "" {
		home, _ := os.UserHomeDir()
		data = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(data, "kubebuilder-envtest", "k8s", fmt.Sprintf("%s-%s-%s", K8sVersion, runtime.GOOS, runtime.GOARCH))
}

// CheckAssets tells, in one line, what is missing from dir and how to get it.
func CheckAssets(dir string) error {
	var missing []string
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("control-plane binaries %v not found in %s; run `make envtest-assets` (hack/envtest-assets.sh) or set KUBEBUILDER_ASSETS", missing, dir)
	}
	return nil
}

// Start starts etcd and kube-apiserver from assetsDir and installs the CRDs.
func Start(assetsDir string) (*ControlPlane, error) {
	if err := CheckAssets(assetsDir); err != nil {
		return nil, err
	}
	crds, err := crd.All()
	if err != nil {
		return nil, fmt.Errorf("load CRDs: %w", err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assetsDir,
		CRDs:                  crds,
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("start local control plane: %w", err)
	}
	return &ControlPlane{env: env, Config: cfg}, nil
}

// WriteKubeconfig writes a kubeconfig for a cluster administrator to path, for kubectl.
func (c *ControlPlane) WriteKubeconfig(path string) error {
	user, err := c.env.AddUser(envtest.User{Name: "switchboard-dev", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("add kubeconfig user: %w", err)
	}
	b, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("render kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Stop stops kube-apiserver and etcd and removes their files.
func (c *ControlPlane) Stop() error {
	if c == nil || c.env == nil {
		return errors.New("control plane not started")
	}
	return c.env.Stop()
}
