//go:build tools

package kubeapiserver

import (
	_ "go.etcd.io/etcd/server/v3"            // etcd's main package
	_ "k8s.io/kubernetes/cmd/kube-apiserver" // kube-apiserver's main package
)
