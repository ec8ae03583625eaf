package opbus

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLevelOrderAndWords(t *testing.T) {
	order := []Level{LevelUnknown, LevelActive, LevelWaiting, LevelMaintenance, LevelBlocked, LevelError}
	words := []string{"unknown", "active", "waiting", "maintenance", "blocked", "error"}
	for i, l := range order {
		if i > 0 && !(order[i-1] < l) {
			t.Errorf("%v is not above %v", l, order[i-1])
		}
		if l.String() != words[i] {
			t.Errorf("String() = %q, want %q", l.String(), words[i])
		}
		b, err := l.MarshalText()
		if err != nil || string(b) != words[i] {
			t.Errorf("MarshalText(%v) = %s, %v", l, b, err)
		}
		var back Level
		if err := back.UnmarshalText(b); err != nil || back != l {
			t.Errorf("UnmarshalText(%s) = %v, %v", b, back, err)
		}
	}
	var l Level
	err := l.UnmarshalText([]byte("Blocked"))
	if err == nil || !strings.Contains(err.Error(), `"Blocked"`) || !strings.Contains(err.Error(), "maintenance") {
		t.Errorf("unknown word: got %v, want an error naming it and the valid words", err)
	}
	if _, err := Level(9).MarshalText(); err == nil {
		t.Error("Level(9).MarshalText: want an error")
	}
	if Level(9).String() != "Level(9)" {
		t.Errorf("Level(9).String() = %s", Level(9))
	}
}

func TestStatusJSON(t *testing.T) {
	b, err := json.Marshal(Blocked("no relation"))
	if err != nil || string(b) != `{"level":"blocked","message":"no relation"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	var s Status
	if err := json.Unmarshal([]byte(`{"level":"waiting","message":"m"}`), &s); err != nil || s != Waiting("m") {
		t.Fatalf("Unmarshal = %v, %v", s, err)
	}
	if err := json.Unmarshal([]byte(`{"level":"sleepy"}`), &s); err == nil {
		t.Fatal("unknown level word: want an error")
	}
	if !(Status{}).IsZero() || Active("").IsZero() {
		t.Error("IsZero: wrong answer")
	}
	if Blocked("x").String() != "blocked: x" || Active("").String() != "active" {
		t.Error("String: wrong format")
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name  string
		slots map[string]Status
		want  Status
	}{
		{"empty", nil, Status{}},
		{"only zero statuses", map[string]Status{"a": {}}, Status{}},
		{"highest wins", map[string]Status{"a": Active("fine"), "b": Waiting("later"), "c": Maintenance("busy")}, Maintenance("busy")},
		{"error over blocked", map[string]Status{"a": Blocked("b"), "z": ErrorStatus("boom")}, ErrorStatus("boom")},
		{"messages joined in slot-name order", map[string]Status{"zeta": Blocked("z"), "alpha": Blocked("a"), "mid": Blocked("")}, Blocked("a; z")},
		{"lower levels' messages left out", map[string]Status{"a": Waiting("w"), "b": Active("ok")}, Waiting("w")},
		{"unknown with a message", map[string]Status{"a": {Level: LevelUnknown, Message: "?"}}, Status{Level: LevelUnknown, Message: "?"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarize(tt.slots); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSlotsMotivatingCase is the ops bug opbus exists to fix: one handler
// going Active must not erase another handler's Blocked.
func TestSlotsMotivatingCase(t *testing.T) {
	s := Slots{}
	s.Set("a", Blocked("config item 'kind' must be set"))
	s.Set("b", Blocked("waiting for istio-pilot relation"))
	s.Set("a", Active(""))
	if got, want := s.Summary(), Blocked("waiting for istio-pilot relation"); got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
	s.Set("b", Status{})
	if _, ok := s.get("b"); ok {
		t.Error("setting the zero Status should clear the slot")
	}
	if got := s.Summary(); got != Active("") {
		t.Errorf("after b clears: got %v", got)
	}
	b, err := json.Marshal(Slots{"z": Active("1"), "a": ErrorStatus("2")})
	if err != nil || string(b) != `{"a":{"level":"error","message":"2"},"z":{"level":"active","message":"1"}}` {
		t.Errorf("JSON = %s, %v", b, err)
	}
	c := s.clone()
	delete(c, "a")
	if !s.equal(Slots{"a": Active("")}) || c.equal(s) || len(c.Names()) != 0 {
		t.Error("Clone/Clear/Equal/Names: wrong answer")
	}
}

// TestZeroStatusString: the zero Status says it is none, not "unknown".
func TestZeroStatusString(t *testing.T) {
	if got := (Status{}).String(); got != "(no status)" {
		t.Errorf("zero Status prints %q, want (no status)", got)
	}
	if got := (Status{Level: LevelUnknown, Message: "no data yet"}).String(); got != "unknown: no data yet" {
		t.Errorf("unknown with a message prints %q", got)
	}
}
