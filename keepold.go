package opbus

import (
	"bytes"

	"github.com/opbus/opbus/internal/jsonvalue"
)

// keepOld stores in the record the value of h's fields in the state h
// has just handled (On.KeepOld), as a snapshot of the object cut down to
// them; d.new is that state.
func (b *Bus) keepOld(d *pass, h *handler) {
	snap, err := encodeSnapshot(project(d.new, h.fields))
	switch {
	case err != nil:
		b.cfg.log.Warn("opbus: KeepOld: the handled value cannot be stored; Old will be nil after a restart", "key", d.ks.key.String(), "handler", h.id, "err", err)
		snap = nil
	case len(snap) > maxKeptOld:
		b.cfg.log.Warn("opbus: KeepOld: the handled value is too large to keep; Old will be nil after a restart", "key", d.ks.key.String(), "handler", h.id, "bytes", len(snap), "max", maxKeptOld)
		snap = nil
	}
	if snap == nil {
		if _, ok := d.rec.Olds[h.id]; ok {
			delete(d.rec.Olds, h.id)
			d.dirty = true
		}
		return
	}
	if old, ok := d.rec.Olds[h.id]; ok && bytes.Equal(old, snap) {
		return
	}
	if d.rec.Olds == nil {
		d.rec.Olds = map[string][]byte{}
	}
	d.rec.Olds[h.id] = snap
	d.dirty = true
}

// keptOld returns the value h last handled as the record keeps it, or nil.
func (d *pass) keptOld(h *handler) map[string]any {
	snap, ok := d.rec.Olds[h.id]
	if !ok {
		return nil
	}
	obj, err := decodeSnapshot(snap)
	if err != nil { // checked when the record was read
		return nil
	}
	return obj
}

// project returns obj cut down to what fields reach: for each, the value
// at its longest prefix of map keys (a field that starts with a list
// segment keeps the whole object); see [jsonvalue.Project].
func project(obj map[string]any, fields []Path) map[string]any {
	keys := make([][]string, len(fields))
	for i, f := range fields {
		for _, s := range f {
			if s.Kind != SegKey {
				break
			}
			keys[i] = append(keys[i], s.Key)
		}
	}
	return jsonvalue.Project(obj, keys)
}
