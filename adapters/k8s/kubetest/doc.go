// Package kubetest gives tests a real Kubernetes API server.
//
// # Choosing a server
//
// [Start] and [Shared] look at two environment variables, in this order:
//
//   - OPBUS_TEST_KUBECONFIG: the path of a kubeconfig. The tests use the
//     existing cluster of its current context. Its user must be allowed to do
//     everything the tests do (cluster-admin is simplest), including
//     impersonation, which [Env.UserConfig] uses for non-admin users there.
//     Every test works in its own namespace from [Env.Namespace]; nothing else
//     in the cluster is touched, and the namespaces are deleted afterwards.
//     [Env.RestartAPIServer] skips the test.
//   - OPBUS_KUBE_BIN: a directory holding the programs kube-apiserver and etcd.
//     kubetest starts etcd, then kube-apiserver, on free 127.0.0.1 ports, with
//     their data, certificates and logs in a temporary directory, and stops
//     both when done. A directory without both programs fails the test.
//
// With neither set, the tests skip, unless CI=true, in which case they fail,
// so that a misconfigured CI job cannot pass without running them.
//
// To build the programs (the first build takes about 10-12 minutes) and run
// the tests, from the repository root:
//
//	export OPBUS_KUBE_BIN=$(scripts/kube-bin)
//	cd adapters/k8s && GOWORK=off go test -race ./...
//
// Against an existing cluster (kind, minikube, a shared test cluster):
//
//	cd adapters/k8s && OPBUS_TEST_KUBECONFIG=$HOME/.kube/config go test ./...
//
// # The local server
//
// The local kube-apiserver has no controller-manager, scheduler or kubelet:
//   - Pods stay Pending until a test patches their status subresource.
//   - Namespaces never finish deleting, so every test uses a fresh one.
//   - The ServiceAccount admission plugin is off, so Pods need no service
//     account.
//   - There is no garbage collection of owner references.
//
// Authorization is RBAC. [Env.AdminConfig] authenticates as a member of
// system:masters. [Env.UserConfig] with [OperatorUser] authenticates as a user
// with no groups and, until a test binds a role to it, no permissions.
//
// # Sharing one server
//
// Starting a server takes about 4 seconds. A package whose tests can share one
// calls [Main] from TestMain and [Shared] in each test:
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		env := kubetest.Shared(t)
//		ns := env.Namespace(t)
//		...
//	}
//
// The shared server starts when a test first asks for it and stops when the
// package's tests end. A test that restarts the API server, or needs a server
// nobody else uses, calls [Start] for its own.
package kubetest
