package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/internal/explain"
)

// explainJuju explains the records of a Juju unit's state value, read
// from file ("-": stdin) as the state-get hook tool prints it (run with
// juju exec or juju ssh): the value itself, or with --format=json, a
// JSON string that holds it. With a key, only its record; without, every
// record of the value (the unit's and its application's), in key order.
func explainJuju(file string, stdin io.Reader, keys []opbus.Key, now time.Time) ([]*explain.Report, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("opbus explain: -juju-state: %w", err)
	}
	records, err := jujuRecords(data)
	if err != nil {
		return nil, fmt.Errorf("opbus explain: -juju-state %s: %w", file, err)
	}
	if len(keys) == 0 && len(records) == 0 {
		return nil, fmt.Errorf("opbus explain: -juju-state %s: no opbus records in it: expected what state-get prints for a unit whose charm runs opbus", file)
	}
	if len(keys) == 0 {
		for _, k := range slices.Sorted(maps.Keys(records)) {
			kind, name, _ := strings.Cut(k, " ")
			keys = append(keys, opbus.Key{Kind: kind, Name: name})
		}
	}
	var out []*explain.Report
	for _, key := range keys {
		raw, ok := records[key.String()]
		if !ok {
			return nil, fmt.Errorf("opbus explain: -juju-state %s: no record of %v: it holds %q", file, key, slices.Sorted(maps.Keys(records)))
		}
		r, err := explain.Read(explain.Key(key), raw, now)
		if err != nil {
			return nil, fmt.Errorf("opbus explain: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// jujuRecords reads the state value: a JSON object mapping each key's
// String form to its record, perhaps inside a JSON string (state-get
// --format=json).
func jujuRecords(data []byte) (map[string]json.RawMessage, error) {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0:
		return nil, fmt.Errorf("empty: expected what state-get prints for the charm's state key (%q by default)", "opbus")
	case data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("a JSON string that does not decode: %v", err)
		}
		data = []byte(s)
	}
	var records map[string]json.RawMessage
	if err := json.Unmarshal(data, &records); err != nil || records == nil {
		return nil, fmt.Errorf("not the records of opbus (a JSON object mapping keys such as \"unit app/0\" to records): %v", err)
	}
	return records, nil
}
