package jujutest

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/opbus/opbus/adapters/juju"
)

// customKey is the "example.com/path" form Pebble requires of a custom
// notice's key: a dotted domain, then one or more path elements.
var customKey = regexp.MustCompile(`^[a-z0-9-]+(\.[a-z0-9-]+)+(/[a-z0-9-]+)+$`)

// Notify records a custom notice, as the workload does with `pebble
// notify`, and returns its ID: the hook.notice-id of the
// <container>-pebble-custom-notice hook Juju would run.
func (p *Pebble) Notify(key string, data map[string]string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notify(key, data)
}

// notify records a notice. The caller holds p.mu.
func (p *Pebble) notify(key string, data map[string]string) string {
	now := time.Now().UTC()
	for _, n := range p.notices {
		if n.Type == "custom" && n.Key == key {
			n.Occurrences++
			n.LastData, n.LastOccurred = data, now
			return n.ID
		}
	}
	p.nextID++
	n := &juju.Notice{ID: strconv.Itoa(p.nextID), Type: "custom", Key: key, Occurrences: 1, LastData: data, FirstOccurred: now, LastOccurred: now}
	p.notices = append(p.notices, n)
	return n.ID
}

func (p *Pebble) postNotices(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Action string            `json:"action"`
		Type   string            `json:"type"`
		Key    string            `json:"key"`
		Data   map[string]string `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		errorResponse(w, http.StatusBadRequest, "", "cannot decode request body: %v", err)
		return
	}
	switch {
	case req.Action != "add":
		errorResponse(w, http.StatusBadRequest, "", "invalid action %q", req.Action)
	case req.Type != "custom":
		errorResponse(w, http.StatusBadRequest, "", `invalid type %q (can only add "custom" notices)`, req.Type)
	case !customKey.MatchString(req.Key):
		errorResponse(w, http.StatusBadRequest, "", `invalid key %q (must be in "example.com/path" format)`, req.Key)
	default:
		sync200(w, map[string]string{"id": p.Notify(req.Key, req.Data)})
	}
}

func (p *Pebble) getNotice(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range p.notices {
		if n.ID == id {
			sync200(w, n)
			return
		}
	}
	errorResponse(w, http.StatusNotFound, "", "cannot find notice with ID %q", id)
}
