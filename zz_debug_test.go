package opbus

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

func TestZZDebug(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, _ := NewFileStore(t.TempDir())
		b := newBus(t, &Options{Store: store, Workers: 8, MaxBacklog: 8, Backoff: Backoff{Initial: 100 * time.Millisecond}})
		var runs []string
		n := 0
		for _, f := range []string{"spec.a", "spec.b", "status.c"} {
			must(t, b.Handle(f, func(ctx context.Context, ev *Event) (Status, error) {
				v, _ := Lookup(ev.New, MustParsePath(f))
				runs = append(runs, fmt.Sprint(f, " ", ev.New["i"], "=", v))
				n++
				if n%4 == 0 {
					return Status{}, errors.New("x")
				}
				return Active(""), nil
			}, On{Fields: []string{f}}))
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- b.Run(ctx) }()
		for i := range 8 {
			must(t, b.Observe(context.Background(), Key{Kind: "W", Name: "x"}, map[string]any{"i": i, "spec": map[string]any{"a": i % 3, "b": i / 5}, "status": map[string]any{"c": i % 2}}))
			synctest.Wait()
			runs = append(runs, "--")
		}
		cancel()
		<-done
		for _, r := range runs {
			t.Log(r)
		}
	})
}
