package k8s

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KindOf returns the Kind that the [opbus.Key] of an object of gk carries:
// the kind alone in the core group ("Pod", "ConfigMap"), the kind qualified
// with its group everywhere else ("Deployment.apps",
// "Widget.example.com"), the form of [schema.GroupKind.String]. Two groups
// may well both define a kind named Widget; their objects never share keys,
// records or handlers. Versions are left out: an object is the same object
// in every version of its group, so a [Source] watches one version of each
// kind. Use the same strings in [opbus.On].Kinds.
func KindOf(gk schema.GroupKind) string {
	return gk.String()
}
