package perhandler

// Clean holds a bit per handler (the first 64): set, the handler's
// committed digest is that of the key's current state. The zero Clean
// marks no handler.
type Clean uint64

// Is reports whether handler i is marked clean. Handlers past the 64th
// never are: their digest is always computed.
func (c Clean) Is(i int) bool {
	return i < 64 && c&(1<<i) != 0
}

// Set marks handler i clean (on) or not; it does nothing for a handler
// past the 64th.
func (c *Clean) Set(i int, on bool) {
	switch {
	case i >= 64:
	case on:
		*c |= 1 << i
	default:
		*c &^= 1 << i
	}
}
