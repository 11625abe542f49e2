#!/usr/bin/env bash
# Build the servers of `chaosdb cluster up --kind kubernetes` from their upstream Go modules:
# kube-apiserver, kube-controller-manager, kube-scheduler (Kubernetes v1.34.2), kwok (v0.7.0) and the Chaos Mesh
# controller-manager (the commit of the CRDs bundled with chaostoolkit-db). Needs Go >= 1.25 and the Go module
# proxy; no git, no containers. Cost measured on 2 cores: about 21 min for Kubernetes, 3 min for kwok, 9 min for
# Chaos Mesh, ~5 GB of module and build cache (`go clean -cache -modcache` frees it).
#
#   scripts/build-local-kubernetes.sh [OUTPUT_DIR]      (default: ~/.cache/chaosdb/bin, where chaosdb looks)
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-v1.34.2}
KWOK_VERSION=${KWOK_VERSION:-v0.7.0}
CHAOS_MESH_COMMIT=${CHAOS_MESH_COMMIT:-608b61e7c1b16c01a242e8ddc93c768ea77d783a}
OUT=$(realpath -m "${1:-${XDG_CACHE_HOME:-$HOME/.cache}/chaosdb/bin}")
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0

echo "== Kubernetes $K8S_VERSION (kube-apiserver, kube-controller-manager, kube-scheduler)"
# k8s.io/kubernetes is not meant to be a dependency: its go.mod replaces every staging module (k8s.io/api, ...)
# by a folder of its own repository. A wrapper module replaces each of them by its published v0.<minor> version.
mkdir "$work/k8s" && cd "$work/k8s"
go mod init chaosdb.embedded/kubernetes-build >/dev/null 2>&1
gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
staging_version="v0.${K8S_VERSION#v1.}"
for module in $(sed -n 's#^\s*\(k8s.io/[A-Za-z0-9._-]*\) => \./staging/.*#\1#p' "$gomod"); do
    go mod edit -replace "$module=$module@$staging_version"
done
go mod edit -require "k8s.io/kubernetes@$K8S_VERSION"
minor=$(echo "$K8S_VERSION" | cut -d. -f2)
# without these the servers call themselves v0.0.0-master, which kubectl refuses to parse
version_flags="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
  -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
    go build -trimpath -ldflags "-s -w $version_flags" -o "$OUT/$cmd" "k8s.io/kubernetes/cmd/$cmd"
done

echo "== kwok $KWOK_VERSION"
GOBIN="$OUT" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"

echo "== Chaos Mesh controller-manager ${CHAOS_MESH_COMMIT:0:9}"
# its go.mod has replace directives, so `go install module@version` refuses it: build inside the downloaded module
src=$(cd "$work/k8s" && go mod download -json "github.com/chaos-mesh/chaos-mesh@$CHAOS_MESH_COMMIT" \
      | sed -n 's/^\s*"Dir": "\(.*\)",\?$/\1/p')
cp -r "$src" "$work/chaos-mesh" && chmod -R u+w "$work/chaos-mesh" && cd "$work/chaos-mesh"
go build -trimpath -ldflags "-s -w" -o "$OUT/chaos-controller-manager" ./cmd/chaos-controller-manager

echo "built into $OUT:"
ls -l "$OUT"
