// Package opbustest checks implementations of opbus's interfaces against
// their contracts, the way testing/fstest checks a file system: every Store
// runs the same suite, the in-memory one included.
package opbustest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/opbus/opbus"
)

// TestStore runs the Store conformance suite. newStore returns an empty
// store for each case; if the store also implements [opbus.Lister], its
// listing is checked too. Keys a store cannot represent can be left out
// with skip (return true for a key the store rejects by design, such as a
// name that is not a valid Kubernetes name); nil means every key.
func TestStore(t *testing.T, newStore func(t *testing.T) opbus.Store, skip func(opbus.Key) bool) {
	keys := []opbus.Key{
		{Kind: "Pod", Namespace: "default", Name: "web"},
		{Kind: "Pod", Namespace: "default", Name: "web-2"},
		{Kind: "Pod", Namespace: "other", Name: "web"},
		{Kind: "Widget", Name: "cluster-scoped"},
		{Kind: "unit", Name: "istio-gateway/0"},
		{Kind: "Pod", Namespace: "_", Name: "underscore-namespace"},
		{Kind: "Pod", Namespace: "default", Name: "dots.and.more"},
		{Kind: "Pod", Namespace: "default", Name: ".hidden"},
		{Kind: "ünïcode", Namespace: "ns", Name: "名前"},
		{Kind: "Pod", Namespace: "a%2Fb", Name: "percent"},
	}
	if skip != nil {
		keys = slices.DeleteFunc(slices.Clone(keys), skip)
	}
	ctx := context.Background()
	cases := []struct {
		name string
		why  string
		run  func(t *testing.T, s opbus.Store)
	}{
		{"missing", "Load of a key never saved returns nil and no error", func(t *testing.T, s opbus.Store) {
			data, err := s.Load(ctx, keys[0])
			if err != nil || data != nil {
				t.Fatalf("Load = %q, %v; want nil, nil", data, err)
			}
		}},
		{"round trip", "Save then Load returns the same bytes, for every key shape", func(t *testing.T, s opbus.Store) {
			for i, k := range keys {
				if err := s.Save(ctx, k, record(i)); err != nil {
					t.Fatalf("Save(%v): %v", k, err)
				}
			}
			for i, k := range keys {
				data, err := s.Load(ctx, k)
				if err != nil || !bytes.Equal(data, record(i)) {
					t.Fatalf("Load(%v) = %q, %v; want %q", k, data, err, record(i))
				}
			}
		}},
		{"overwrite", "a second Save replaces the record whole", func(t *testing.T, s opbus.Store) {
			must(t, s.Save(ctx, keys[0], []byte(`{"v":1,"digests":{"a":"`+string(bytes.Repeat([]byte("0"), 32))+`"}}`)))
			must(t, s.Save(ctx, keys[0], record(7)))
			data, err := s.Load(ctx, keys[0])
			if err != nil || !bytes.Equal(data, record(7)) {
				t.Fatalf("Load = %q, %v", data, err)
			}
		}},
		{"no aliasing", "changing the caller's slice after Save does not change the record", func(t *testing.T, s opbus.Store) {
			buf := record(1)
			must(t, s.Save(ctx, keys[0], buf))
			buf[len(buf)-2] = 'X'
			data, err := s.Load(ctx, keys[0])
			if err != nil || !bytes.Equal(data, record(1)) {
				t.Fatalf("Load = %q, %v", data, err)
			}
		}},
		{"delete", "Delete removes the record; deleting a missing one is no error", func(t *testing.T, s opbus.Store) {
			must(t, s.Save(ctx, keys[0], record(1)))
			must(t, s.Save(ctx, keys[1], record(2)))
			must(t, s.Delete(ctx, keys[0]))
			if data, err := s.Load(ctx, keys[0]); err != nil || data != nil {
				t.Fatalf("after Delete, Load = %q, %v", data, err)
			}
			if data, _ := s.Load(ctx, keys[1]); !bytes.Equal(data, record(2)) {
				t.Fatal("Delete removed another key's record")
			}
			must(t, s.Delete(ctx, keys[0]))
		}},
		{"concurrent keys", "saves of different keys from many goroutines all land", func(t *testing.T, s opbus.Store) {
			var wg sync.WaitGroup
			errs := make([]error, len(keys))
			for i, k := range keys {
				wg.Go(func() {
					for j := range 5 {
						if err := s.Save(ctx, k, record(i*10+j)); err != nil {
							errs[i] = err
						}
					}
				})
			}
			wg.Wait()
			for i, k := range keys {
				if errs[i] != nil {
					t.Fatalf("Save(%v): %v", k, errs[i])
				}
				if data, _ := s.Load(ctx, k); !bytes.Equal(data, record(i*10+4)) {
					t.Fatalf("Load(%v) = %q, want the last save", k, data)
				}
			}
		}},
		{"list", "a Lister lists exactly the keys with records", func(t *testing.T, s opbus.Store) {
			l, ok := s.(opbus.Lister)
			if !ok {
				return
			}
			for i, k := range keys {
				must(t, s.Save(ctx, k, record(i)))
			}
			must(t, s.Delete(ctx, keys[1]))
			got, err := l.Keys(ctx)
			must(t, err)
			want := slices.Delete(slices.Clone(keys), 1, 2)
			if !sameKeys(got, want) {
				t.Fatalf("Keys() = %v, want %v", got, want)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Log(c.why)
			c.run(t, newStore(t))
		})
	}
}

func record(i int) []byte { return fmt.Appendf(nil, `{"v":1,"values":{"n":"%d"}}`, i) }

func sameKeys(a, b []opbus.Key) bool {
	if len(a) != len(b) {
		return false
	}
	for _, k := range b {
		if !slices.Contains(a, k) {
			return false
		}
	}
	return true
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
