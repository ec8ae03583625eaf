package k8s

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/opbus/opbus"
)

// maxPageObjects bounds the objects the explain page lists, so that a
// page of a large cluster stays small and quick.
const maxPageObjects = 500

// troubled reports whether a handler's reason puts its object on the
// explain page: failing, retrying, or waiting (for an Again, or behind
// another state of the object).
func troubled(h *opbus.HandlerExplanation) bool {
	switch h.Reason {
	case opbus.ReasonFailed, opbus.ReasonFailedPermanently, opbus.ReasonHeld, opbus.ReasonCoalesced:
		return true
	case opbus.ReasonScheduled:
		return h.Again
	}
	return false
}

// pageRow is an object on the explain page and its troubled handlers.
type pageRow struct {
	Key      string
	Link     string // its explanation, relative to the page
	Handlers []opbus.HandlerExplanation
}

var explainPage = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>opbus: objects with failing, retrying or waiting handlers</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}.failed,.failed-permanently{color:#b00}</style>
</head><body>
<h1>Objects with failing, retrying or waiting handlers</h1>
<p>{{.Watched}} objects watched{{if .Truncated}} (the first {{.Limit}} looked at){{end}}; {{len .Rows}} listed. Each links to its explanation (JSON).</p>
{{if .Rows}}<table><tr><th>Object</th><th>Handler</th><th>Reason</th><th>Why</th></tr>
{{range $r := .Rows}}{{range $i, $h := $r.Handlers}}<tr>{{if eq $i 0}}<td rowspan="{{len $r.Handlers}}"><a href="{{$r.Link}}">{{$r.Key}}</a></td>{{end}}<td>{{$h.ID}}</td><td class="{{$h.Reason}}">{{$h.Reason}}</td><td>{{$h.Detail}}{{if $h.Error}}<br>error: {{$h.Error}}{{end}}</td></tr>
{{end}}{{end}}</table>{{else}}<p>None: every handler of every watched object is handled, or scheduled on its period.</p>{{end}}
</body></html>
`))

// servePage writes the explain page: the watched objects, in key order,
// whose handlers fail, retry or wait, read from the informers' caches and
// explained by bus.
func (s *Source) servePage(ctx context.Context, w http.ResponseWriter, bus *opbus.Bus) {
	keys := s.watchedKeys()
	data := struct {
		Watched, Limit int
		Truncated      bool
		Rows           []pageRow
	}{Watched: len(keys), Limit: maxPageObjects, Truncated: len(keys) > maxPageObjects}
	for _, key := range keys[:min(len(keys), maxPageObjects)] {
		why, err := bus.Explain(ctx, key)
		if err != nil {
			continue // a record it cannot read: its JSON explanation says why
		}
		row := pageRow{Key: key.String(), Link: "?" + url.Values{"kind": {key.Kind}, "namespace": {key.Namespace}, "name": {key.Name}}.Encode()}
		for _, h := range why.Handlers {
			if troubled(&h) {
				row.Handlers = append(row.Handlers, h)
			}
		}
		if len(row.Handlers) > 0 {
			data.Rows = append(data.Rows, row)
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_ = explainPage.Execute(w, data)
}

// watchedKeys returns the keys of the objects in the informers' caches,
// sorted; none before Run has started them.
func (s *Source) watchedKeys() []opbus.Key {
	s.mu.Lock()
	kinds := s.kinds
	s.mu.Unlock()
	var keys []opbus.Key
	for _, r := range kinds {
		objs, _ := r.list("") // an informer that cannot list: its objects are left out
		for _, u := range objs {
			keys = append(keys, r.key(u))
		}
	}
	slices.SortFunc(keys, func(a, b opbus.Key) int { return strings.Compare(a.String(), b.String()) })
	return keys
}
