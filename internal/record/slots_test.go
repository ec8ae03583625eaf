package record

import (
	"encoding/json"
	"testing"
)

type status struct {
	Level   string `json:"level"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

func parts(s status) ([]byte, string, string, error) {
	return []byte(s.Level), s.Message, s.Reason, nil
}

func TestAppendSlots(t *testing.T) {
	tests := []map[string]status{
		nil,
		{"b": {Level: "active"}, "a": {Level: "blocked", Message: "<no> \"quotes\"", Reason: "Why"}},
	}
	for _, s := range tests {
		got, err := AppendSlots([]byte("{"), `"slots":`, s, parts)
		if err != nil {
			t.Fatal(err)
		}
		want := "{"
		if len(s) > 0 {
			b, _ := json.Marshal(s)
			want += `"slots":` + string(b)
		}
		if string(got) != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

func TestCheckSlots(t *testing.T) {
	if err := CheckSlots(map[string]status{"a": {Level: "active"}}); err != nil {
		t.Errorf("got %v, want nil", err)
	}
	err := CheckSlots(map[string]status{"b": {}, "a": {Level: "active"}, "c": {}})
	if got, want := err, `slot "b": empty status`; got == nil || got.Error() != want {
		t.Errorf("got %v, want %s", got, want)
	}
}
