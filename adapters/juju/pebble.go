package juju

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultPebbleDir is the directory that holds, in a sidecar charm's
// container, one directory per workload container with its Pebble socket:
// /charm/containers/<name>/pebble.socket.
const DefaultPebbleDir = "/charm/containers"

// PebbleDirEnv is the environment variable that, when set, replaces
// [DefaultPebbleDir], so that tests can run charms against fake Pebble
// servers.
const PebbleDirEnv = "OPBUS_PEBBLE_DIR"

// ErrCannotConnect is wrapped by a [Container] error when Pebble could not
// be reached at all: the socket is missing or nobody listens on it, as
// while the workload container starts. A handler that finds it should
// wait for the container's pebble-ready hook rather than fail.
var ErrCannotConnect = errors.New("cannot connect to pebble")

// Container is a client of the Pebble that manages one workload container
// of a sidecar charm, through its REST API on a unix socket. Its methods
// may be called concurrently. Every error names the container and the
// socket; one Pebble returned is a *[PebbleError]. Each request, and each
// wait for a change, lasts at most Timeout: past it the call fails with
// an error wrapping [ErrPebbleTimeout] that names the call.
//
// A handler gets one with [Hook.Container]; a Container literal with Name
// and Socket works too. Each request opens its own connection, so a
// Container holds nothing open between calls and needs no closing.
type Container struct {
	// Name is the container's name, as metadata.yaml declares it.
	Name string
	// Socket is the path of its Pebble socket.
	Socket string
	// Timeout bounds each request and each wait for a change (a replan,
	// a start, a command's end); zero (or less) means
	// [DefaultPebbleTimeout].
	Timeout time.Duration

	once sync.Once
	http *http.Client
}

// NewContainer returns the client of the container name whose socket is
// <dir>/<name>/pebble.socket; empty dir means [DefaultPebbleDir]. It does
// not connect.
func NewContainer(name, dir string) *Container {
	if dir == "" {
		dir = DefaultPebbleDir
	}
	return &Container{Name: name, Socket: filepath.Join(dir, name, "pebble.socket")}
}

// Container returns the client of the workload container name, whose
// socket is in [Hook.PebbleDir], with [Hook.PebbleTimeout].
func (h *Hook) Container(name string) *Container {
	c := NewContainer(name, h.PebbleDir)
	c.Timeout = h.PebbleTimeout
	return c
}

// client returns the HTTP client that reaches the socket.
func (c *Container) client() *http.Client {
	c.once.Do(func() {
		c.http = &http.Client{Transport: &http.Transport{
			DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return c.dial(ctx) },
			DisableKeepAlives: true,
		}}
	})
	return c.http
}

// dial connects to the socket.
func (c *Container) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCannotConnect, err)
	}
	return conn, nil
}

// PebbleError is an error response of Pebble's API.
type PebbleError struct {
	// Container and Socket name the container.
	Container, Socket string
	// StatusCode is the HTTP status (0 for an error of one file in a
	// files request).
	StatusCode int
	// Kind is Pebble's error kind ("not-found", "permission-denied", …),
	// often empty.
	Kind string
	// Message is Pebble's message.
	Message string
}

// Error names the container, its socket and Pebble's message.
func (e *PebbleError) Error() string {
	return fmt.Sprintf("juju: container %q (socket %s): pebble: %s", e.Container, e.Socket, e.Message)
}

// Is reports whether target is [fs.ErrNotExist] and Pebble said that the
// file or directory was not found.
func (e *PebbleError) Is(target error) bool {
	return target == fs.ErrNotExist && e.Kind == "not-found"
}

// wrap names the container in an error that is not Pebble's own.
func (c *Container) wrap(err error, doing string) error {
	var pe *PebbleError
	if errors.As(err, &pe) {
		return err
	}
	if ue, ok := err.(*url.Error); ok {
		err = ue.Err // the request's URL is always the same socket's
	}
	return fmt.Errorf("juju: container %q (socket %s): %s: %w", c.Name, c.Socket, doing, err)
}

// response is the envelope of every Pebble API response.
type response struct {
	Type       string          `json:"type"`
	StatusCode int             `json:"status-code"`
	Change     string          `json:"change"`
	Result     json.RawMessage `json:"result"`
}

// errorResult is the result of an error response.
type errorResult struct {
	Message string `json:"message"`
	Kind    string `json:"kind"`
}

// do sends a request and decodes the result of a sync response into
// result (when not nil), within the container's timeout. For an async
// response it returns the change ID.
func (c *Container) do(ctx context.Context, method, path string, query url.Values, contentType string, body io.Reader, result any) (string, error) {
	u := "http://localhost" + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	bctx, cancel := bound(ctx, c.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(bctx, method, u, body)
	if err != nil {
		return "", err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return "", timedOut(bctx, err)
	}
	defer resp.Body.Close()
	change, err := c.decode(resp.Body, resp.StatusCode, result)
	if err != nil {
		return "", timedOut(bctx, err)
	}
	return change, nil
}

// decode reads a response envelope.
func (c *Container) decode(body io.Reader, status int, result any) (string, error) {
	var r response
	if err := json.NewDecoder(body).Decode(&r); err != nil {
		return "", fmt.Errorf("status %d with a body that is not a Pebble response: %w", status, err)
	}
	switch r.Type {
	case "error":
		var e errorResult
		if err := json.Unmarshal(r.Result, &e); err != nil || e.Message == "" {
			e.Message = fmt.Sprintf("status %d: %s", r.StatusCode, r.Result)
		}
		return "", &PebbleError{Container: c.Name, Socket: c.Socket, StatusCode: r.StatusCode, Kind: e.Kind, Message: e.Message}
	case "sync", "async":
	default:
		return "", fmt.Errorf("response of type %q, want sync, async or error", r.Type)
	}
	if result != nil && len(r.Result) > 0 && string(r.Result) != "null" {
		if err := json.Unmarshal(r.Result, result); err != nil {
			return "", fmt.Errorf("decoding the result: %w", err)
		}
	}
	return r.Change, nil
}

// PebbleInfo is what Pebble says of itself (its system-info).
type PebbleInfo struct {
	// Version is Pebble's version.
	Version string `json:"version"`
	// BootID identifies this run of Pebble: in a workload container,
	// where Pebble is the first process, it is new each time the
	// container starts, so a new one means a restarted container, with
	// none of the layers, services and pushed files of the last.
	BootID string `json:"boot-id"`
}

// Info returns Pebble's version and boot ID.
func (c *Container) Info(ctx context.Context) (*PebbleInfo, error) {
	info := new(PebbleInfo)
	if _, err := c.do(ctx, "GET", "/v1/system-info", nil, "", nil, info); err != nil {
		return nil, c.wrap(err, "system-info")
	}
	return info, nil
}

// SystemInfo returns the version of Pebble: a request that succeeds when
// Pebble is up, as a probe. [Container.Info] also returns the boot ID.
func (c *Container) SystemInfo(ctx context.Context) (version string, err error) {
	info, err := c.Info(ctx)
	if err != nil {
		return "", err
	}
	return info.Version, nil
}

// CanConnect reports whether Pebble answers a system-info request.
func (c *Container) CanConnect(ctx context.Context) bool {
	_, err := c.SystemInfo(ctx)
	return err == nil
}

// PushOptions are the optional attributes of a file [Container.Push]
// writes. The zero value writes with Pebble's defaults (permissions 0644,
// owned by Pebble's user) and fails when the directory is missing.
type PushOptions struct {
	// Permissions are the file's permission bits; 0 means 0644.
	Permissions fs.FileMode
	// MakeDirs makes the missing parent directories.
	MakeDirs bool
	// User and Group name the file's owner; empty means Pebble's.
	User, Group string
}

// Push writes data to the file at path (absolute) in the container,
// replacing it.
func (c *Container) Push(ctx context.Context, path string, data []byte, opts *PushOptions) error {
	if opts == nil {
		opts = &PushOptions{}
	}
	item := map[string]any{"path": path, "make-dirs": opts.MakeDirs}
	if opts.Permissions != 0 {
		item["permissions"] = fmt.Sprintf("%03o", opts.Permissions.Perm())
	}
	if opts.User != "" {
		item["user"] = opts.User
	}
	if opts.Group != "" {
		item["group"] = opts.Group
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Type":        {"application/json"},
		"Content-Disposition": {`form-data; name="request"`},
	})
	if err == nil {
		err = json.NewEncoder(part).Encode(map[string]any{"action": "write", "files": []any{item}})
	}
	if err == nil {
		part, err = mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":        {"application/octet-stream"},
			"Content-Disposition": {`form-data; name="files"; filename="` + quoteEscaper.Replace(path) + `"`},
		})
	}
	if err == nil {
		_, err = part.Write(data)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return c.wrap(err, "push "+path)
	}
	var results []fileResult
	if _, err := c.do(ctx, "POST", "/v1/files", nil, mw.FormDataContentType(), &body, &results); err != nil {
		return c.wrap(err, "push "+path)
	}
	return c.fileError(results, "push "+path)
}

// quoteEscaper escapes a file name in a quoted Content-Disposition
// parameter, as mime/multipart's CreateFormFile (and so Pebble) does.
var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"")

// fileResult is the result of one file of a files request.
type fileResult struct {
	Path  string       `json:"path"`
	Error *errorResult `json:"error"`
}

// fileError returns the error of the single file of a files request.
func (c *Container) fileError(results []fileResult, doing string) error {
	if len(results) != 1 {
		return c.wrap(fmt.Errorf("%d results, want 1", len(results)), doing)
	}
	if e := results[0].Error; e != nil {
		return &PebbleError{Container: c.Name, Socket: c.Socket, Kind: e.Kind, Message: e.Message}
	}
	return nil
}

// Pull returns the content of the file at path (absolute) in the
// container. A missing file is an error for which errors.Is(err,
// fs.ErrNotExist) holds.
func (c *Container) Pull(ctx context.Context, path string) ([]byte, error) {
	doing := "pull " + path
	bctx, cancel := bound(ctx, c.timeout())
	defer cancel()
	data, err := c.pull(bctx, path, doing)
	if err != nil {
		return nil, c.wrap(timedOut(bctx, err), doing)
	}
	return data, nil
}

// pull reads the file at path; doing names the call in Pebble's error
// for the file.
func (c *Container) pull(ctx context.Context, path, doing string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://localhost/v1/files?"+url.Values{"action": {"read"}, "path": {path}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "multipart/form-data")
	resp, err := c.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	mediaType, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/form-data" {
		if _, err := c.decode(resp.Body, resp.StatusCode, nil); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("response of type %q, want multipart/form-data", mediaType)
	}
	mr := multipart.NewReader(resp.Body, params["boundary"])
	var data []byte
	for {
		part, err := mr.NextPart()
		if err != nil {
			return nil, fmt.Errorf("reading the multipart response: %w", err)
		}
		switch part.FormName() {
		case "files":
			if data, err = io.ReadAll(part); err != nil {
				return nil, err
			}
		case "response":
			var results []fileResult
			if _, err := c.decode(part, resp.StatusCode, &results); err != nil {
				return nil, err
			}
			if err := c.fileError(results, doing); err != nil {
				return nil, err
			}
			if data == nil {
				return nil, errors.New("pebble's response has no content for the file")
			}
			return data, nil
		}
	}
}

// AddLayer adds layer to the plan under label. With combine, a layer
// already labelled so is combined with it (its services and checks merged
// or replaced as their Override says); without, an existing label is an
// error. The layer is sent as YAML in its JSON form, which YAML includes,
// with the characters Pebble's YAML reader refuses (U+007F, the C1
// controls, U+FFFE, U+FFFF) or folds (U+0085) escaped, so that any string
// reaches the plan unchanged. Nothing starts until [Container.Replan] or
// [Container.Start].
func (c *Container) AddLayer(ctx context.Context, label string, layer *Layer, combine bool) error {
	doing := "add layer " + strconv.Quote(label)
	y, err := json.Marshal(layer)
	if err != nil {
		return c.wrap(err, doing)
	}
	body, _ := json.Marshal(map[string]any{"action": "add", "combine": combine, "label": label, "format": "yaml", "layer": string(yamlSafeJSON(y))})
	if _, err := c.do(ctx, "POST", "/v1/layers", nil, "application/json", bytes.NewReader(body), nil); err != nil {
		return c.wrap(err, doing)
	}
	return nil
}

// Replan starts the services whose startup is enabled and restarts those
// whose definition changed since they started, and waits until Pebble is
// done.
func (c *Container) Replan(ctx context.Context) error { return c.services(ctx, "replan", nil) }

// Start starts the named services and waits until they have started.
func (c *Container) Start(ctx context.Context, names ...string) error {
	return c.services(ctx, "start", names)
}

// Stop stops the named services and waits until they have stopped.
func (c *Container) Stop(ctx context.Context, names ...string) error {
	return c.services(ctx, "stop", names)
}

// Restart stops and starts again the named services.
func (c *Container) Restart(ctx context.Context, names ...string) error {
	return c.services(ctx, "restart", names)
}

// services runs a services action and waits for its change.
func (c *Container) services(ctx context.Context, action string, names []string) error {
	doing := action + " " + strings.Join(names, ", ")
	if names == nil {
		names = []string{}
	}
	body, _ := json.Marshal(map[string]any{"action": action, "services": names})
	id, err := c.do(ctx, "POST", "/v1/services", nil, "application/json", bytes.NewReader(body), nil)
	if err != nil {
		return c.wrap(err, strings.TrimSpace(doing))
	}
	if _, err := c.wait(ctx, id); err != nil {
		return c.wrap(err, strings.TrimSpace(doing))
	}
	return nil
}

// change is what Pebble reports of a change.
type change struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Ready  bool   `json:"ready"`
	Err    string `json:"err"`
	Tasks  []struct {
		ID   string                     `json:"id"`
		Data map[string]json.RawMessage `json:"data"`
	} `json:"tasks"`
}

// wait waits until change id is ready: an error when it failed.
func (c *Container) wait(ctx context.Context, id string) (*change, error) {
	if id == "" {
		return nil, errors.New("an async response without a change")
	}
	var ch change
	if _, err := c.do(ctx, "GET", "/v1/changes/"+url.PathEscape(id)+"/wait", nil, "", nil, &ch); err != nil {
		return nil, err
	}
	if ch.Err != "" {
		return &ch, &PebbleError{Container: c.Name, Socket: c.Socket, Message: ch.Err}
	}
	return &ch, nil
}

// ServiceInfo is a service's status.
type ServiceInfo struct {
	Name string `json:"name"`
	// Startup is "enabled" or "disabled".
	Startup string `json:"startup"`
	// Current is "active", "inactive", "backoff" or "error".
	Current string `json:"current"`
}

// Services returns the status of the named services, or of all when no
// names are given, in Pebble's order (by name).
func (c *Container) Services(ctx context.Context, names ...string) ([]ServiceInfo, error) {
	var out []ServiceInfo
	if _, err := c.do(ctx, "GET", "/v1/services", namesQuery(names), "", nil, &out); err != nil {
		return nil, c.wrap(err, "services")
	}
	return out, nil
}

// CheckInfo is a health check's status.
type CheckInfo struct {
	Name string `json:"name"`
	// Level is "alive", "ready" or empty.
	Level string `json:"level"`
	// Status is "up", "down" or "inactive".
	Status string `json:"status"`
	// Failures counts the failures in a row; Threshold is how many make
	// the check down.
	Failures  int `json:"failures"`
	Threshold int `json:"threshold"`
}

// Checks returns the status of the named checks, or of all when no names
// are given, by name.
func (c *Container) Checks(ctx context.Context, names ...string) ([]CheckInfo, error) {
	var out []CheckInfo
	if _, err := c.do(ctx, "GET", "/v1/checks", namesQuery(names), "", nil, &out); err != nil {
		return nil, c.wrap(err, "checks")
	}
	return out, nil
}

// namesQuery is the names= query of a list request.
func namesQuery(names []string) url.Values {
	if len(names) == 0 {
		return nil
	}
	return url.Values{"names": {strings.Join(names, ",")}}
}
