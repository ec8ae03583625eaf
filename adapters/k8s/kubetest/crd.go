package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/openapi"
)

const (
	// crdAPIVersion and crdKind are what every installed object must be.
	crdAPIVersion = "apiextensions.k8s.io/v1"
	crdKind       = "CustomResourceDefinition"
	// fieldManager owns the fields of the CRDs that kubetest applies.
	fieldManager = "opbus-kubetest"
	// crdTimeout caps the wait for CRDs to be established, served and
	// published.
	crdTimeout = 60 * time.Second
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs applies the given CustomResourceDefinitions and waits until
// the server has established them, serves every served version of their
// resources and publishes their schemas (/openapi/v3), so that the test can
// create objects of them at once and a Source started next checks its
// handlers' fields against them (without the wait, a few seconds after a
// CRD is served, a Source would skip the check). Each
// object is an [*unstructured.Unstructured] or a typed
// apiextensions.k8s.io/v1 CustomResourceDefinition; a typed one without
// apiVersion and kind is taken as one. Anything else fails the test.
//
// Installing is a server-side apply, so installing the same definition again,
// from another test or in parallel, changes nothing and returns quickly: a
// test can install what it needs without coordinating with the others. Two
// tests that install different definitions under one name overwrite each
// other. CRDs are cluster-wide and are not removed when the test ends: on a
// server that kubetest started they go with the server; on an existing
// cluster they stay, as after kubectl apply.
func (e *Env) InstallCRDs(t TB, crds ...runtime.Object) {
	t.Helper()
	objs := make([]*unstructured.Unstructured, 0, len(crds))
	for i, crd := range crds {
		u, err := crdObject(crd)
		if err != nil {
			t.Fatalf("kubetest: InstallCRDs: object %d: %v", i, err)
		}
		objs = append(objs, u)
	}
	if err := e.installCRDs(t.Context(), objs); err != nil {
		t.Fatal(err)
	}
}

// InstallCRDFiles installs, as [Env.InstallCRDs] does, the
// CustomResourceDefinitions in the named files, YAML or JSON, several per
// file when YAML documents are separated by "---". A path that is a
// directory stands for its files whose names end in .yaml, .yml or .json (not
// those of its subdirectories), such as a kubebuilder project's
// config/crd/bases. A missing path, a file that does not parse, or a
// document that is not a CustomResourceDefinition fails the test.
func (e *Env) InstallCRDFiles(t TB, paths ...string) {
	t.Helper()
	objs, err := readCRDFiles(paths)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.installCRDs(t.Context(), objs); err != nil {
		t.Fatal(err)
	}
}

// crdObject converts obj into an unstructured CustomResourceDefinition ready
// to apply: without status and the fields the server sets.
func crdObject(obj runtime.Object) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, errors.New("nil, want a CustomResourceDefinition")
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("%T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	// Typed objects usually come without apiVersion and kind; a typed
	// CustomResourceDefinition is known by its Go type's name, so that
	// kubetest need not require the module that defines it.
	if u.GetAPIVersion() == "" && u.GetKind() == "" && reflect.TypeOf(obj).Kind() == reflect.Pointer &&
		reflect.TypeOf(obj).Elem().Name() == crdKind {
		u.SetAPIVersion(crdAPIVersion)
		u.SetKind(crdKind)
	}
	if err := checkCRD(u); err != nil {
		return nil, err
	}
	return u, nil
}

// checkCRD reports an error if u is not a CustomResourceDefinition with a
// name, and removes what an apply must not carry.
func checkCRD(u *unstructured.Unstructured) error {
	if u.GetAPIVersion() != crdAPIVersion || u.GetKind() != crdKind {
		return fmt.Errorf("apiVersion %q kind %q, want %q %q", u.GetAPIVersion(), u.GetKind(), crdAPIVersion, crdKind)
	}
	if u.GetName() == "" {
		return errors.New("CustomResourceDefinition without metadata.name")
	}
	delete(u.Object, "status")
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	return nil
}

// readCRDFiles reads the CustomResourceDefinitions in the files at paths, a
// directory standing for its YAML and JSON files in name order.
func readCRDFiles(paths []string) ([]*unstructured.Unstructured, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("kubetest: CRD files: %w", err)
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("kubetest: CRD files: %w", err)
		}
		n := len(files)
		for _, entry := range entries {
			name := entry.Name()
			if !entry.IsDir() && (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.HasSuffix(name, ".json")) {
				files = append(files, filepath.Join(p, name))
			}
		}
		if len(files) == n {
			return nil, fmt.Errorf("kubetest: CRD files: directory %s has no .yaml, .yml or .json file", p)
		}
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		got, err := readCRDFile(f)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// readCRDFile reads the CustomResourceDefinitions in one file, skipping
// empty YAML documents.
func readCRDFile(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kubetest: CRD files: %w", err)
	}
	r := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("kubetest: %s: document %d: %w", path, doc, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("kubetest: %s: document %d: %w", path, doc, err)
		}
		if len(m) == 0 {
			continue // only comments or blank
		}
		u := &unstructured.Unstructured{Object: m}
		if err := checkCRD(u); err != nil {
			return nil, fmt.Errorf("kubetest: %s: document %d: %w", path, doc, err)
		}
		objs = append(objs, u)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("kubetest: %s: no CustomResourceDefinition in the file", path)
	}
	return objs, nil
}

// installCRDs applies objs and waits until they are established and their
// resources are served.
func (e *Env) installCRDs(ctx context.Context, objs []*unstructured.Unstructured) error {
	client, err := dynamic.NewForConfig(e.AdminConfig())
	if err != nil {
		return fmt.Errorf("kubetest: install CRDs: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(e.AdminConfig())
	if err != nil {
		return fmt.Errorf("kubetest: install CRDs: %w", err)
	}
	crds := client.Resource(crdResource)
	for _, u := range objs {
		_, err := crds.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		if err != nil {
			return fmt.Errorf("kubetest: apply CustomResourceDefinition %s: %w", u.GetName(), err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, crdTimeout)
	defer cancel()
	for _, u := range objs {
		if err := waitEstablished(ctx, crds, u.GetName()); err != nil {
			return err
		}
		if err := waitServed(ctx, disco, u); err != nil {
			return err
		}
		if err := waitPublished(ctx, disco, u); err != nil {
			return err
		}
	}
	return nil
}

// waitPublished polls the API server's OpenAPI v3 documents until that of
// every served version of the CRD's group holds the schema of its kind:
// the schema a Source checks its handlers' fields against, which the
// server publishes a few seconds after the resource is served.
func waitPublished(ctx context.Context, disco *discovery.DiscoveryClient, crd *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	client := openapi.NewClient(disco.RESTClient())
	for _, v := range versions {
		version, _ := v.(map[string]any)
		name, _ := version["name"].(string)
		if served, _ := version["served"].(bool); !served {
			continue
		}
		key := "apis/" + group + "/" + name
		for {
			if published(client, key, group, name, kind) {
				break
			}
			if err := pause(ctx); err != nil {
				return fmt.Errorf("kubetest: CustomResourceDefinition %s: the schema of %s in %s/%s is not published at /openapi/v3/%s: %w", crd.GetName(), kind, group, name, key, err)
			}
		}
	}
	return nil
}

// published reports whether the OpenAPI v3 document at key holds a schema
// of the kind of group and version.
func published(client openapi.Client, key, group, version, kind string) bool {
	paths, err := client.Paths()
	if err != nil {
		return false
	}
	gv, ok := paths[key]
	if !ok {
		return false
	}
	data, err := gv.Schema("application/json")
	if err != nil {
		return false
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				GVK []struct{ Group, Version, Kind string } `json:"x-kubernetes-group-version-kind"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return false
	}
	for _, s := range doc.Components.Schemas {
		for _, k := range s.GVK {
			if k.Group == group && k.Version == version && k.Kind == kind {
				return true
			}
		}
	}
	return false
}

// waitEstablished polls the CRD called name until its Established and
// NamesAccepted conditions are True. It fails at once when NamesAccepted is
// False, which does not change by waiting.
func waitEstablished(ctx context.Context, crds dynamic.NamespaceableResourceInterface, name string) error {
	state := "no conditions yet"
	for {
		got, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			state = err.Error()
		} else {
			conds := crdConditions(got)
			if c, ok := conds["NamesAccepted"]; ok && c.status == "False" {
				return fmt.Errorf("kubetest: CustomResourceDefinition %s: names not accepted: %s", name, c.message)
			}
			if conds["Established"].status == "True" && conds["NamesAccepted"].status == "True" {
				return nil
			}
			state = fmt.Sprintf("Established %q, NamesAccepted %q", conds["Established"].status, conds["NamesAccepted"].status)
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("kubetest: CustomResourceDefinition %s not established (%s): %w", name, state, err)
		}
	}
}

// waitServed polls discovery until every served version of the CRD's
// resource is listed.
func waitServed(ctx context.Context, disco discovery.DiscoveryInterface, crd *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		version, _ := v.(map[string]any)
		name, _ := version["name"].(string)
		if served, _ := version["served"].(bool); !served {
			continue
		}
		gv := group + "/" + name
		for {
			list, err := disco.ServerResourcesForGroupVersion(gv)
			if err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == plural }) {
				break
			}
			if err := pause(ctx); err != nil {
				return fmt.Errorf("kubetest: CustomResourceDefinition %s: %s not served in %s: %w", crd.GetName(), plural, gv, err)
			}
		}
	}
	return nil
}

// condition is the part of a CRD condition that the waits read.
type condition struct{ status, message string }

// crdConditions returns the status conditions of a CRD by type.
func crdConditions(crd *unstructured.Unstructured) map[string]condition {
	out := map[string]condition{}
	list, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range list {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		status, _ := m["status"].(string)
		message, _ := m["message"].(string)
		out[typ] = condition{status, message}
	}
	return out
}

// pause waits 50 ms, or returns the cause if ctx ends first.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(50 * time.Millisecond):
		return nil
	}
}
