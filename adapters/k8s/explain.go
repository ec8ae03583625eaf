package k8s

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/internal/explain"
)

// RecordAnnotation returns the annotation in which the operator called
// operator (its [Options].Name; "" for the default) keeps its record of
// each object: [AnnotationRecord] for the default.
func RecordAnnotation(operator string) string { return namesFor(operator).record }

// ExplainObject explains, from the record the operator called operator
// keeps on it (see [RecordAnnotation]), why each handler the record names
// did or did not run for u, as of now: the same report as
// [opbus.Bus.Explain], for what a stored record can tell (rule 45 of
// docs/semantics.md). The record's incarnation is compared with u's
// metadata.uid. An object without the annotation, or with it empty, is an
// error saying the operator has not recorded anything for it.
func ExplainObject(u *unstructured.Unstructured, operator string, now time.Time) (*opbus.Explanation, error) {
	key := explain.Key{Kind: KindOf(u.GroupVersionKind().GroupKind()), Namespace: u.GetNamespace(), Name: u.GetName()}
	ann := RecordAnnotation(operator)
	data, ok := u.GetAnnotations()[ann]
	if !ok || data == "" {
		return nil, fmt.Errorf("k8s: explain %v: no record in annotation %s: the operator (Options.Name %q) has not committed anything for the object, or does not watch it", key, ann, operator)
	}
	r, err := explain.Read(key, []byte(data), now)
	if err != nil {
		return nil, fmt.Errorf("k8s: explain %v: annotation %s: %w", key, ann, err)
	}
	r.Observed = true
	r.Deleted = u.GetDeletionTimestamp() != nil
	if uid := string(u.GetUID()); r.Incarnation != "" && r.Incarnation != uid {
		r.Notes = append(r.Notes, fmt.Sprintf("the record is of incarnation %s, the object's uid is %s: a new object of the same name, whose record the operator has not written yet", r.Incarnation, uid))
	}
	return r, nil
}

// ExplainHandler serves GET ?kind=K&namespace=NS&name=N: the explanation
// ([opbus.Bus.Explain]) of that object, as JSON, from the bus Run runs;
// 400 for a missing kind or name, 503 before Run. Without a query it
// serves an HTML page listing the watched objects (the first 500, in key
// order) whose handlers fail, retry, wait for an Again or are held, each
// linking to its explanation. It writes nothing, and shows digests,
// statuses, times and error texts, never object values. [Source.Serve]
// mounts it at /explain with [Flags].ServeExplain; inside a
// controller-runtime manager, mount it on the manager's metrics server
// (metricsserver.Options.ExtraHandlers["/explain"]).
func (s *Source) ExplainHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "k8s: /explain: only GET", http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		key := opbus.Key{Kind: q.Get("kind"), Namespace: q.Get("namespace"), Name: q.Get("name")}
		bus := s.bus.Load()
		switch {
		case bus == nil:
			http.Error(w, "k8s: /explain: the operator is not running yet", http.StatusServiceUnavailable)
			return
		case len(q) == 0:
			s.servePage(r.Context(), w, bus)
			return
		case key.Kind == "" || key.Name == "":
			http.Error(w, "k8s: /explain: expected ?kind=KIND&namespace=NAMESPACE&name=NAME, kind as in opbus keys (\"Pod\", \"Widget.example.com\"), or no query for the page of objects with failing, retrying or waiting handlers", http.StatusBadRequest)
			return
		}
		why, err := bus.Explain(r.Context(), key)
		var re *opbus.RecordError
		switch {
		case errors.As(err, &re):
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(why)
	})
}
