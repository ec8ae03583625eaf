package k8s

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// conflictManager finds the field manager in the message of a server-side
// apply conflict's cause: `conflict with "opbus/a" using v1`.
var conflictManager = regexp.MustCompile(`conflict with "([^"]+)"`)

// applyChild applies data to the child name without Force first. A field
// another handler of this operator applied with another value is then an
// error naming that handler, since forcing would make the two take the
// field from each other at every run, each run changing what the other
// reads; a field of any other manager (kubectl, another controller) is
// taken over with a second, forced apply, as controllers do.
func (c *Client) applyChild(ctx context.Context, api dynamic.ResourceInterface, name string, data []byte) (*unstructured.Unstructured, error) {
	force := false
	out, err := api.Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: c.manager, Force: &force})
	if err == nil || !apierrors.IsConflict(err) {
		return out, err
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil, err
	}
	prefix := FieldManager(c.s.name, "")
	var ours, fields []string
	for _, cause := range status.Status().Details.Causes {
		if cause.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		m := conflictManager.FindStringSubmatch(cause.Message)
		if m == nil || !strings.HasPrefix(m[1], prefix) || m[1] == c.manager {
			continue
		}
		if h := strings.TrimPrefix(m[1], prefix); !slices.Contains(ours, h) {
			ours = append(ours, h)
		}
		fields = append(fields, cause.Field)
	}
	if len(ours) > 0 {
		who := "handler " + strconv.Quote(ours[0])
		if len(ours) > 1 {
			who = fmt.Sprintf("handlers %q", ours)
		}
		return nil, fmt.Errorf("%s applied another value to %s: two handlers of one operator cannot own one field, or each would take it from the other at every run; "+
			"let one of them apply it (%w)", who, strings.Join(fields, ", "), err)
	}
	force = true
	return api.Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: c.manager, Force: &force})
}
