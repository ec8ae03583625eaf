package k8s

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opbus/opbus"
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCoalescedLinesAggregated: the bus's Warn for each coalesced backlog,
// logged through the logger BusOptions gives the bus, comes out once for a
// burst of 1,000 objects, and once more summed up at the end of the
// window, with the count; other lines pass as they are.
func TestCoalescedLinesAggregated(t *testing.T) {
	old := aggregateWindow
	aggregateWindow = 200 * time.Millisecond
	defer func() { aggregateWindow = old }()
	var buf syncBuffer
	src := &Source{opts: Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))}, failures: &failureEvents{}}
	log := src.BusOptions(&opbus.Options{}).Logger
	for i := range 1000 {
		log.Warn("opbus: backlog coalesced: intermediate states skipped", "key", fmt.Sprintf("Widget ns/w%d", i), "bound", 16)
		log.Info("opbus: status changed", "n", i%2)
	}
	lines := func(s string) int { return strings.Count(buf.String(), s) }
	if n := lines("backlog coalesced"); n != 1 {
		t.Errorf("%d coalesced lines during the burst, want 1", n)
	}
	if n := lines("status changed"); n != 1000 {
		t.Errorf("%d other lines, want all 1000", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for lines("(repeated)") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(buf.String(), "repeated=999") || !strings.Contains(buf.String(), `Widget ns/w1`) {
		t.Errorf("no summing-up line with repeated=999 and the first keys:\n%s", tail(buf.String()))
	}
	log.Warn("opbus: backlog coalesced: intermediate states skipped", "key", "Widget ns/late")
	if n := lines("backlog coalesced"); n != 3 {
		t.Errorf("%d coalesced lines after the window, want 3 (first, summing-up, a new first)", n)
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
