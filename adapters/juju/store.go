package juju

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/opbus/opbus"
)

// DefaultStateKey is the key of the unit's state (state-get/state-set)
// under which [Run] keeps the bus's records.
const DefaultStateKey = "opbus"

// stateStore is an [opbus.Store] over the unit's state in the controller.
// All records live in one state value, a JSON object mapping each key's
// String form to its record, so a dispatch costs one state-get (on the
// first Load) and at most one state-set (flush, once the dispatch is over,
// only when a record changed). Saves are buffered until then: Juju applies
// state-set only when the hook exits 0 anyway.
type stateStore struct {
	tools Tools
	key   string

	mu      sync.Mutex
	loaded  bool
	loadErr error  // the stored value is not ours to read
	stored  []byte // the value as state-get returned it
	records map[string]json.RawMessage
	dirty   bool
	// upgrade, during upgrade-charm, makes every handler run again and
	// drops the slots of removed handlers from the records read.
	upgrade *upgrade
	// ready, during <container>-pebble-ready, holds the handlers whose
	// digests are forgotten (pebbleready.go).
	ready map[string]bool
}

var _ opbus.Store = (*stateStore)(nil)

// Load implements [opbus.Store]. The first call reads the state value.
func (s *stateStore) Load(ctx context.Context, key opbus.Key) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded {
		v, err := s.tools.StateGetKey(ctx, s.key)
		if err != nil {
			return nil, err
		}
		s.loaded = true
		s.stored = []byte(v)
		s.records = map[string]json.RawMessage{}
		if v != "" {
			err := json.Unmarshal(s.stored, &s.records)
			if err == nil && s.records == nil {
				err = errors.New("it is null")
			}
			if err != nil {
				s.records = nil
				s.loadErr = fmt.Errorf("juju: state key %q does not hold a JSON object of records: %v", s.key, err)
			}
		}
		if s.loadErr == nil && s.upgrade != nil && s.upgrade.apply(s.records) {
			s.dirty = true
		}
		if s.loadErr == nil && forgetDigests(s.records, s.ready) {
			s.dirty = true
		}
	}
	if s.loadErr != nil {
		// The bus reports it and runs no handler; the value is never
		// overwritten, because a failed dispatch writes nothing.
		return nil, &opbus.RecordError{Key: key, Err: s.loadErr}
	}
	return s.records[key.String()], nil
}

// cleared reports whether upgrade-charm dropped slots from key's record.
func (s *stateStore) cleared(key opbus.Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.upgrade != nil && s.upgrade.cleared[key.String()]
}

// Save implements [opbus.Store]: it buffers data until flush.
func (s *stateStore) Save(ctx context.Context, key opbus.Key, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records == nil {
		return fmt.Errorf("juju: saving the record of %v before loading it", key)
	}
	s.records[key.String()] = slices.Clone(data)
	s.dirty = true
	return nil
}

// Delete implements [opbus.Store]: it buffers the deletion until flush.
func (s *stateStore) Delete(ctx context.Context, key opbus.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[key.String()]; ok {
		delete(s.records, key.String())
		s.dirty = true
	}
	return nil
}

// flush writes the records with one state-set when they differ from what
// state-get returned, and reports whether it wrote. A value over Juju's
// limit is an error naming its size and the limit.
func (s *stateStore) flush(ctx context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dirty || s.loadErr != nil {
		return false, nil
	}
	value, err := json.Marshal(s.records) // keys sorted: the same records encode alike
	if err != nil {
		return false, fmt.Errorf("juju: encoding the records: %w", err)
	}
	if len(s.records) == 0 {
		value = nil
	}
	if bytes.Equal(value, s.stored) {
		return false, nil
	}
	if len(value) > MaxStateValue {
		return false, fmt.Errorf("juju: the records in state key %q take %d bytes, more than Juju's limit of %d bytes for a state value: keep what handlers persist small", s.key, len(value), MaxStateValue)
	}
	if value == nil {
		err = s.tools.StateDelete(ctx, s.key)
	} else {
		err = s.tools.StateSet(ctx, map[string]string{s.key: string(value)})
	}
	if err != nil {
		return false, err
	}
	s.stored, s.dirty = value, false
	return true, nil
}
