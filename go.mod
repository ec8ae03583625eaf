module github.com/opbus/opbus

go 1.26.0

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/looplab/fsm v1.0.3 // indirect
	github.com/qmuntal/stateless v1.7.2 // indirect
)
