#!/usr/bin/env bash
# Provides kube-apiserver, etcd and kubectl of a pinned version for envtest and `switchboard dev`,
# in the directory where setup-envtest keeps its assets, and prints that directory.
#
# It first asks setup-envtest (its store is a public release bucket). Where that store cannot be
# reached, it builds the three binaries from the Go module proxy in a throwaway module and caches
# them in the same place, so a second run returns at once. A cold build takes ~5 minutes on two
# cores and 3-4 GB of Go build cache (kept outside the repository, in GOCACHE).
#
# Usage: hack/envtest-assets.sh            ensure the assets, print their directory on stdout
#        hack/envtest-assets.sh --check    print the directory if complete, else exit 1
set -euo pipefail

K8S_VERSION="${ENVTEST_K8S_VERSION:-1.37.1}"
ETCD_VERSION="${ENVTEST_ETCD_VERSION:-3.7.3}"
# The staging modules of k8s.io/kubernetes vX.Y.Z are published as v0.Y.Z.
STAGING_VERSION="v0.${K8S_VERSION#*.}"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
os="$(go env GOOS)"
arch="$(go env GOARCH)"
data_home="${XDG_DATA_HOME:-$HOME/.local/share}"
# setup-envtest's own layout: <data>/kubebuilder-envtest/k8s/<version>-<os>-<arch>/
store="${ENVTEST_ASSETS_ROOT:-$data_home/kubebuilder-envtest}"
dir="$store/k8s/${K8S_VERSION}-${os}-${arch}"

log() { echo "envtest-assets: $*" >&2; }

complete() {
  [ -x "$dir/kube-apiserver" ] && [ -x "$dir/etcd" ] && [ -x "$dir/kubectl" ]
}

if [ "${1:-}" = "--check" ]; then
  complete && { echo "$dir"; exit 0; }
  exit 1
fi

if complete; then echo "$dir"; exit 0; fi

mkdir -p "$store"
exec 9>"$store/.switchboard-build.lock"
if ! flock -n 9; then
  log "another build of the control plane is running; waiting for it"
  flock 9
fi
if complete; then echo "$dir"; exit 0; fi

# 1. setup-envtest's download, bounded so a closed network fails fast.
log "asking setup-envtest for Kubernetes $K8S_VERSION"
if (cd "$root" && timeout 60 go tool setup-envtest use "$K8S_VERSION" --bin-dir "$store" -i=false -p path) >/dev/null 2>&1 && complete; then
  echo "$dir"; exit 0
fi

# 2. Build from source through the Go module proxy.
log "setup-envtest's store cannot be reached; building kube-apiserver, kubectl $K8S_VERSION and etcd $ETCD_VERSION from source"
log "(a cold build takes about 5 minutes on two cores; later runs reuse $dir)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/kube" "$work/etcd" "$work/bin"

progress() {
  # go build -v prints one line per compiled package: show a running count, not the flood.
  awk -v what="$1" '{ n++; if (n % 200 == 0) { printf "envtest-assets: %s: %d packages compiled\n", what, n > "/dev/stderr" } }
                    END { printf "envtest-assets: %s: done (%d packages compiled)\n", what, n > "/dev/stderr" }'
}

(
  cd "$work/kube"
  go mod init switchboard.local/envtest-kube >/dev/null 2>&1
  log "resolving k8s.io/kubernetes v$K8S_VERSION"
  gomod="$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  [ -n "$gomod" ] || { log "cannot download k8s.io/kubernetes v$K8S_VERSION from the Go module proxy"; exit 1; }
  # Map every ./staging/... replace of k8s.io/kubernetes to the published module of the same version.
  args=()
  while read -r mod; do
    args+=("-replace=$mod=$mod@$STAGING_VERSION")
  done < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$gomod")
  go mod edit "${args[@]}"
  go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v$K8S_VERSION" "k8s.io/kubernetes/cmd/kubectl@v$K8S_VERSION" 2>&1 | grep -Ev '^go: (downloading|added|upgraded|finding)' >&2 || true
  minor="${K8S_VERSION#*.}"; minor="${minor%%.*}"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=${K8S_VERSION%%.*} -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  log "compiling kube-apiserver and kubectl"
  CGO_ENABLED=0 go build -v -trimpath -ldflags "$ldflags" -o "$work/bin/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl 2>&1 | progress "kube-apiserver, kubectl"
  [ "${PIPESTATUS[0]}" -eq 0 ]
)

(
  cd "$work/etcd"
  go mod init switchboard.local/envtest-etcd >/dev/null 2>&1
  log "resolving go.etcd.io/etcd/server/v3 v$ETCD_VERSION"
  go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" 2>&1 | grep -Ev '^go: (downloading|added|upgraded|finding)' >&2 || true
  log "compiling etcd"
  CGO_ENABLED=0 go build -v -trimpath -ldflags "-s -w" -o "$work/bin/etcd" go.etcd.io/etcd/server/v3 2>&1 | progress "etcd"
  [ "${PIPESTATUS[0]}" -eq 0 ]
)

"$work/bin/kube-apiserver" --version >&2
"$work/bin/etcd" --version 2>&1 | sed -n 1p >&2
mkdir -p "$dir"
for b in kube-apiserver kubectl etcd; do
  install -m 0755 "$work/bin/$b" "$dir/$b.tmp" && mv "$dir/$b.tmp" "$dir/$b"
done
log "control plane ready in $dir"
echo "$dir"
