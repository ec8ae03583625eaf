// Package consumer checks that the modules of this repository can be required
// from outside it, as a user's module requires them: without a replace line,
// without a go.work file, at the versions that the repository's go.mod files name.
//
// Its tests build a file-based module proxy (the layout of `go help goproxy`) from
// the working tree — a zip, a go.mod and an .info for github.com/opbus/opbus and
// for github.com/opbus/opbus/adapters/k8s — and then build, vet and test a small
// module in a temporary directory that imports both. The proxy comes first in
// GOPROXY; every other module comes from the local module cache, else from the
// proxy the environment names. It is its own module so that the library's go.mod
// never requires golang.org/x/mod.
package consumer
