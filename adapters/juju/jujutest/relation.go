package jujutest

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// relation-ids [--format=…] <endpoint>
func (m *Model) relationIDs(c *call) *result {
	if bad := c.parse(withFormat(flagSet{})); bad != nil {
		return bad
	}
	if len(c.pos) == 0 {
		return usage("no endpoint name specified")
	}
	if bad := noMore(c.pos[1:]); bad != nil {
		return bad
	}
	var rels []*Relation
	for i := range m.Relations {
		if m.Relations[i].Endpoint == c.pos[0] {
			rels = append(rels, &m.Relations[i])
		}
	}
	slices.SortFunc(rels, func(a, b *Relation) int { return cmp.Compare(a.ID, b.ID) })
	ids := []string{}
	for _, r := range rels {
		ids = append(ids, relationName(r))
	}
	return output(c, ids)
}

// relation-list -r <id> [--app] [--format=…]
func (m *Model) relationList(c *call) *result {
	if bad := c.parse(withFormat(relationFlags(nil, []string{"app"}))); bad != nil {
		return bad
	}
	r, bad := m.relation(c)
	if bad != nil {
		return bad
	}
	if bad := noMore(c.pos); bad != nil {
		return bad
	}
	if c.bools["app"] {
		return output(c, r.RemoteApp)
	}
	units := slices.Clone(r.RemoteUnits)
	if units == nil {
		units = []string{}
	}
	slices.Sort(units)
	return output(c, units)
}

// relation-get -r <id> [--app] [--format=…] <key|-> <unit|app>
func (m *Model) relationGet(c *call) *result {
	if bad := c.parse(withFormat(relationFlags(nil, []string{"app"}))); bad != nil {
		return bad
	}
	r, bad := m.relation(c)
	if bad != nil {
		return bad
	}
	if len(c.pos) < 2 {
		return usage("no unit or application specified")
	}
	if bad := noMore(c.pos[2:]); bad != nil {
		return bad
	}
	key, member := c.pos[0], c.pos[1]
	if key == "-" {
		key = ""
	}
	data, bad := m.readData(r, member, c.bools["app"])
	if bad != nil {
		return bad
	}
	if key == "" {
		return output(c, nonNil(data))
	}
	if v, found := data[key]; found {
		return output(c, v)
	}
	return output(c, nil)
}

// readData returns the data of a unit or application in r, as the local
// unit may read it.
func (m *Model) readData(r *Relation, member string, app bool) (map[string]string, *result) {
	name := relationName(r)
	if !app {
		switch {
		case member == m.Unit:
			return m.unitData(r), nil
		case slices.Contains(r.RemoteUnits, member):
			return r.RemoteUnitsData[member], nil
		}
		if d, found := r.RemoteUnitsData[member]; found {
			return d, nil // departed, still readable
		}
		return nil, fail("cannot read settings for unit %q in relation %q: unit %q: settings not found", member, name, member)
	}
	if a, _, isUnit := strings.Cut(member, "/"); isUnit {
		member = a
	}
	switch member {
	case m.app():
		// The local application's data is the leader's to read, except
		// in a peer relation, where it is shared by every unit.
		if !m.Leader && r.RemoteApp != m.app() {
			return nil, fail("permission denied")
		}
		return m.appData(r), nil
	case r.RemoteApp:
		return r.RemoteAppData, nil
	}
	return nil, fail("cannot read settings for application %q in relation %q: application not found", member, name)
}

// relation-set -r <id> [--app] [--file <path|->] [key=value …]
func (m *Model) relationSet(c *call) *result {
	if bad := c.parse(relationFlags([]string{"file", "format"}, []string{"app"})); bad != nil {
		return bad
	}
	r, bad := m.relation(c)
	if bad != nil {
		return bad
	}
	settings, bad := settingsInput(c)
	if bad != nil {
		return bad
	}
	app := c.bools["app"]
	if app && !m.Leader {
		return fail("cannot write relation settings: permission denied (unit is not the leader)")
	}
	cur := m.unitData(r)
	if app {
		cur = m.appData(r)
	}
	next := maps.Clone(nonNil(cur))
	for k, v := range settings {
		if v == "" {
			delete(next, k) // an empty value removes the key
		} else {
			next[k] = v
		}
	}
	s := m.staged()
	if app {
		if s.AppData == nil {
			s.AppData = map[int]map[string]string{}
		}
		s.AppData[r.ID] = next
	} else {
		if s.UnitData == nil {
			s.UnitData = map[int]map[string]string{}
		}
		s.UnitData[r.ID] = next
	}
	return nil
}

// relationName is Juju's "endpoint:id" name of r.
func relationName(r *Relation) string { return r.Endpoint + ":" + strconv.Itoa(r.ID) }
