# The commands a newcomer needs; each is a thin wrapper over a script.
.PHONY: run test quick bench sim soak
DURATION ?= 10m
run:            ## the embedded default: no cluster, no Juju controller
	go run ./examples/quickstart
test:           ## every check of every module, as CI runs it
	scripts/test
quick:          ## the same without the real API server (its tests skip)
	SKIP_KUBE=1 scripts/test
bench:          ## every benchmark, 6 rounds of -count 1, then bench/REPORT.md and README's headline ratios (COUNT=1 BENCHTIME=1x: a quick check)
	scripts/bench
sim:            ## the deterministic simulation against the reference model (fixed and fresh seeds)
	go test -count=1 -run '^TestSimulation(Related|Shards)?$$' -v .
soak:           ## the simulation for as long as asked: make soak DURATION=1h
	OPBUS_SIM_DURATION=$(DURATION) go test -count=1 -run '^TestSimulation(Related|Shards)?$$' -v -timeout 0 .
