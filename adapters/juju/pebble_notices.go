package juju

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"time"
)

// Notice is a Pebble notice: something that happened in the container,
// such as the custom notice a <container>-pebble-custom-notice hook names
// with hook.notice-id.
type Notice struct {
	ID string `json:"id"`
	// Type is "custom" for those the workload records, or one of Pebble's
	// own ("change-update", "warning", …).
	Type string `json:"type"`
	// Key identifies what happened ("example.com/db-backup-done").
	Key string `json:"key"`
	// Occurrences counts the times it happened; LastData is the data of
	// the last one.
	Occurrences   int               `json:"occurrences"`
	LastData      map[string]string `json:"last-data"`
	FirstOccurred time.Time         `json:"first-occurred"`
	LastOccurred  time.Time         `json:"last-occurred"`
}

// Notice returns the notice with the given ID (as the hook's
// hook.notice-id gives it).
func (c *Container) Notice(ctx context.Context, id string) (*Notice, error) {
	n := new(Notice)
	if _, err := c.do(ctx, "GET", "/v1/notices/"+url.PathEscape(id), nil, "", nil, n); err != nil {
		return nil, c.wrap(err, "notice "+id)
	}
	return n, nil
}

// Notify records a custom notice with key (in the "example.com/path" form
// Pebble requires) and data, and returns its ID. A notice with the same
// key is the same notice occurring again. Juju runs the
// <container>-pebble-custom-notice hook for it.
func (c *Container) Notify(ctx context.Context, key string, data map[string]string) (string, error) {
	body, _ := json.Marshal(map[string]any{"action": "add", "type": "custom", "key": key, "data": data})
	var res struct {
		ID string `json:"id"`
	}
	if _, err := c.do(ctx, "POST", "/v1/notices", nil, "application/json", bytes.NewReader(body), &res); err != nil {
		return "", c.wrap(err, "notify "+key)
	}
	return res.ID, nil
}
