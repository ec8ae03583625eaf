package main

// A Ginkgo suite as kubebuilder scaffolds one (internal/controller's
// suite_test.go and cronjob_controller_test.go): the API server starts in
// BeforeSuite (kubetest instead of envtest), the CRD is installed from its
// file, and the controller runs for the suite's specs, here on a test
// clock that the specs move a minute at a time.

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestControllerSuite runs the Ginkgo specs below (kubebuilder's
// TestControllers).
func TestControllerSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CronJob controller suite")
}

var suite struct {
	env *kubetest.Env
	c   *cluster
}

var _ = BeforeSuite(func() {
	// kubetest.Start takes GinkgoT(): a server of the suite's own, stopped
	// after it; without a server it skips the suite (fails it under
	// CI=true).
	suite.env = kubetest.Start(GinkgoT())
	suite.c = newCluster(GinkgoT(), suite.env) // installs crd.yaml
	suite.c.start(GinkgoT())                   // the controller, on a test clock
})

var _ = Describe("CronJob controller", func() {
	const timeout, interval = 30 * time.Second, 50 * time.Millisecond

	It("creates a Job at the scheduled time and reports it in the status", func() {
		c := suite.c
		c.createCronJob(GinkgoT(), "ginkgo", "*/1 * * * *", nil)

		By("creating a Job, controlled by the CronJob, at the next minute")
		at := c.tick()
		name := jobName("ginkgo", at)
		Eventually(func(g Gomega) {
			job, err := c.kube.BatchV1().Jobs(c.ns).Get(context.Background(), name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(metav1.GetControllerOf(job).Name).To(Equal("ginkgo"))
		}, timeout, interval).Should(Succeed())

		By("listing it in status.active, with status.lastScheduleTime")
		Eventually(func(g Gomega) {
			active, last := c.status(GinkgoT(), "ginkgo")
			g.Expect(active).To(ConsistOf(name))
			g.Expect(last).To(Equal(at.UTC().Format(time.RFC3339)))
		}, timeout, interval).Should(Succeed())

		By("taking it out of status.active once it has succeeded")
		c.finish(GinkgoT(), name, batchv1.JobComplete)
		Eventually(func(g Gomega) {
			active, _ := c.status(GinkgoT(), "ginkgo")
			g.Expect(active).To(BeEmpty())
			g.Expect(c.condition(GinkgoT(), "ginkgo", "Jobs")).To(ContainSubstring("0 active, 1 succeeded"))
			g.Expect(c.condition(GinkgoT(), "ginkgo", "Ready")).To(HavePrefix("True"))
		}, timeout, interval).Should(Succeed())
	})
})
