package filestore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLayout pins the file of each key: the layout is the format on disk,
// and a directory written by one build must read back in the next.
func TestLayout(t *testing.T) {
	tests := []struct {
		key           Key
		record, extra string // paths under the root; extra is the sidecar
	}{
		{Key{"Pod", "default", "web-0"}, "Pod/default/web-0.json", ""},
		{Key{"Node", "", "node.example.com"}, "Node/_/node.example.com.json", ""},
		{Key{"unit", "", "app/0"}, "unit/_/app%2F0.json", ""},
		{Key{"ConfigMap", "kube-system", ".hidden name_x"}, "ConfigMap/kube-system/%2Ehidden%20name%5Fx.json", ""},
		{Key{"Widget", "_", "é%~"}, "Widget/%5F/%C3%A9%25%7E.json", ""},
		{Key{"Pod", "default", strings.Repeat("a", 253)},
			"Pod/default/~32859a3ab65ac52932e16fad6060653636d6746f52b4cb205f4f121569c499f5.json",
			"Pod/default/~32859a3ab65ac52932e16fad6060653636d6746f52b4cb205f4f121569c499f5.key"},
		{Key{strings.Repeat("K", 300), "ns", "n"},
			"~61e1921fd2d8dd4cbc277fab8715cc0d3a9bdc976c5560d597918d3b17ac45e9/ns/n.json",
			"~61e1921fd2d8dd4cbc277fab8715cc0d3a9bdc976c5560d597918d3b17ac45e9/ns/n.key"},
		{Key{"Pod", "default", strings.Repeat("b", MaxComponent)}, "Pod/default/" + strings.Repeat("b", MaxComponent) + ".json", ""},
	}
	for _, tc := range tests {
		record, sidecar := paths("/r", tc.key)
		wantSidecar := ""
		if tc.extra != "" {
			wantSidecar = "/r/" + tc.extra
		}
		if record != "/r/"+tc.record || sidecar != wantSidecar {
			t.Errorf("paths(%v): got %s, %q, want /r/%s, %q", tc.key, record, sidecar, tc.record, wantSidecar)
		}
	}
}

// TestEscapeRoundTrip checks that every byte string escapes to a safe
// file name that unescapes back to it.
func TestEscapeRoundTrip(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, s := range []string{"", ".", "..", ".a", "a.b", "%", "%4", "%41", "~x", "_", string(all)} {
		e := Escape(s)
		if got := Unescape(e); got != s {
			t.Errorf("Unescape(Escape(%q)): got %q", s, got)
		}
		if strings.ContainsAny(e, "/\\\x00~_") || strings.HasPrefix(e, ".") {
			t.Errorf("Escape(%q) = %q: want no separator, NUL, '~', '_' or leading '.'", s, e)
		}
	}
}

// TestKeysSkipsWhatIsNoRecord: temporary files, sidecars alone and files
// at another depth are not records.
func TestKeysSkipsWhatIsNoRecord(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	long := Key{"Pod", "default", strings.Repeat("a", 253)}
	if err := d.Save(long, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := d.Save(Key{"Pod", "", "x"}, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Pod/_/.tmp-123", "Pod/_/.tmp-9.json", "Pod/x.json", "a/b/c/d.json", "Pod/_/y.key", "Pod/_/z.txt"} {
		p := filepath.Join(d.Root(), f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := d.Keys(t.Context())
	if err != nil || len(keys) != 2 || keys[0] != (Key{"Pod", "", "x"}) || keys[1] != long {
		t.Fatalf("Keys: got %v, %v, want Pod x and the long key", keys, err)
	}
	if err := d.Delete(long); err != nil {
		t.Fatal(err)
	}
	record, sidecar := paths(d.Root(), long)
	for _, p := range []string{record, sidecar} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("after Delete: %s: got %v, want it gone", p, err)
		}
	}
}

// TestSidecarErrors: a hashed record whose sidecar is missing, malformed
// or names a key of another file is an error naming the file.
func TestSidecarErrors(t *testing.T) {
	long := Key{"Pod", "default", strings.Repeat("a", 253)}
	tests := []struct {
		name, sidecar, want string
	}{
		{"missing", "", "key file of"},
		{"malformed", "opbus key v1\nPod\n", "expected \"opbus key v1\" and three lines"},
		{"another key", string(encodeKeyFile(Key{"Pod", "default", strings.Repeat("c", 253)})), "belongs in"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Save(long, []byte("{}")); err != nil {
				t.Fatal(err)
			}
			_, sidecar := paths(d.Root(), long)
			if tc.sidecar == "" {
				err = os.Remove(sidecar)
			} else {
				err = os.WriteFile(sidecar, []byte(tc.sidecar), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.Keys(t.Context()); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "~32859a3a") {
				t.Errorf("Keys: got %v, want an error with %q naming the file", err, tc.want)
			}
		})
	}
}
