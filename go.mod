module github.com/opbus/opbus

go 1.26.0

require (
	github.com/google/uuid v1.6.0
	github.com/looplab/fsm v1.0.3
)
