# Orbit's build. Everything a new machine needs is Go and git: modules come
# from the Go module proxy and the NATS server is embedded.

GO       ?= go
BIN      := bin/orbit
PKGS     := ./...
DEMO     := .demo

.PHONY: all build test bench lint demo demo-groundhog clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/orbit

# The test suite: vet, then every test with the race detector.
test:
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 8m $(PKGS)

# Benchmarks print their figures as ratios against the raw JetStream / bbolt
# baseline measured in the same run.
bench:
	$(GO) test -run '^$$' -bench Append -benchtime 3000x -count 1 ./internal/bench/
	$(GO) test -run '^$$' -bench EchoJob -benchtime 5x -count 1 ./internal/bench/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# A seeded example job on the embedded default, then its events.
demo: build
	rm -rf $(DEMO) && mkdir -p $(DEMO)
	$(BIN) --root $(DEMO) init
	$(BIN) --root $(DEMO) job run hello --input '{"name":"Orbit"}'
	$(BIN) --root $(DEMO) run events
	$(BIN) --root $(DEMO) run show

# A two-checkpoint Groundhog plan on a throwaway repository, offline.
demo-groundhog: build
	ORBIT=$(BIN) scripts/demo-groundhog.sh

clean:
	rm -rf bin $(DEMO) .demo-groundhog
