package main

// A Ginkgo suite as kubebuilder scaffolds one (internal/controller's
// suite_test.go): the API server starts in BeforeSuite (kubetest instead of
// envtest), the CRD is installed from its file, and the controller runs in
// a controller-runtime manager for the suite's specs.

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestControllerSuite runs the Ginkgo specs below (kubebuilder's
// TestControllers).
func TestControllerSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "WebApp controller suite")
}

var suite struct {
	env    *kubetest.Env
	c      *cluster
	cancel context.CancelFunc
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(logr.Discard())
	// kubetest.Start takes GinkgoT(): a server of the suite's own, stopped
	// after it (its cleanup is Ginkgo's DeferCleanup); without a server it
	// skips the suite (fails it under CI=true).
	suite.env = kubetest.Start(GinkgoT())
	suite.env.InstallCRDFiles(GinkgoT(), "crd.yaml")
	cfg := suite.env.AdminConfig()
	suite.c = &cluster{ns: suite.env.Namespace(GinkgoT()), dyn: dynamic.NewForConfigOrDie(cfg), kube: kubernetes.NewForConfigOrDie(cfg)}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	Expect(err).NotTo(HaveOccurred())
	Expect(setup(mgr, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour, time.Second, nil)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	suite.cancel = cancel
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	if suite.cancel != nil {
		suite.cancel()
	}
})

var _ = Describe("WebApp controller", func() {
	const timeout, interval = 30 * time.Second, 50 * time.Millisecond

	It("creates the Deployment and reports readiness as the Ready condition", func() {
		c := suite.c
		c.createWebApp(GinkgoT(), "ginkgo", map[string]any{"image": "nginx:1.27", "replicas": int64(2)})

		By("creating a Deployment with the WebApp's image and replicas")
		Eventually(func(g Gomega) {
			dep, err := c.kube.AppsV1().Deployments(c.ns).Get(context.Background(), "ginkgo", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(*dep.Spec.Replicas).To(BeEquivalentTo(2))
			g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal("nginx:1.27"))
		}, timeout, interval).Should(Succeed())

		ready := func(status, message string) func(g Gomega) {
			return func(g Gomega) {
				cond := condition(c.webApp(GinkgoT(), "ginkgo"), "Ready")
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond["status"]).To(Equal(status))
				g.Expect(cond["message"]).To(ContainSubstring(message))
			}
		}
		By("reporting Ready False while no replica is ready")
		Eventually(ready("False", "0 of 2"), timeout, interval).Should(Succeed())

		By("reporting Ready True once the Deployment's replicas are ready")
		c.setReady(GinkgoT(), "ginkgo", 2, 2)
		Eventually(ready("True", "2 of 2"), timeout, interval).Should(Succeed())
	})
})
