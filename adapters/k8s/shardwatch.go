package k8s

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// serverShards reports whether the API server applies shard selectors to
// lists and watches of resource gvr in namespace ns ("" for all): it lists
// one object with selector and looks for the selector echoed in the
// list's metadata.shardInfo (KEP-5866, feature gate ShardedListAndWatch).
// A server without the gate, or older than v1.36, ignores the selector
// and echoes nothing: the replica must then filter on its side.
func serverShards(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, selector string) (bool, error) {
	list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{ShardSelector: selector, Limit: 1})
	if err != nil {
		return false, fmt.Errorf("k8s: resource %s: listing with shard selector %q: %w", gvr.GroupResource(), selector, err)
	}
	return echoedShard(list) == selector, nil
}

// echoedShard returns the shard selector a list's metadata.shardInfo
// echoes, "" if none.
func echoedShard(list *unstructured.UnstructuredList) string {
	got, _, _ := unstructured.NestedString(list.Object, "metadata", "shardInfo", "selector")
	return got
}

// ownsObject reports whether obj falls in ranges: the hash of its shard
// uid ([shardUID]: its controller owner's, or its own) lies in one of them.
func ownsObject(ranges []ShardRange, obj map[string]any) bool {
	return inRanges(ranges, shardHash(shardUID(obj)))
}
