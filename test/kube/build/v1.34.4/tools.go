//go:build tools

// Package tools names the programs this module builds, so go mod tidy keeps their dependencies.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
