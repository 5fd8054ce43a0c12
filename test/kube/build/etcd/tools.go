//go:build tools

// Package tools names the programs this module builds, so go mod tidy keeps their dependencies.
package tools

import _ "go.etcd.io/etcd/server/v3"
