package k8s

// SetEventBurst raises the per-object Event burst of s, for tests whose
// objects change status more often than the default allows and that are not
// about the limit.
func SetEventBurst(s *Source, n int) {
	s.eventLog.mu.Lock()
	defer s.eventLog.mu.Unlock()
	s.eventLog.burst = float64(n)
	for _, b := range s.eventLog.buckets {
		b.tokens = max(b.tokens, float64(n))
	}
}

// Applied returns how many applies the Clients of s sent and how many they
// skipped because the object already held what they would apply.
func Applied(s *Source) (sent, skipped int64) {
	return s.applied.sent.Load(), s.applied.skipped.Load()
}

// AppliedKept returns how many objects s keeps what its Clients last
// applied to.
func AppliedKept(s *Source) int {
	s.applied.mu.Lock()
	defer s.applied.mu.Unlock()
	return len(s.applied.last)
}
