package k8s_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// countReceived returns a WrapTransport that logs to out, as
// "<name> <unix nanoseconds>", every ConfigMap received in the response
// to a list or watch of ConfigMaps: a list's items, a watch's ADDED,
// MODIFIED and DELETED events. What the transport delivers is what the
// API server sent, before any filtering of the replica's.
func countReceived(out *os.File) func(http.RoundTripper) http.RoundTripper {
	var mu sync.Mutex
	note := func(name string) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = fmt.Fprintf(out, "%s %d\n", name, time.Now().UnixNano())
	}
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if err != nil || req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/configmaps") || resp.StatusCode != http.StatusOK {
				return resp, err
			}
			pr, pw := io.Pipe()
			resp.Body = teeBody{io.TeeReader(resp.Body, pw), resp.Body, pw}
			watching := req.URL.Query().Get("watch") == "true"
			go func() {
				defer pr.Close()
				dec := json.NewDecoder(pr)
				type object struct {
					Metadata struct {
						Name string `json:"name"`
					} `json:"metadata"`
				}
				if !watching {
					var list struct{ Items []object }
					if dec.Decode(&list) == nil {
						for _, o := range list.Items {
							note(o.Metadata.Name)
						}
					}
					_, _ = io.Copy(io.Discard, pr)
					return
				}
				for {
					var ev struct {
						Type   string `json:"type"`
						Object object `json:"object"`
					}
					if dec.Decode(&ev) != nil {
						_, _ = io.Copy(io.Discard, pr)
						return
					}
					switch ev.Type {
					case "ADDED", "MODIFIED", "DELETED":
						note(ev.Object.Metadata.Name)
					}
				}
			}()
			return resp, nil
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// teeBody is a response body read through a tee; closing it closes the
// tee's pipe, so that its reader ends.
type teeBody struct {
	io.Reader
	body io.Closer
	pw   *io.PipeWriter
}

func (b teeBody) Close() error {
	_ = b.pw.Close()
	return b.body.Close()
}
