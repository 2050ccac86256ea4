#!/usr/bin/env bash
# Builds the pinned Kubernetes test binaries into a cache outside the repo, keyed by version.
# Safe to run concurrently: a flock serialises builders; a finished build is marked by a stamp
# file, so a second run returns at once. Prints the binary directory on the last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(cat "$here/VERSION")
dir=${FLOTILLA_K8S_DIR:-$HOME/.cache/flotilla/k8s/$version}
bins=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok)
stamp="$dir/.complete"

if [ -f "$stamp" ]; then echo "$dir"; exit 0; fi
mkdir -p "$dir"
exec 9>"$dir/.lock"
if ! flock -n 9; then
  echo "k8s-bin: another build holds the lock in $dir; waiting for it" >&2
  flock 9
fi
if [ -f "$stamp" ]; then echo "$dir"; exit 0; fi

cd "$here"
echo "k8s-bin: downloading Go modules" >&2
go mod download
pkgs=(
  "kube-apiserver:k8s.io/kubernetes/cmd/kube-apiserver"
  "kube-controller-manager:k8s.io/kubernetes/cmd/kube-controller-manager"
  "kube-scheduler:k8s.io/kubernetes/cmd/kube-scheduler"
  "etcd:go.etcd.io/etcd/server/v3"
  "kwok:sigs.k8s.io/kwok/cmd/kwok"
)
# A plain `go build` leaves the version at v0.0.0-master; set what the release build sets,
# so that /version (and the facts agents report) tell the truth.
k8s_ver=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=${k8s_ver#v1.}; minor=${minor%%.*}
k8s_version_ldflags=""
for pkgpath in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_version_ldflags+=" -X $pkgpath.gitVersion=$k8s_ver -X $pkgpath.gitMajor=1 -X $pkgpath.gitMinor=$minor"
  k8s_version_ldflags+=" -X $pkgpath.gitTreeState=clean -X $pkgpath.buildDate=1970-01-01T00:00:00Z"
done
i=0
for p in "${pkgs[@]}"; do
  i=$((i+1)); name=${p%%:*}; pkg=${p#*:}
  if [ -x "$dir/$name" ]; then echo "k8s-bin: [$i/${#pkgs[@]}] $name already built" >&2; continue; fi
  echo "k8s-bin: [$i/${#pkgs[@]}] building $name ($pkg) ..." >&2
  start=$(date +%s)
  # Build to a temp name and rename, so an interrupted build never leaves a broken binary.
  ldflags="-s -w"
  case $pkg in
    k8s.io/kubernetes/*) ldflags="$ldflags $k8s_version_ldflags" ;;
  esac
  CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$dir/.$name.tmp" "$pkg"
  mv "$dir/.$name.tmp" "$dir/$name"
  echo "k8s-bin: [$i/${#pkgs[@]}] $name done in $(( $(date +%s) - start ))s" >&2
done
# kwok's stage definitions ship inside its module; copy the ones the test substrate uses.
kwokdir=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
mkdir -p "$dir/kwok-stages"
for s in node/fast node/heartbeat-with-lease pod/fast pod/chaos; do
  mkdir -p "$dir/kwok-stages/$s"
  for f in "$kwokdir/kustomize/stage/$s/"*.yaml; do
    [ "$(basename "$f")" = kustomization.yaml ] && continue
    install -m 0644 "$f" "$dir/kwok-stages/$s/"
  done
done
touch "$stamp"
echo "k8s-bin: all binaries ready in $dir" >&2
echo "$dir"
