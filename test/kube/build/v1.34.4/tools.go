//go:build tools

// Package tools names the programs this module builds, so go mod tidy keeps their dependencies:
// kube-apiserver, and the old release's kube-controller-manager and kube-scheduler (issue 39: the
// real controllers on the old node, through the mvproxy beside it).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
