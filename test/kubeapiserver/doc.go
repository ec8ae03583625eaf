// Package kubeapiserver pins the versions of kube-apiserver and etcd that the
// Kubernetes adapter's tests run against. It has no code: tools.go, built
// only with the tools tag, imports both main packages so that go mod tidy
// keeps their requirements, and scripts/kube-bin builds them from this
// module. This file lets go vet ./... and go test ./... run here like in
// every other module.
package kubeapiserver
