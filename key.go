package opbus

import (
	"fmt"
)

// Key identifies an object: its kind, namespace (empty for cluster-scoped
// objects and for Juju) and name.
type Key struct {
	Kind      string
	Namespace string
	Name      string
}

// String formats the key as "Kind namespace/name", or "Kind name" without a
// namespace.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

// validate reports a key that cannot name an object.
func (k Key) validate() error {
	if k.Kind == "" || k.Name == "" {
		return fmt.Errorf("opbus: object key kind=%q namespace=%q name=%q: an object needs a kind and a name", k.Kind, k.Namespace, k.Name)
	}
	return nil
}
