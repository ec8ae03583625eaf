package opbus

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePathValid(t *testing.T) {
	tests := []struct {
		in   string
		want Path
		out  string // String() when it differs from in
	}{
		{"status", Path{MapKey("status")}, ""},
		{"status.containerStatuses", Path{MapKey("status"), MapKey("containerStatuses")}, ""},
		{"spec.containers[0].image", Path{MapKey("spec"), MapKey("containers"), ListIndex(0), MapKey("image")}, ""},
		{"status.containerStatuses[name=app].state", Path{MapKey("status"), MapKey("containerStatuses"), {Kind: SegMatch, Key: "name", Value: "app"}, MapKey("state")}, ""},
		{"status.conditions[*].status", Path{MapKey("status"), MapKey("conditions"), {Kind: SegAny}, MapKey("status")}, ""},
		{`metadata.annotations["example.com/x"]`, Path{MapKey("metadata"), MapKey("annotations"), MapKey("example.com/x")}, ""},
		{`metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`, Path{MapKey("metadata"), MapKey("annotations"), MapKey("kubectl.kubernetes.io/last-applied-configuration")}, ""},
		{"relations.istio-pilot", Path{MapKey("relations"), MapKey("istio-pilot")}, ""},
		{"a[12][3]", Path{MapKey("a"), ListIndex(12), ListIndex(3)}, ""},
		{"[0].name", Path{ListIndex(0), MapKey("name")}, ""},
		{`["a b"].c`, Path{MapKey("a b"), MapKey("c")}, ""},
		{`["plain"]`, Path{MapKey("plain")}, "plain"},
		{`a["quote\"d"]`, Path{MapKey("a"), MapKey(`quote"d`)}, ""},
		{`ports[containerPort=8080]`, Path{MapKey("ports"), {Kind: SegMatch, Key: "containerPort", Value: "8080"}}, ""},
		{`x[name="a]b"]`, Path{MapKey("x"), {Kind: SegMatch, Key: "name", Value: "a]b"}}, ""},
		{`x[name="app"]`, Path{MapKey("x"), {Kind: SegMatch, Key: "name", Value: "app"}}, "x[name=app]"},
		{"labels[*]", Path{MapKey("labels"), {Kind: SegAny}}, ""},
		{"a.b-c_d/e:f", Path{MapKey("a"), MapKey("b-c_d/e:f")}, ""},
		{"ünïcode.ключ", Path{MapKey("ünïcode"), MapKey("ключ")}, ""},
		{"a[007]", Path{MapKey("a"), ListIndex(7)}, "a[7]"},
		{`a[""]`, Path{MapKey("a"), MapKey("")}, ""},
		{`a["app name"=web]`, Path{MapKey("a"), {Kind: SegMatch, Key: "app name", Value: "web"}}, ""},
		{`a[""=""]`, Path{MapKey("a"), {Kind: SegMatch}}, ""},
		{`a["*"="x y"]`, Path{MapKey("a"), {Kind: SegMatch, Key: "*", Value: "x y"}}, `a["*"=x y]`},
		{`a["name"=app]`, Path{MapKey("a"), {Kind: SegMatch, Key: "name", Value: "app"}}, "a[name=app]"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePath(tt.in)
			if err != nil {
				t.Fatalf("ParsePath(%s): %v", tt.in, err)
			}
			if !got.Equal(tt.want) {
				t.Fatalf("ParsePath(%s) = %#v, want %#v", tt.in, got, tt.want)
			}
			want := tt.out
			if want == "" {
				want = tt.in
			}
			if s := got.String(); s != want {
				t.Fatalf("String() = %s, want %s", s, want)
			}
			again, err := ParsePath(got.String())
			if err != nil || !again.Equal(got) {
				t.Fatalf("round trip of %s: got %v, %v", got, again, err)
			}
		})
	}
}

// TestParsePathOtherSyntaxes: JSONPath, JSON Pointer and '==' matches are
// errors that say how opbus writes the same path.
func TestParsePathOtherSyntaxes(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"$.spec.version", "looks like JSONPath"},
		{"$['spec']", "looks like JSONPath"},
		{"/spec/version", "looks like a JSON Pointer"},
		{"status.conditions[type==Ready]", "a match has one '='"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParsePath(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.in) {
				t.Fatalf("ParsePath(%q) = %v, want an error naming the path that says %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestParsePathInvalid(t *testing.T) {
	tests := []struct {
		in     string
		offset int
		reason string // a fragment of what was expected
	}{
		{"", 0, "empty path"},
		{".status", 0, "leading dot"},
		{"status.", 7, "trailing dot"},
		{"spec..x", 5, "empty key between dots"},
		{"a[", 1, "unclosed '['"},
		{"a[0", 1, "unclosed '['"},
		{"a[]", 2, "empty brackets"},
		{"a[-1]", 2, "bad index -1"},
		{"a[1x]", 2, "bad index 1x"},
		{"a[99999999999999999999]", 2, "too large"},
		{"a]", 1, "no '[' is open"},
		{"a b", 1, "expected '.' or '['"},
		{`a."b"`, 2, "quoted key outside brackets"},
		{`a["b]`, 2, "unterminated quoted string"},
		{`a["b"`, 1, "unclosed '['"},
		{`a["b"x]`, 5, "expected ']'"},
		{"a[=x]", 2, "missing field name"},
		{"a[name=]", 7, "missing value"},
		{"a[name]", 6, "expected field=value"},
		{"a.[0]", 2, "'[' after '.'"},
		{"a[*", 1, "unclosed '['"},
		{"a[name= x]", 7, "white space around value"},
		{`a["\q"]`, 2, "bad quoted string"},
		{"a[0]b", 4, "expected '.' or '['"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParsePath(tt.in)
			if err == nil {
				t.Fatalf("ParsePath(%s): no error", tt.in)
			}
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *PathError", err)
			}
			if pe.Offset != tt.offset {
				t.Errorf("offset = %d, want %d (%v)", pe.Offset, tt.offset, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "field path "+tt.in+":") {
				t.Errorf("message %q does not quote the input %s as written", msg, tt.in)
			}
			if !strings.Contains(msg, tt.reason) {
				t.Errorf("message %q does not say %q", msg, tt.reason)
			}
		})
	}
}

func TestPathMatching(t *testing.T) {
	p := MustParsePath
	tests := []struct {
		pattern, concrete string
		covers, overlaps  bool
	}{
		{"status", "status", true, true},
		{"status", "status.phase", true, true},
		{"status.phase", "status", false, true},
		{"status.phase", "spec", false, false},
		{"status.conditions[*].status", "status.conditions[2].status", true, true},
		{"status.conditions[*].status", "status.conditions[2].reason", false, false},
		{"status.conditions[*].status", "status.conditions[2]", false, true},
		{"status.conditions[*]", "status.conditions[type=Ready].status", true, true},
		{"spec.containers[name=app]", "spec.containers[name=app].image", true, true},
		{"spec.containers[name=app]", "spec.containers[name=web].image", false, false},
		{"spec.containers[0]", "spec.containers[1]", false, false},
		{"spec.containers[0]", "spec.containers[0].image", true, true},
		{"metadata.labels[*]", "metadata.labels.app", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.concrete, func(t *testing.T) {
			pat, c := p(tt.pattern), p(tt.concrete)
			if got := pat.covers(c); got != tt.covers {
				t.Errorf("Covers = %v, want %v", got, tt.covers)
			}
			if got := pat.overlaps(c); got != tt.overlaps {
				t.Errorf("Overlaps = %v, want %v", got, tt.overlaps)
			}
		})
	}
	if !p("a.b.c").hasPrefix(p("a.b")) || p("a.b").hasPrefix(p("a.b.c")) || p("a[*]").hasPrefix(p("a[0]")) {
		t.Error("HasPrefix: wrong answer")
	}
	for _, c := range []struct {
		p, q string
		want bool
	}{
		{"status.conditions[type=Ready]", "status.conditions[type=Ready].status", true},
		{"status.conditions[type=Ready]", "status.conditions[*].status", false},
		{"status.conditions[*]", "status.conditions[type=Ready]", true},
		{"metadata.resourceVersion", "metadata.resourceVersion", true},
		{"metadata", "metadata.labels[*]", true},
		{"metadata.labels", "metadata", false},
	} {
		if got := p(c.p).coversAll(p(c.q)); got != c.want {
			t.Errorf("%s.coversAll(%s) = %v, want %v", c.p, c.q, got, c.want)
		}
	}
	if Path(nil).String() != "" || !p("a.b").hasPrefix(nil) {
		t.Error("root path: want empty string, prefix of everything")
	}
	if p("a.b").isPattern() || !p("a[*]").isPattern() || !p("a[k=v]").isPattern() {
		t.Error("IsPattern: wrong answer")
	}
}

func TestMustParsePathPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MustParsePath(\"a..b\") did not panic")
		}
	}()
	MustParsePath("a..b")
}

// hasPrefix reports whether q is a prefix of p, segment by segment: p is q
// itself or lies below it. Wildcards are compared literally, not matched.
func (p Path) hasPrefix(q Path) bool {
	return len(q) <= len(p) && p[:len(q)].Equal(q)
}
