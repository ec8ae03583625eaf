package k8s

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// noInformers is an Informers that has none, for the checks made before
// any informer is asked for.
type noInformers struct{}

func (noInformers) Informer(context.Context, schema.GroupVersionResource, schema.GroupVersionKind) (Informer, error) {
	return nil, nil
}
