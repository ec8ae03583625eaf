package keyqueue_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/opbus/opbus/internal/keyqueue"
)

// A holder takes the first listed key, holds it while it takes that
// key's items in order, and lets it go; items added meanwhile wait for
// the next holder.
func ExampleQueue() {
	// An item holds the tag the queue keeps of it.
	type event struct {
		keyqueue.Tag
		what string
	}
	var mu sync.Mutex
	q := keyqueue.New(keyqueue.Options[string, event]{Lock: &mu, Tag: func(e *event) *keyqueue.Tag { return &e.Tag }})

	mu.Lock()
	defer mu.Unlock()
	q.Add("pod/a", event{what: "created"})
	q.Add("pod/b", event{what: "created"})
	q.Add("pod/a", event{what: "scaled"})

	k, _ := q.Next()
	q.Hold(k)
	for {
		it, ok := q.Take(k, false, 0)
		if !ok {
			break
		}
		fmt.Println(k, it.what)
	}
	q.Release(k)
	fmt.Println("listed:", q.Listed(), "pending:", q.Pending())
	// Output:
	// pod/a created
	// pod/a scaled
	// listed: 1 pending: 1
}

// A caller that must handle its own item waits for the key with Await,
// which hands the key over once its holder lets go, or gives up when its
// context ends.
func ExampleQueue_Await() {
	type job struct {
		keyqueue.Tag
		n int
	}
	var mu sync.Mutex
	q := keyqueue.New(keyqueue.Options[string, job]{Lock: &mu, Tag: func(j *job) *keyqueue.Tag { return &j.Tag }})

	mu.Lock()
	q.Hold("job/x") // another holder has the key
	seq := q.AddAwaited("job/x", job{n: 42})
	mu.Unlock()

	go func() {
		mu.Lock()
		defer mu.Unlock()
		q.Release("job/x")
	}()

	mu.Lock()
	defer mu.Unlock()
	if err := q.Await(context.Background(), "job/x", seq); err != nil {
		fmt.Println(err)
		return
	}
	it, _ := q.Take("job/x", false, seq)
	fmt.Println("took", it.n, "awaited:", it.Awaited)
	q.Release("job/x")
	// Output:
	// took 42 awaited: true
}
