#!/usr/bin/env bash
# Builds the real Kubernetes API server the ignored real-server tests start
# (test_kit::apiserver): kube-apiserver and etcd, from source, at the versions
# pinned by go.mod and go.sum beside this script, into a cache outside the
# clone:
#
#   ${KUBE_ELECTOR_CACHE:-$HOME/.cache/kube-elector}/k8s-<version>/bin/{kube-apiserver,etcd}
#
# and beside them client-go-peer, the client-go candidate of the mixed-fleet
# tests, from ../client-go-peer (its own go.mod, client-go of the same release).
#
#   bash testing/k8s-server/build.sh           build, unless already built
#   bash testing/k8s-server/build.sh --print   print the bin directory and exit
#
# Idempotent: when both binaries exist and the stamp file beside them names the
# same pins (the versions and go.sum's checksum), it builds nothing; the same for
# client-go-peer and its own stamp (its go.mod, go.sum and .go files), so that a
# change to the peer rebuilds the peer alone, in seconds. Go's module
# and build caches stay where Go keeps them ($GOMODCACHE, $GOCACHE), outside the
# clone, so that a rebuild after a pin change recompiles only what changed.
#
# Needs Go 1.26 (`go version`) and the Go module proxy. The first build takes
# about ten minutes on two cores and downloads some 700 MB of modules. The
# release is the newest whose go.mod asks for no newer Go than 1.26: a release
# that needs Go 1.27 would set `export GOTOOLCHAIN=go1.27.3` here (the approved
# way to get that toolchain, from the module proxy), and in .ci/run and the
# testing guide (docs/guide/testing.md) with it.
#
# etcd: kube-apiserver 1.36 runs on Debian's etcd 3.4.23 but finds it lacks
# RequestWatchProgress (etcd 3.4.31+/3.5.13+), and then serves consistent lists
# from etcd instead of its watch cache; clusters of this release run etcd 3.6.
# etcd 3.6.8 is the version kube-apiserver's own etcd client is pinned to, so it
# adds no module version to the build.
set -euo pipefail
cd "$(dirname "$0")"

command -v go >/dev/null || {
  echo "testing/k8s-server/build.sh: no \`go\` on PATH; the real-server tests need Go 1.26 to build kube-apiserver" >&2
  exit 1
}

pin() { awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' go.mod; }
k8s_version=$(pin k8s.io/kubernetes)
etcd_version=$(pin go.etcd.io/etcd/server/v3)
[ -n "$k8s_version" ] && [ -n "$etcd_version" ] || {
  echo "testing/k8s-server/build.sh: go.mod pins no k8s.io/kubernetes or go.etcd.io/etcd/server/v3" >&2
  exit 1
}

dir=${KUBE_ELECTOR_CACHE:-$HOME/.cache/kube-elector}/k8s-$k8s_version
bin=$dir/bin
if [ "${1:-}" = "--print" ]; then
  echo "$bin"
  exit 0
fi

stamp_text() {
  echo "k8s.io/kubernetes $k8s_version"
  echo "go.etcd.io/etcd/server/v3 $etcd_version"
  echo "go.sum $(sha256sum go.sum | cut -d' ' -f1)"
  echo "build.sh $(sha256sum build.sh | cut -d' ' -f1)"
}
# client-go-peer: its sources (every .go file), pins and this script.
peer_stamp_text() {
  local f
  for f in ../client-go-peer/go.mod ../client-go-peer/go.sum ../client-go-peer/*.go; do
    echo "${f#../} $(sha256sum "$f" | cut -d' ' -f1)"
  done
  echo "build.sh $(sha256sum build.sh | cut -d' ' -f1)"
}

build_peer() {
  local peer_stamp started
  peer_stamp=$(peer_stamp_text)
  if [ -x "$bin/client-go-peer" ] && [ "$(cat "$bin/client-go-peer.stamp" 2>/dev/null)" = "$peer_stamp" ]; then
    echo "client-go-peer already built in $bin"
    return
  fi
  started=$(date +%s)
  mkdir -p "$bin"
  # Into the bin directory under a temporary name, then renamed: a running
  # test never sees half a binary.
  (cd ../client-go-peer && nice -n 19 go build -ldflags "-s -w" -o "$bin/client-go-peer.new" .)
  mv -f "$bin/client-go-peer.new" "$bin/client-go-peer"
  echo "$peer_stamp" > "$bin/client-go-peer.stamp"
  echo "client-go-peer built in $(($(date +%s) - started)) s: $(du -h "$bin/client-go-peer" | cut -f1), in $bin"
}

stamp=$(stamp_text)
if [ -x "$bin/kube-apiserver" ] && [ -x "$bin/etcd" ] && [ "$(cat "$bin/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "kube-apiserver $k8s_version and etcd $etcd_version already built in $bin"
  build_peer
  exit 0
fi

echo "building kube-apiserver $k8s_version and etcd $etcd_version into $bin ($(go version))"
started=$(date +%s)
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# What a release build stamps (hack/lib/version.sh), so that /version and the
# user agent say the release; -s -w as a release build (no symbol tables).
minor=${k8s_version#v1.}
minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

# The machine has two cores shared with other work: the lowest priority.
nice -n 19 go build -ldflags "$ldflags" -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
echo "kube-apiserver built after $(($(date +%s) - started)) s"
nice -n 19 go build -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3

# The binaries run: their versions, as they report them.
"$tmp/kube-apiserver" --version
etcd_says=$("$tmp/etcd" --version)
echo "${etcd_says%%$'\n'*}"
mkdir -p "$bin"
mv -f "$tmp/kube-apiserver" "$tmp/etcd" "$bin/"
echo "$stamp" > "$bin/stamp"
echo "built in $(($(date +%s) - started)) s: $(du -h "$bin/kube-apiserver" | cut -f1) kube-apiserver, $(du -h "$bin/etcd" | cut -f1) etcd, in $bin"
build_peer
