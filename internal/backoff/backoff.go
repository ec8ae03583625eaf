// Package backoff spaces out retries: the n-th retry waits
// Initial·Factorⁿ⁻¹, capped at Max, scaled by a random factor in
// [1-Jitter, 1+Jitter]. A Policy's zero fields take defaults (1s, ×2,
// capped at 5m or at Initial if longer, ±20%); a negative Jitter means
// none. The bus's Backoff option is a Policy under its own name.
//
// It also classifies a failure for retrying (errors.go): an error made by
// Permanent is not retried until the value changes (errors.Is finds the
// mark the caller gave, and the text stays the wrapped error's); one made
// by After asks for its own delay instead of the policy's (Asked finds
// it through any wrapping). Neither changes what the wrapped error is.
package backoff

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Policy is how retries are spaced out; see the package documentation.
type Policy struct {
	Initial time.Duration
	Max     time.Duration
	Factor  float64
	Jitter  float64
}

// WithDefaults returns p with each zero field (and a Jitter of 1 or more,
// which Check refuses) given its default, and a negative Jitter made 0.
func (p Policy) WithDefaults() Policy {
	if p.Initial <= 0 {
		p.Initial = time.Second
	}
	if p.Max <= 0 {
		p.Max = max(5*time.Minute, p.Initial)
	}
	if p.Factor < 1 {
		p.Factor = 2
	}
	switch {
	case p.Jitter == 0:
		p.Jitter = 0.2
	case p.Jitter < 0:
		p.Jitter = 0 // asked for none
	case p.Jitter >= 1:
		p.Jitter = 0.2 // (Check refuses it)
	}
	return p
}

// Check reports the first field of p that cannot be used, naming it as
// a field of name ("opbus: Options.Backoff").
func (p Policy) Check(name string) error {
	switch {
	case p.Initial < 0:
		return fmt.Errorf("%s.Initial is %v: expected a positive duration, or 0 for 1s", name, p.Initial)
	case p.Max < 0:
		return fmt.Errorf("%s.Max is %v: expected a positive duration, or 0 for 5m", name, p.Max)
	case p.Factor != 0 && p.Factor < 1:
		return fmt.Errorf("%s.Factor is %v: expected 1 or more (each retry waits at least as long as the last), or 0 for 2", name, p.Factor)
	case p.Jitter >= 1:
		return fmt.Errorf("%s.Jitter is %v: expected less than 1, 0 for ±20%%, or a negative value for none", name, p.Jitter)
	}
	if d := p.WithDefaults(); p.Max > 0 && d.Max < d.Initial {
		return fmt.Errorf("%s.Max (%v) is below Initial (%v): expected Max ≥ Initial", name, d.Max, d.Initial)
	}
	return nil
}

// Delay returns the wait before retry number n (1 for the first retry); p
// has its defaults (WithDefaults).
func (p Policy) Delay(n int) time.Duration {
	d := float64(p.Initial)
	for i := 1; i < n && d < float64(p.Max); i++ {
		d *= p.Factor
	}
	d = min(d, float64(p.Max))
	d *= 1 + p.Jitter*(2*rand.Float64()-1)
	return time.Duration(d)
}

// Retry calls attempt until it returns nil or ctx ends: after its n-th
// error it tells failed the error and the wait, Delay(n), and waits that
// long (or until ctx ends). p has its defaults (WithDefaults).
func (p Policy) Retry(ctx context.Context, attempt func() error, failed func(err error, wait time.Duration)) {
	for n := 1; ; n++ {
		err := attempt()
		if err == nil || ctx.Err() != nil {
			return
		}
		d := p.Delay(n)
		failed(err, d)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}
