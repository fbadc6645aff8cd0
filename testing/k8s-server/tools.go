//go:build tools

// The programs this module pins: build.sh builds them with `go build`, and this
// file (never compiled: the "tools" build tag) keeps them in go.mod and go.sum.
package k8sserver

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
