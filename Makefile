# Switchboard — the two commands a newcomer needs are `make run` and `make test`.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/switchboard-io/switchboard/internal/version.Version=$(VERSION)
BIN := bin/switchboard

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ { printf "  %-18s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

##@ The two commands

.PHONY: run
run: build envtest-assets ## Run Switchboard locally (control plane, Postgres, manager+api+worker); Ctrl-C stops it all.
	$(BIN) dev

.PHONY: test
test: verify envtest-assets chart-lint browser node ## Run every test: checks, unit, Postgres, envtest, chart and end-to-end.
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh --check)" go test -count=1 -timeout 20m ./...

##@ Building

.PHONY: build
build: ## Build bin/switchboard.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/switchboard

.PHONY: envtest-assets
envtest-assets: ## Provide kube-apiserver, etcd and kubectl (downloaded, or built from the module proxy once).
	@hack/envtest-assets.sh >/dev/null

.PHONY: browser
browser: ## Provide Debian's Chromium for the connection page's browser test (apt-get; never a downloaded browser).
	@command -v chromium >/dev/null || { echo "installing chromium (apt-get)"; \
	  if [ "$$(id -u)" = 0 ]; then S=; else S=sudo; fi; \
	  $$S apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$S apt-get install -y -qq chromium >/dev/null; }

.PHONY: node
node: ## Provide Node.js and npm for the published client's end-to-end tests (apt-get).
	@{ command -v node && command -v npm; } >/dev/null || { echo "installing nodejs and npm (apt-get)"; \
	  if [ "$$(id -u)" = 0 ]; then S=; else S=sudo; fi; \
	  $$S apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$S apt-get install -y -qq nodejs npm >/dev/null; }

##@ Generated code

.PHONY: generate
generate: ## Generate deepcopy code and sqlc queries.
	go tool controller-gen object:headerFile="hack/boilerplate.go.txt" paths="./api/..."
	go tool sqlc generate -f internal/postgres/sqlc.yaml

.PHONY: manifests
manifests: ## Generate CRDs and RBAC, and copy them into the Helm chart.
	go tool controller-gen rbac:roleName=switchboard crd:allowDangerousTypes=false webhook paths="./..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	rm -f charts/switchboard/crds/*.yaml
	cp config/crd/bases/*.yaml charts/switchboard/crds/
	cp config/rbac/role.yaml charts/switchboard/files/role.yaml

##@ Checks

.PHONY: verify
verify: fmt-check vet verify-generated ## gofmt, go vet and the stale-generated-code check.

.PHONY: fmt-check
fmt-check:
	@out="$$(git ls-files -co --exclude-standard '*.go' | while read -r f; do [ -f "$$f" ] && echo "$$f"; done | xargs gofmt -l)"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

.PHONY: vet
vet:
	go vet ./...

.PHONY: verify-generated
verify-generated: ## Fail when `make generate manifests` would change a file.
	hack/verify-generated.sh

.PHONY: chart-lint
chart-lint: ## helm lint of charts/switchboard, both profiles (test/chart renders and applies it).
	go tool helm lint --strict charts/switchboard --set postgres.url=postgres://switchboard@db:5432/switchboard
	go tool helm lint --strict charts/switchboard --set postgres.url=postgres://switchboard@db:5432/switchboard \
		--set redis.url=redis://redis:6379/0 --set profile=split

# The pipeline table's time limit; with SWITCHBOARD_BENCH_MILLION=1 (the million-recipient
# broadcast) give it more: make bench BENCH_TIMEOUT=120m.
BENCH_TIMEOUT ?= 60m

.PHONY: bench
bench: envtest-assets ## Run the benchmarks: the packages' own, then the pipeline table against this machine's Postgres ceiling.
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh --check)" go test -run '^$$' -bench . -benchmem ./internal/...
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh --check)" go test -run '^$$' -bench Pipeline -benchtime 1x -timeout $(BENCH_TIMEOUT) ./test/bench

.PHONY: chaos
chaos: envtest-assets ## kill -9 under load: 2 api, 2 worker and a manager process, Postgres restarted, the receiver down a minute; prints what was lost (nothing).
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh --check)" SWITCHBOARD_CHAOS=full go test -count=1 -v -run TestChaos -timeout 30m ./test/chaos

.PHONY: clean
clean: ## Remove build output and the dev state directory.
	rm -rf bin .switchboard
