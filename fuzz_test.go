package opbus

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzCompareApply checks Apply(a, Compare(a, b)) == b on JSON documents.
func FuzzCompareApply(f *testing.F) {
	f.Add([]byte(`{"a":1}`), []byte(`{"a":2,"b":[1,2]}`))
	f.Add([]byte(`[1,[2,3],{"x":null}]`), []byte(`[1,[3],{"x":{}},4]`))
	f.Add([]byte(`"s"`), []byte(`{"s":"s"}`))
	f.Fuzz(func(t *testing.T, x, y []byte) {
		var a, b any
		if json.Unmarshal(x, &a) != nil || json.Unmarshal(y, &b) != nil {
			return
		}
		d := Compare(a, b)
		got, err := apply(a, d)
		if err != nil {
			t.Fatalf("Apply(%s, %v): %v", x, d, err)
		}
		if !Equal(got, b) {
			t.Fatalf("Apply(%s, Compare(.., %s)) = %s", x, y, jsonText(got))
		}
		if len(Compare(a, a)) != 0 || (len(d) == 0) != Equal(a, b) {
			t.Fatalf("Compare disagrees with Equal on %s, %s", x, y)
		}
	})
}

// FuzzParsePath checks that ParsePath never panics and that String
// round-trips whatever parses.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"a.b", "a[0]", "a[*].b", `a["x.y"]`, "a[name=x]", `a[k="v w"]`, `a["k w"=v]`, "a..b", "[", `a["\u00e9"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			return
		}
		q, err := ParsePath(p.String())
		if err != nil {
			t.Fatalf("ParsePath(%q).String() = %q does not parse: %v", s, p.String(), err)
		}
		if !q.Equal(p) {
			t.Fatalf("round trip of %q: %#v became %#v", s, p, q)
		}
	})
}

// FuzzDecodeRecord checks that stored bytes, however corrupt, decode to a
// record or to a RecordError — never a panic — and that whatever decodes
// encodes back to something that decodes to the same record.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":1,"digests":{"h":"AAAAAAAAAAAAAAAAAAAAAA"},"slots":{"h":{"level":"blocked","message":"m"}},"retries":{"h":2},"values":{"fsm/pod":"running"}}`))
	f.Add([]byte(`{"v":1,"pending":{"deleted":true,"object":{"a":[1,{"b":null}]}},"failed":{"x":"AAAAAAAAAAAAAAAAAAAAAA"}}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`null`))
	index := map[string]int{"h": 0}
	ids := []string{"h"}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeRecord(podKey, data, index)
		if err != nil {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("error %v is not ErrCorruptRecord", err)
			}
			return
		}
		again, err := r.encode(ids)
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		r2, err := decodeRecord(podKey, again, index)
		if err != nil {
			t.Fatalf("re-encoded record %s does not decode: %v", again, err)
		}
		third, _ := r2.encode(ids)
		if string(third) != string(again) {
			t.Fatalf("encoding is not stable:\n%s\n%s", again, third)
		}
	})
}

// FuzzGet checks that typed reads of any JSON document by any path never
// panic, agree with Lookup, and fail only with errors that start with
// "opbus:" — absent, wrong type, or a path that does not parse.
func FuzzGet(f *testing.F) {
	f.Add([]byte(`{"spec":{"replicas":3,"containers":[{"name":"app","port":80}]}}`), "spec.containers[name=app].port")
	f.Add([]byte(`{"spec":{"replicas":3.5,"tags":["a",1]}}`), "spec.replicas")
	f.Add([]byte(`{"a":{"b":null}}`), "a.b.c")
	f.Add([]byte(`{"a":[[1],{"x":"y"}]}`), "a[1].x")
	f.Fuzz(func(t *testing.T, data []byte, path string) {
		var doc map[string]any
		if json.Unmarshal(data, &doc) != nil {
			return
		}
		check := func(err error) {
			if err != nil && !strings.HasPrefix(err.Error(), "opbus: ") {
				t.Fatalf("Get(%s, %q): error without the prefix: %v", data, path, err)
			}
		}
		v, err := Get[any](doc, path)
		check(err)
		if err == nil {
			want, ok := lookup(doc, MustParsePath(path))
			if !ok || !Equal(v, want) || v == nil {
				t.Fatalf("Get(%s, %q) = %v, Lookup = %v, %t", data, path, v, want, ok)
			}
		}
		_, err = Get[int](doc, path)
		check(err)
		_, err = Get[[]string](doc, path)
		check(err)
		_, err = Get[struct {
			Name string         `json:"name"`
			Port int8           `json:"port"`
			Tags map[string]int `json:"tags"`
		}](doc, path)
		check(err)
	})
}
