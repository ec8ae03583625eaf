package k8s_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
)

// replicaEnv, set in the environment of this package's test binary, makes
// it run as one replica of an operator instead of running tests (see
// TestMain): its value is the replica's configuration in JSON. The
// fencing tests start several such processes on one Lease and stop,
// resume and kill them with signals, as a node or a kubelet would.
const replicaEnv = "OPBUS_TEST_REPLICA"

// replicaConfig configures a replica process.
type replicaConfig struct {
	Kubeconfig, Namespace, Identity string
	Lease, Renew, Retry             time.Duration
	// Children is how many ConfigMaps the handler applies for each Widget,
	// each with data.version (the Widget's spec.version) and data.writer
	// (the replica's Identity).
	Children int
	// Shards makes the replica a member of the shard ring "shards" (Lease
	// for its lease duration, Retry for its renew period) instead of a
	// candidate for the Lease "fence".
	Shards bool
	// RunLog, if set, is a file the handler appends a line to as each of
	// its runs starts and ends: "start|end <widget> <version> <identity>
	// <unix nanoseconds>".
	RunLog string
	// ConfigMaps makes the replica handle the ConfigMaps labelled
	// shard-test (their data.version) instead of Widgets.
	ConfigMaps bool
	// RecvLog, if set, is a file the replica appends a line to for each
	// ConfigMap its transport receives, in a list or a watch event:
	// "<name> <unix nanoseconds>" (see countReceived).
	RecvLog string
}

// Exit codes of a replica process.
const (
	replicaClean = 0 // Run returned nil
	replicaLost  = 3 // Run returned ErrLeadershipLost
)

// replicaMain runs a replica with the configuration raw and returns its
// exit code. It prints "ADDR <metrics> <probes>" once it serves them.
func replicaMain(raw string) int {
	var rc replicaConfig
	if err := json.Unmarshal([]byte(raw), &rc); err != nil {
		fmt.Fprintln(os.Stderr, "replica: bad", replicaEnv, err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	k8s.RouteKlog(logger)
	fail := func(err error) int {
		logger.Error("replica: failed", "err", err)
		return 1
	}
	cfg, err := k8s.LoadConfig(rc.Kubeconfig)
	if err != nil {
		return fail(err)
	}
	metrics, err := k8s.NewMetrics(nil)
	if err != nil {
		return fail(err)
	}
	opts := &k8s.Options{
		Config: cfg, Logger: logger, Metrics: metrics,
		Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{rc.Namespace}}},
		LeaderElection: &k8s.LeaderElection{Namespace: rc.Namespace, Name: "fence", Identity: rc.Identity,
			LeaseDuration: rc.Lease, RenewDeadline: rc.Renew, RetryPeriod: rc.Retry},
	}
	if rc.Shards {
		opts.LeaderElection = nil
		opts.Shards = &k8s.Shards{Namespace: rc.Namespace, Ring: "shards", Identity: rc.Identity,
			LeaseDuration: rc.Lease, RenewPeriod: rc.Retry}
	}
	if rc.ConfigMaps {
		opts.Resources = []k8s.Resource{{GVR: configMapsGVR, Namespaces: []string{rc.Namespace}, LabelSelector: "shard-test"}}
	}
	if rc.RecvLog != "" {
		recv, err := os.OpenFile(rc.RecvLog, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			return fail(err)
		}
		defer recv.Close()
		cfg.WrapTransport = countReceived(recv)
	}
	var runLog *os.File
	if rc.RunLog != "" {
		if runLog, err = os.OpenFile(rc.RunLog, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600); err != nil {
			return fail(err)
		}
		defer runLog.Close()
	}
	logRun := func(what, name string, v any) {
		if runLog != nil {
			_, _ = fmt.Fprintf(runLog, "%s %s %v %s %d\n", what, name, v, rc.Identity, time.Now().UnixNano())
		}
	}
	src, err := k8s.New(opts)
	if err != nil {
		return fail(err)
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		return fail(err)
	}
	on := opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.version"}}
	if rc.ConfigMaps {
		on = opbus.On{Kinds: []string{"ConfigMap"}, Fields: []string{"data.version"}}
	}
	err = bus.Handle("children", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		v, _, _ := unstructured.NestedFieldNoCopy(ev.New, "spec", "version")
		if rc.ConfigMaps {
			v, _, _ = unstructured.NestedFieldNoCopy(ev.New, "data", "version")
		}
		logRun("start", ev.Key.Name, v)
		defer logRun("end", ev.Key.Name, v)
		if runLog != nil {
			time.Sleep(10 * time.Millisecond) // long enough for an overlap to show
		}
		c := src.Client(ev)
		for i := range rc.Children {
			cm := map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprintf("%s-%d", ev.Key.Name, i)},
				"data":     map[string]any{"version": fmt.Sprint(v), "writer": rc.Identity},
			}
			if _, err := c.Apply(ctx, cm); err != nil {
				return opbus.Status{}, err
			}
		}
		return opbus.Active(fmt.Sprint("version ", v)), nil
	}, on)
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	sv, err := src.Serve(ctx, k8s.Flags{MetricsBindAddress: "127.0.0.1:0", HealthProbeBindAddress: "127.0.0.1:0"})
	if err != nil {
		return fail(err)
	}
	fmt.Printf("ADDR %s %s\n", sv.Metrics, sv.Probes)
	err = src.Run(ctx, bus)
	stop()
	_ = sv.Wait()
	switch {
	case err == nil:
		logger.Info("replica: stopped")
		return replicaClean
	case errors.Is(err, k8s.ErrLeadershipLost):
		logger.Info("replica: lost the Lease", "err", err)
		return replicaLost
	}
	return fail(err)
}

// replica is a replica process started by a test.
type replica struct {
	id              string
	cmd             *exec.Cmd
	metrics, probes string // host:port
	log             syncBuffer
	done            chan struct{}
	code            int // exit code, once done is closed
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startReplica starts this test binary as a replica with rc, waits until
// it serves its metrics and probes, and kills it at the end of the test.
func startReplica(t *testing.T, rc replicaConfig) *replica {
	t.Helper()
	raw, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{id: rc.Identity, done: make(chan struct{})}
	r.cmd = exec.Command(os.Args[0], "-test.run=^$")
	r.cmd.Env = append(os.Environ(), replicaEnv+"="+string(raw))
	r.cmd.Stderr = &r.log
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrs := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "ADDR" {
				addrs <- f[1:]
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		_ = r.cmd.Wait()
		r.code = r.cmd.ProcessState.ExitCode()
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGCONT)
		_ = r.cmd.Process.Kill()
		<-r.done
		if t.Failed() {
			t.Logf("replica %s log:\n%s", r.id, r.log.String())
		}
	})
	select {
	case a := <-addrs:
		r.metrics, r.probes = a[0], a[1]
	case <-r.done:
		t.Fatalf("replica %s exited with %d before serving:\n%s", r.id, r.code, r.log.String())
	case <-time.After(waitFor):
		t.Fatalf("replica %s did not serve within %v", r.id, waitFor)
	}
	return r
}

// signal sends sig to the replica.
func (r *replica) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("replica %s: %v: %v", r.id, sig, err)
	}
}

// exited reports whether the replica has exited.
func (r *replica) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// scrapeClient gives up on a replica that does not answer, such as one
// stopped by SIGSTOP.
var scrapeClient = &http.Client{Timeout: 300 * time.Millisecond}

// leader returns the replica's opbus_leader and whether it answered.
func (r *replica) leader() (float64, bool) {
	resp, err := scrapeClient.Get("http://" + r.metrics + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "opbus_leader "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f, true
			}
		}
	}
	return 0, false
}

// ready returns the status code of the replica's /readyz, 0 if it did not
// answer.
func (r *replica) ready() int {
	resp, err := scrapeClient.Get("http://" + r.probes + "/readyz")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
