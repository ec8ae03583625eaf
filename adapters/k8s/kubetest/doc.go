// Package kubetest gives tests a real Kubernetes API server: one it starts
// from the kube-apiserver and etcd programs, or an existing cluster. It is
// what the opbus Kubernetes adapter's own tests use, and it is meant for the
// tests of operators built on the adapter, in the spirit of
// controller-runtime's envtest but without requiring controller-runtime.
//
// # Using it in your module's tests
//
// Call [Main] from TestMain, so that the package's tests share one server,
// started by the first test that asks for it and stopped after the last.
// Each test asks for it with [Shared], installs the CRDs it needs and works
// in a namespace of its own:
//
//	import "github.com/opbus/opbus/adapters/k8s/kubetest"
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
//
//	func TestReconcile(t *testing.T) {
//		env := kubetest.Shared(t)                     // starts the server on first use
//		env.InstallCRDFiles(t, "../config/crd/bases") // no-op if already installed
//		ns := env.Namespace(t)                        // a fresh namespace
//		cfg := env.AdminConfig()                      // a *rest.Config with every permission
//		// ... run the operator with cfg, create objects in ns, poll for the result
//	}
//
// A Ginkgo suite, as kubebuilder scaffolds one, has no TestMain: it
// starts its own server in BeforeSuite with [Start], passing GinkgoT()
// (every function here takes a [TB], which GinkgoT() satisfies); the
// server stops after the suite, and with no server the suite is skipped:
//
//	var _ = BeforeSuite(func() {
//		env = kubetest.Start(GinkgoT())
//		env.InstallCRDFiles(GinkgoT(), filepath.Join("..", "config", "crd", "bases"))
//	})
//
// Then run the tests with a server available, as described next:
//
//	OPBUS_KUBE_BIN=/path/to/bin go test ./...
//
// [Env.InstallCRDs] takes objects instead of files. [Env.UserConfig] gives a
// configuration for a user without permissions, and [Env.ApplyRBACFile]
// binds an operator's RBAC manifest to that user, to check that the
// manifest grants what the operator needs; [Env.WriteKubeconfig] writes a
// kubeconfig for such a configuration, to run the operator as a process
// of its own (KUBECONFIG=...), as it runs in a cluster. A test that needs a server
// of its own, for example to restart it with [Env.RestartAPIServer], calls
// [Start] instead of [Shared].
//
// # Choosing a server
//
// [Start] and [Shared] look at three environment variables, in this order:
//
//   - OPBUS_TEST_KUBECONFIG ([KubeconfigVar]): the path of a kubeconfig. The
//     tests use the existing cluster of its current context. Its user must
//     be allowed to do everything the tests do (cluster-admin is simplest),
//     including impersonation, which [Env.UserConfig] uses for non-admin
//     users there. Every test works in its own namespace from
//     [Env.Namespace]; nothing else in the cluster is touched except the
//     CRDs that tests install, and the namespaces are deleted afterwards.
//     [Env.RestartAPIServer] skips the test.
//   - OPBUS_KUBE_BIN ([BinVar]): a directory holding the programs
//     kube-apiserver and etcd. kubetest starts etcd, then kube-apiserver, on
//     free 127.0.0.1 ports, with their data, certificates and logs in a
//     temporary directory, and stops both when done. A directory without
//     both programs fails the test.
//   - KUBEBUILDER_ASSETS ([AssetsVar]): the same, for a directory made by
//     controller-runtime's setup-envtest, which downloads released programs.
//
// With none set, the tests skip, unless CI=true, in which case they fail, so
// that a misconfigured CI job cannot pass without running them.
//
// # Getting the programs
//
// The script scripts/kube-bin in the opbus repository builds kube-apiserver
// and etcd from the Go module proxy, at the Kubernetes version the adapter is
// tested with, and prints the directory that holds them. The first build
// takes about 10-12 minutes on 2 cores and about 4 GB of Go caches; later
// runs take seconds:
//
//	git clone https://github.com/opbus/opbus
//	export OPBUS_KUBE_BIN=$(opbus/scripts/kube-bin ~/.cache/opbus-kube)
//
// Programs from setup-envtest work too (KUBEBUILDER_ASSETS=$(setup-envtest
// use -p path)). kubetest is tested with the version that scripts/kube-bin
// builds (see the repository's test/kubeapiserver/go.mod); a much older
// kube-apiserver may refuse one of the flags it passes, which the test's
// error shows with the end of the program's log. Against an existing
// cluster (kind, minikube, a shared test cluster):
//
//	OPBUS_TEST_KUBECONFIG=$HOME/.kube/config go test ./...
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
// If the test binary is killed (a time-out, a crash), Linux stops the
// programs with it; on other systems they may be left running.
//
// # Sharing one server
//
// Starting a server takes about 4 seconds, so a package's tests normally
// share one: [Main] in TestMain and [Shared] in each test, as above. The
// shared server starts when a test first asks for it and stops when the
// package's tests end. Tests that share it, in parallel or not, should each
// work in their own [Env.Namespace]; CRDs are cluster-wide, so tests that
// share a server should install the same definition under a given name.
//
// # Examples need a server
//
// Go examples cannot skip, so the example of this package is compiled but
// not run by go test. TestStartInstallCreateStop in this package does the
// same steps and runs wherever a server is available; the opbus repository's
// scripts/test provides one (it sets OPBUS_KUBE_BIN from scripts/kube-bin).
package kubetest
