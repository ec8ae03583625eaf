package wake

// Token is a wake-up holding at most one token: a producer offers one
// each time work may be there, and an idle consumer waits to take it.
// Make one with [NewToken]; the zero Token never wakes anyone.
type Token chan struct{}

// NewToken returns a Token with no token offered.
func NewToken() Token { return make(Token, 1) }

// Offer leaves a token unless one is there already; it never blocks.
func (t Token) Offer() {
	select {
	case t <- struct{}{}:
	default: // a token is there already
	}
}

// Wait blocks until it takes a token or stop is closed.
func (t Token) Wait(stop <-chan struct{}) {
	select {
	case <-t:
	case <-stop:
	}
}
