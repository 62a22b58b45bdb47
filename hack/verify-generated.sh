#!/usr/bin/env bash
# Fails when `make generate manifests` changes a file: generated code (deepcopy, CRDs, RBAC, sqlc,
# and their copies in the Helm chart) must be committed current. It compares the tree before and
# after regenerating, so it needs no clean git state; a stale tree is left regenerated.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

generated=(api config/crd/bases config/rbac internal/postgres/db charts/switchboard/crds charts/switchboard/files)

snapshot() {
  find "${generated[@]}" -type f -print0 | sort -z | xargs -0 sha256sum
}

before="$(snapshot)"
make --no-print-directory generate manifests >/dev/null
after="$(snapshot)"

if [ "$before" != "$after" ]; then
  echo "Generated code was stale; \`make generate manifests\` changed:" >&2
  diff <(echo "$before") <(echo "$after") | sed -n 's/^[<>] [0-9a-f]*  /  /p' | sort -u >&2
  echo "Commit the regenerated files." >&2
  exit 1
fi
echo "generated code is current"
