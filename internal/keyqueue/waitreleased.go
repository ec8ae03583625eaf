package keyqueue

import "context"

// WaitReleased waits until none of keys is held, letting go of the lock
// while it waits (WaitChange), or until ctx ends. It returns nil, nil once
// none is held; if ctx ends first, it returns the keys held when the last
// wait began (some may have been let go since) and ctx's error.
func (q *Queue[K, T]) WaitReleased(ctx context.Context, keys []K) ([]K, error) {
	for {
		var held []K
		for _, k := range keys {
			if q.Held(k) {
				held = append(held, k)
			}
		}
		if len(held) == 0 {
			return nil, nil
		}
		if err := q.WaitChange(ctx); err != nil {
			return held, err
		}
	}
}
