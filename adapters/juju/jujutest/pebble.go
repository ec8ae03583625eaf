package jujutest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/internal/charmyaml"
)

// Pebble is a fake of Pebble's REST API for one workload container,
// listening on its unix socket as Pebble does, so that a charm's handlers
// using [juju.Container] can be tested offline, in process or as a
// process. It keeps in memory what Pebble keeps on the container: a
// filesystem of files pushed (directories are implicit), the layers added
// and the plan they combine to, the services' states and the checks'
// statuses. Changes complete at once; commands run through [ExecFunc].
// A test can give it what the container's image holds ([Pebble.WriteFile],
// [Pebble.SeedLayer]) and what the charm finds already there
// ([Pebble.AddLayer], [Pebble.StartServices]), restart the container
// ([Pebble.Restart]: a new boot ID, only the image's files and layers),
// and make it stop answering ([Pebble.StopAnswering]).
//
// It answers system-info, files (read one file, write), layers (add),
// plan, services (list, start, stop, restart, replan), checks (list),
// changes/<id>/wait, notices (add a custom one, read one), exec and the
// exec task's websockets; other requests get Pebble's not-found error. A layer is read in YAML's JSON form, which
// is what [juju.Container.AddLayer] sends; real YAML is refused.
//
// Its methods may be called while the charm runs.
type Pebble struct {
	// Name is the container's name; Socket is the path it listens on.
	Name, Socket string

	ln  net.Listener
	srv *http.Server

	mu       sync.Mutex
	bootID   string
	image    map[string]*pebbleFile // the files the image holds (WriteFile)
	files    map[string]*pebbleFile
	seeded   []*pebbleLayer // the layers the image holds (SeedLayer)
	layers   []*pebbleLayer
	running  map[string]string // service → the definition it started with (JSON)
	starts   map[string]int    // service → how many times it started
	checks   map[string]*juju.CheckInfo
	changes  map[string]*pebbleChange
	execs    map[string]*pebbleExec // by task ID
	nextID   int
	exec     ExecFunc
	notices  []*juju.Notice
	requests []string
	stalled  []string      // the requests that get no answer (StopAnswering)
	answer   chan struct{} // closed when they get one again
}

// pebbleFile is one file of the fake filesystem.
type pebbleFile struct {
	data []byte
	perm fs.FileMode
	user string
}

// pebbleLayer is one layer of the plan.
type pebbleLayer struct {
	label string
	layer map[string]any // the layer's JSON form
}

// pebbleChange is a change; ready is closed once it is done.
type pebbleChange struct {
	id, kind string
	ready    chan struct{}
	err      string
	taskID   string
	data     map[string]any
}

// PebbleDir returns a new directory, removed when the test ends, to hold
// the containers' sockets: the value of OPBUS_PEBBLE_DIR. It is made in
// the system's temporary directory, since a unix socket's path must be
// short (about 100 bytes) and t.TempDir's can be longer.
func PebbleDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pebble")
	if err != nil {
		t.Fatalf("jujutest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// StartPebble starts a fake Pebble for container name, listening on
// <dir>/<name>/pebble.socket, and stops it when the test ends.
func StartPebble(t testing.TB, dir, name string) *Pebble {
	t.Helper()
	p, err := ListenPebble(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// ListenPebble starts a fake Pebble for container name, listening on
// <dir>/<name>/pebble.socket, until [Pebble.Close].
func ListenPebble(dir, name string) (*Pebble, error) {
	sock := filepath.Join(dir, name, "pebble.socket")
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		return nil, fmt.Errorf("jujutest: pebble %q: %w", name, err)
	}
	os.Remove(sock) // a socket left by an earlier fake
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("jujutest: pebble %q: %w", name, err)
	}
	p := &Pebble{Name: name, Socket: sock, ln: ln, image: map[string]*pebbleFile{}}
	p.boot()
	p.srv = &http.Server{Handler: p.routes()}
	go p.srv.Serve(ln)
	return p, nil
}

// boot gives p what a Pebble has when its container starts: a new boot
// ID, the image's files and layers, no service running, no check status,
// change or notice. The caller holds p.mu, or p is new.
func (p *Pebble) boot() {
	var id [16]byte
	rand.Read(id[:])
	id[6], id[8] = id[6]&0x0f|0x40, id[8]&0x3f|0x80 // a version 4 UUID, as Pebble's
	h := hex.EncodeToString(id[:])
	p.bootID = h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	p.files = maps.Clone(p.image)
	p.layers = nil
	for _, l := range p.seeded {
		p.layers = append(p.layers, &pebbleLayer{label: l.label, layer: l.layer})
	}
	p.running = map[string]string{}
	p.starts = map[string]int{}
	p.checks = map[string]*juju.CheckInfo{}
	p.changes = map[string]*pebbleChange{}
	p.execs = map[string]*pebbleExec{}
	p.notices = nil
}

// Restart restarts the container, as Kubernetes does when its process
// dies or its pod moves: Pebble answers again on the same socket with a
// new boot ID and only what the image holds (the files of
// [Pebble.WriteFile], the layers of [Pebble.SeedLayer]); the files
// pushed, the layers added and the services started through the API are
// gone, and no service runs (Juju starts Pebble with --hold). Juju then
// runs <container>-pebble-ready. Requests keeps what was asked before.
func (p *Pebble) Restart() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.boot()
}

// BootID returns the boot ID Pebble's system-info gives, new at each
// [Pebble.Restart].
func (p *Pebble) BootID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bootID
}

// Close stops the fake: the socket is gone, so the container cannot be
// reached, as while it restarts.
func (p *Pebble) Close() error {
	err := p.srv.Close()
	os.Remove(p.Socket)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// routes returns the API's handler.
func (p *Pebble) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/system-info", func(w http.ResponseWriter, _ *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		sync200(w, map[string]any{"version": "1.0.0-jujutest", "boot-id": p.bootID})
	})
	mux.HandleFunc("GET /v1/files", p.getFiles)
	mux.HandleFunc("POST /v1/files", p.postFiles)
	mux.HandleFunc("POST /v1/layers", p.postLayers)
	mux.HandleFunc("GET /v1/plan", func(w http.ResponseWriter, r *http.Request) {
		if f := r.URL.Query().Get("format"); f != "yaml" {
			errorResponse(w, http.StatusBadRequest, "", "invalid format %q", f)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		sync200(w, charmyaml.Marshal(p.plan()))
	})
	mux.HandleFunc("GET /v1/services", p.getServices)
	mux.HandleFunc("POST /v1/services", p.postServices)
	mux.HandleFunc("GET /v1/checks", p.getChecks)
	mux.HandleFunc("GET /v1/changes/{id}/wait", p.waitChange)
	mux.HandleFunc("POST /v1/notices", p.postNotices)
	mux.HandleFunc("GET /v1/notices/{id}", p.getNotice)
	mux.HandleFunc("POST /v1/exec", p.postExec)
	mux.HandleFunc("GET /v1/tasks/{task}/websocket/{ws}", p.websocket)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		errorResponse(w, http.StatusNotFound, "", "invalid API endpoint requested")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := r.Method + " " + r.URL.Path
		p.mu.Lock()
		p.requests = append(p.requests, req)
		answer := p.answer
		if !slices.ContainsFunc(p.stalled, func(prefix string) bool { return strings.HasPrefix(req, prefix) }) {
			answer = nil
		}
		p.mu.Unlock()
		if answer != nil {
			select {
			case <-answer:
			case <-r.Context().Done():
				return // the client gave up, or the fake closed
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// StopAnswering makes the fake take the requests that start with one of
// prefixes ("POST /v1/layers", "GET /v1/changes") and answer none of them,
// as a Pebble whose container froze, until [Pebble.Answer]; no prefix
// means every request. The requests are recorded as they come.
func (p *Pebble) StopAnswering(prefixes ...string) {
	if len(prefixes) == 0 {
		prefixes = []string{""}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = slices.Clone(prefixes)
	if p.answer == nil {
		p.answer = make(chan struct{})
	}
}

// Answer makes the fake answer every request again, those it was holding
// too.
func (p *Pebble) Answer() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = nil
	if p.answer != nil {
		close(p.answer)
		p.answer = nil
	}
}

// Requests returns the requests made so far, as "METHOD /path", in order.
func (p *Pebble) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

// sync200 writes a sync response.
func sync200(w http.ResponseWriter, result any) {
	writeJSON(w, http.StatusOK, map[string]any{"type": "sync", "status-code": 200, "status": "OK", "result": result})
}

// async202 writes an async response for change id.
func async202(w http.ResponseWriter, id string, result any) {
	writeJSON(w, http.StatusAccepted, map[string]any{"type": "async", "status-code": 202, "status": "Accepted", "change": id, "result": result})
}

// errorResponse writes an error response.
func errorResponse(w http.ResponseWriter, status int, kind, format string, args ...any) {
	res := map[string]any{"message": fmt.Sprintf(format, args...)}
	if kind != "" {
		res["kind"] = kind
	}
	writeJSON(w, status, map[string]any{"type": "error", "status-code": status, "status": http.StatusText(status), "result": res})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// File returns the content of the file at path in the container's
// filesystem, and whether it exists.
func (p *Pebble) File(path string) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.files[path]
	if !ok {
		return nil, false
	}
	return slices.Clone(f.data), true
}

// FileMode returns the permissions of the file at path, or 0.
func (p *Pebble) FileMode(path string) fs.FileMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f, ok := p.files[path]; ok {
		return f.perm
	}
	return 0
}

// WriteFile puts a file in the container's filesystem as the image has
// it: it is there again after a [Pebble.Restart].
func (p *Pebble) WriteFile(path string, data []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := &pebbleFile{data: slices.Clone(data), perm: 0o644}
	p.files[path], p.image[path] = f, f
}

// dirExists reports whether some file is under dir (directories exist
// implicitly). The caller holds p.mu.
func (p *Pebble) dirExists(dir string) bool {
	if dir == "/" {
		return true
	}
	for name := range p.files {
		if strings.HasPrefix(name, dir+"/") {
			return true
		}
	}
	return false
}

// fileResult is one entry of a files response.
func fileResult(path string, err error) map[string]any {
	r := map[string]any{"path": path}
	if err != nil {
		kind := "generic-file-error"
		if errors.Is(err, fs.ErrNotExist) {
			kind = "not-found"
		}
		r["error"] = map[string]any{"message": err.Error(), "kind": kind}
	}
	return r
}

func (p *Pebble) getFiles(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if a := q.Get("action"); a != "read" {
		errorResponse(w, http.StatusBadRequest, "", "invalid action %q", a)
		return
	}
	paths := q["path"]
	mw := multipart.NewWriter(w)
	w.Header().Set("Content-Type", mw.FormDataContentType())
	w.WriteHeader(http.StatusOK)
	results := make([]any, 0, len(paths))
	for _, name := range paths {
		p.mu.Lock()
		f, ok := p.files[name]
		var data []byte
		if ok {
			data = slices.Clone(f.data)
		}
		p.mu.Unlock()
		if !ok {
			results = append(results, fileResult(name, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}))
			continue
		}
		part, _ := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":        {"application/octet-stream"},
			"Content-Disposition": {`form-data; name="files"; filename="` + quoteEscaper.Replace(name) + `"`},
		})
		part.Write(data)
		results = append(results, fileResult(name, nil))
	}
	part, _ := mw.CreatePart(textproto.MIMEHeader{
		"Content-Type":        {"application/json"},
		"Content-Disposition": {`form-data; name="response"`},
	})
	json.NewEncoder(part).Encode(map[string]any{"type": "sync", "status-code": 200, "status": "OK", "result": results})
	mw.Close()
}

func (p *Pebble) postFiles(w http.ResponseWriter, r *http.Request) {
	mediaType, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mediaType != "multipart/form-data" {
		errorResponse(w, http.StatusBadRequest, "", `must use multipart with "write" action`)
		return
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	part, err := mr.NextPart()
	if err != nil || part.FormName() != "request" {
		errorResponse(w, http.StatusBadRequest, "", `cannot read request metadata: first part must be "request"`)
		return
	}
	var req struct {
		Action string `json:"action"`
		Files  []struct {
			Path        string `json:"path"`
			MakeDirs    bool   `json:"make-dirs"`
			Permissions string `json:"permissions"`
			User        string `json:"user"`
		} `json:"files"`
	}
	if err := json.NewDecoder(part).Decode(&req); err != nil {
		errorResponse(w, http.StatusBadRequest, "", "cannot decode request metadata: %v", err)
		return
	}
	if req.Action != "write" {
		errorResponse(w, http.StatusBadRequest, "", `multipart action must be "write", got %q`, req.Action)
		return
	}
	results := make([]any, 0, len(req.Files))
	for _, item := range req.Files {
		part, err := mr.NextPart()
		if err != nil || part.FormName() != "files" || partFilename(part) != item.Path {
			errorResponse(w, http.StatusBadRequest, "", "expected a files part for %q", item.Path)
			return
		}
		data, err := io.ReadAll(part)
		if err != nil {
			errorResponse(w, http.StatusBadRequest, "", "reading %q: %v", item.Path, err)
			return
		}
		results = append(results, fileResult(item.Path, p.write(item.Path, data, item.Permissions, item.User, item.MakeDirs)))
	}
	sync200(w, results)
}

// quoteEscaper escapes a file name in a quoted Content-Disposition
// parameter, as Pebble's mime/multipart does.
var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"")

// partFilename is the whole filename of a part (FileName keeps only its
// last element).
func partFilename(part *multipart.Part) string {
	_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	return params["filename"]
}

// write writes one file as a files request asks.
func (p *Pebble) write(name string, data []byte, permissions, user string, makeDirs bool) error {
	if !path.IsAbs(name) {
		return fmt.Errorf("paths must be absolute, got %q", name)
	}
	perm := fs.FileMode(0o644)
	if permissions != "" {
		n, err := strconv.ParseUint(permissions, 8, 32)
		if err != nil || len(permissions) < 3 || len(permissions) > 4 {
			return fmt.Errorf("file permissions must be a 3- or 4-digit octal string, got %q", permissions)
		}
		perm = fs.FileMode(n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if dir := path.Dir(name); !makeDirs && !p.dirExists(dir) {
		return &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	p.files[name] = &pebbleFile{data: data, perm: perm, user: user}
	return nil
}
