package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// ServiceClusterIPRange is the --service-cluster-ip-range of an API server
// that kubetest starts: room for 65,534 Services with a ClusterIP.
const ServiceClusterIPRange = "10.0.0.0/16"

// Names of the programs in the [BinVar] directory.
const (
	etcdProgram      = "etcd"
	apiServerProgram = "kube-apiserver"
)

const (
	// readyTimeout caps the wait for etcd and kube-apiserver to be ready.
	readyTimeout = 120 * time.Second
	// stopGrace is how long a program may take to exit after SIGTERM.
	// kube-apiserver takes about 3 s.
	stopGrace = 15 * time.Second
	// adminUser is the system:masters user of the local server.
	adminUser = "opbus-admin"
)

// localServer is an etcd and a kube-apiserver that kubetest started.
type localServer struct {
	bin     string // directory with the programs
	dir     string // data, certificates and logs
	apiURL  string // https://127.0.0.1:port
	apiArgs []string
	etcd    *process

	mu  sync.Mutex // guards api
	api *process
}

// launch starts etcd and kube-apiserver from the programs in bin, keeping
// their files in dir, and waits until the API server is ready. It retries
// with other ports when a port it picked was taken in the meantime. ctx
// bounds only the start; the programs run until stop.
func launch(ctx context.Context, bin, dir string, extra []string) (*Env, error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tokens := map[string]string{adminUser: rand.Text(), OperatorUser: rand.Text()}
	if err := writeCredentials(dir, tokens); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		s, ca, err := startLocal(ctx, bin, dir, tokens[adminUser], extra)
		if err == nil {
			admin := &rest.Config{
				Host:            s.apiURL,
				BearerToken:     tokens[adminUser],
				TLSClientConfig: rest.TLSClientConfig{CAData: ca},
				QPS:             100,
				Burst:           200,
			}
			return &Env{admin: admin, tokens: tokens, local: s}, nil
		}
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
		// Another process took a port between picking and binding it. Start
		// over with fresh ports and an empty etcd.
		if err := os.RemoveAll(filepath.Join(dir, "etcd")); err != nil {
			return nil, fmt.Errorf("kubetest: %w", err)
		}
	}
}

// startLocal starts etcd and kube-apiserver on fresh ports. It returns the
// server and the API server's CA certificate, or stops whatever it started
// and returns an error.
func startLocal(ctx context.Context, bin, dir, adminToken string, extra []string) (_ *localServer, ca []byte, _ error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	s := &localServer{
		bin:    bin,
		dir:    dir,
		apiURL: "https://127.0.0.1:" + strconv.Itoa(ports[2]),
		apiArgs: []string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(ports[2]),
			"--cert-dir=" + filepath.Join(dir, "certs"),
			"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
			"--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + filepath.Join(dir, "sa.key"),
			"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
			// 65,534 ClusterIPs: a test may create thousands of
			// Services (a /24 stopped at 254).
			"--service-cluster-ip-range=" + ServiceClusterIPRange,
			"--endpoint-reconciler-type=none",
			"--disable-admission-plugins=ServiceAccount",
			// Without this, an open watch holds up SIGTERM for the whole
			// request timeout (60 s); with it, shutdown takes about 1 s.
			"--shutdown-watch-termination-grace-period=2s",
		},
	}
	s.apiArgs = append(s.apiArgs, extra...)
	s.etcd, err = startProcess(etcdProgram, filepath.Join(bin, etcdProgram), []string{
		"--name=default",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}, filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, nil, err
	}
	err = waitFor(ctx, s.etcd, func(ctx context.Context) bool {
		return get(ctx, http.DefaultClient, etcdURL+"/health") == nil
	})
	if err == nil {
		ca, err = s.startAPIServer(ctx, adminToken)
	}
	if err != nil {
		return nil, nil, errors.Join(err, s.stop())
	}
	return s, ca, nil
}

// startAPIServer starts kube-apiserver and waits until it is ready.
func (s *localServer) startAPIServer(ctx context.Context, adminToken string) (ca []byte, err error) {
	api, err := startProcess(apiServerProgram, filepath.Join(s.bin, apiServerProgram), s.apiArgs,
		filepath.Join(s.dir, "kube-apiserver.log"))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.api = api
	s.mu.Unlock()
	var client *http.Client
	err = waitFor(ctx, api, func(ctx context.Context) bool {
		if client == nil {
			// The API server writes its self-signed certificate at start.
			ca = readCertificate(filepath.Join(s.dir, "certs", "apiserver.crt"))
			if ca == nil {
				return false
			}
			c, err := rest.HTTPClientFor(&rest.Config{
				Host:            s.apiURL,
				BearerToken:     adminToken,
				TLSClientConfig: rest.TLSClientConfig{CAData: ca},
			})
			if err != nil {
				return false
			}
			client = c
		}
		return get(ctx, client, s.apiURL+"/readyz") == nil
	})
	if client != nil {
		client.CloseIdleConnections()
	}
	return ca, err
}

// restartAPIServer stops kube-apiserver and starts it again with the same
// port, etcd and certificates. It returns how long the stop took.
func (s *localServer) restartAPIServer(ctx context.Context, adminToken string) (stopped time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	s.mu.Lock()
	api := s.api
	s.api = nil
	s.mu.Unlock()
	begin := time.Now()
	if api != nil {
		if err := api.stop(stopGrace); err != nil {
			return 0, err
		}
	}
	stopped = time.Since(begin)
	_, err = s.startAPIServer(ctx, adminToken)
	return stopped, err
}

// stop stops kube-apiserver, then etcd.
func (s *localServer) stop() error {
	s.mu.Lock()
	api := s.api
	s.api = nil
	s.mu.Unlock()
	var errs []error
	if api != nil {
		errs = append(errs, api.stop(stopGrace))
	}
	if s.etcd != nil {
		errs = append(errs, s.etcd.stop(stopGrace))
	}
	return errors.Join(errs...)
}

// waitFor calls ready every 100 ms until it reports true. It fails, with the
// end of the program's log, if p exits or ctx ends first.
func waitFor(ctx context.Context, p *process, ready func(context.Context) bool) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if ready(ctx) {
			return nil
		}
		select {
		case <-p.done:
			return p.exitError("exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("kubetest: %s not ready: %w%s", p.name, context.Cause(ctx), p.logTail())
		case <-tick.C:
		}
	}
}

// get reports, as a nil error, whether url answers 200 OK.
func get(ctx context.Context, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// readCertificate returns the PEM certificate in the file at path, or nil if
// the file does not hold a complete one yet.
func readCertificate(path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil
	}
	if _, err := x509.ParseCertificate(block.Bytes); err != nil {
		return nil
	}
	return data
}

// freePorts returns n distinct ports that were free on 127.0.0.1 a moment
// ago.
func freePorts(n int) ([]int, error) {
	// Hold every listener until all are picked, so that the ports differ.
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("kubetest: pick a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeCredentials writes the API server's token file and its
// service-account signing key into dir.
func writeCredentials(dir string, tokens map[string]string) error {
	// One line per user: token,user,uid[,"group,..."].
	csv := tokens[adminUser] + "," + adminUser + "," + adminUser + ",system:masters\n" +
		tokens[OperatorUser] + "," + OperatorUser + "," + OperatorUser + "\n"
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(csv), 0o600); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("kubetest: service-account key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("kubetest: service-account key: %w", err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), pemKey, 0o600); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	return nil
}
