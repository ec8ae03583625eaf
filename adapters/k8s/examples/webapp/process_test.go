package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The operator binary, built once for every test of the package.
var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// build compiles the operator into a temporary directory.
func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "webapp-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "webapp")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// operatorProcess is the operator running as a process of its own, as it
// runs in a cluster.
type operatorProcess struct {
	cmd             *exec.Cmd
	metrics, probes string // host:port
	mu              sync.Mutex
	log             bytes.Buffer
	done            chan struct{}
	exitErr         error
}

// Write collects the operator's log.
func (p *operatorProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Write(b)
}

// logText returns what the operator logged so far.
func (p *operatorProcess) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// startOperator runs the operator with kubeconfig and args, on free ports
// for its metrics and probes, and stops it at the end of the test.
func startOperator(t *testing.T, kubeconfig string, args ...string) *operatorProcess {
	t.Helper()
	p := &operatorProcess{metrics: freeAddr(t), probes: freeAddr(t), done: make(chan struct{})}
	args = append([]string{"--metrics-bind-address=" + p.metrics, "--health-probe-bind-address=" + p.probes}, args...)
	p.cmd = exec.Command(build(t), args...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exitErr = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("operator log:\n%s", p.logText())
		}
	})
	return p
}

// stop sends SIGTERM, as the kubelet does, and waits for a clean exit.
func (p *operatorProcess) stop(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.exitErr != nil {
			t.Errorf("operator exited with %v after SIGTERM", p.exitErr)
		}
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("operator did not stop within 60s of SIGTERM")
	}
}

// get GETs path on addr and returns the status code and body; code 0 when
// nothing answers.
func get(addr, path string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the sum of the samples of the metric name whose labels
// include every one of labels (such as `handler="ready"`), from the
// operator's /metrics.
func (p *operatorProcess) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	code, body := get(p.metrics, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	var sum float64
lines:
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue lines
			}
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// freeAddr returns a local address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
