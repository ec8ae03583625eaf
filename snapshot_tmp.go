package opbus

import "encoding/json"

// Temporary: replaced by snapshot.go.
func encodeSnapshot(obj map[string]any) ([]byte, error) { return json.Marshal(obj) }
func decodeSnapshot(data []byte) (map[string]any, error) {
	var m map[string]any
	err := json.Unmarshal(data, &m)
	return m, err
}
