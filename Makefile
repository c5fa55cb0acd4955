# Orbit's build. make build and make demo need only Go and git: modules come
# from the Go module proxy and the NATS server is embedded. make test also
# installs what its tests drive (see test below): the nats CLI (Go), the
# pinned CLI agents (Node.js and npm) and Chromium (apt-get, as root).

GO       ?= go
BIN      := bin/orbit
PKGS     := ./...
DEMO     := .demo
FUZZTIME ?= 30s

# gRPC, which the OTLP exporter's protobuf package brings in, imports
# golang.org/x/net/trace unless built with grpcnotrace; its html/template
# pages would make the linker keep every exported method (59 MB becomes
# 96 MB; see "The binary" in ARCHITECTURE.md). Every go command of this
# Makefile builds with the tag.
TAGS := grpcnotrace
export GOFLAGS += -tags=$(TAGS)

.PHONY: all build binsize agents test fuzz bench bench-peers fsyncs git-count soak chaos cluster-chaos lint demo demo-groundhog demo-ship demo-groundhog-cli demo-groundhog-codex demo-cli-agent cluster-demo clean nats-cli chromium screenshots jaeger trace-test

all: build

# The binary make build ships leaves out the symbol table and the DWARF
# debugging data (-s -w: a panic's stack trace comes from the runtime's own
# tables and still names every function, file and line) and the build
# machine's paths (-trimpath: files are named by module path).
LDFLAGS := -s -w

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/orbit

# The binary's size: nothing reachable may turn off the linker's removal of
# unused methods (a reflect method lookup by a name the compiler cannot
# see, as text/template's), and bin/orbit is at most 70 MB.
binsize: build
	GO=$(GO) BIN=$(BIN) LDFLAGS="$(LDFLAGS)" TAGS=$(TAGS) scripts/binsize.sh

# The official nats CLI, at the version the end-to-end test of the project's
# identities (TestTheOfficialNATSCLI) drives: v0.5.0, not v0.5.1.
NATS_CLI := bin/nats
nats-cli: $(NATS_CLI)
$(NATS_CLI):
	GOBIN=$(CURDIR)/bin $(GO) install github.com/nats-io/natscli/nats@v0.5.0

# Jaeger, the trace backend make trace-test checks Orbit's traces in,
# built from its module's source in the Go module cache: go install
# refuses a module with replace directives, so the source is copied out
# (the cache is read-only) and built in place, as its own module and with
# its own build flags. Long (a few hundred modules); not part of make test.
JAEGER_VERSION := v1.76.0
JAEGER := bin/jaeger
jaeger: $(JAEGER)
$(JAEGER):
	@set -e; \
	src=$$($(GO) mod download -json github.com/jaegertracing/jaeger@$(JAEGER_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	work=$$(mktemp -d); trap 'chmod -R u+w "$$work"; rm -rf "$$work"' EXIT; \
	cp -R "$$src/." "$$work"; chmod -R u+w "$$work"; \
	cd "$$work" && GOFLAGS= GOWORK=off $(GO) build -o $(CURDIR)/$(JAEGER) ./cmd/jaeger

# A job with a parallel, a fan-out and a child run, its engine killed with
# -9 mid-run, traced into a real Jaeger and read back from its query API.
trace-test: $(JAEGER)
	ORBIT_JAEGER=$(CURDIR)/$(JAEGER) $(GO) test -count=1 -run 'TestATraceInJaeger' ./cmd/orbit/

# The CLI agents the tests drive (Claude Code, Codex), and the Node.js
# they are tested on where the machine's is older than 22 (npm's node
# package), at the versions pinned in tools/agents/package-lock.json,
# installed by npm ci into tools/agents/node_modules (ignored); nothing is
# done when that install is newer than the lock file.
AGENTS := tools/agents
agents: $(AGENTS)/node_modules/.installed

$(AGENTS)/node_modules/.installed: $(AGENTS)/package-lock.json $(AGENTS)/package.json
	cd $(AGENTS) && npm ci --no-audit --no-fund
	touch $@

# The test suite: the binary's size (make binsize), vet, then every test
# with the race detector (which runs each fuzz target's seed corpus), then
# every fuzz target for 3s. It needs the official nats CLI, the pinned CLI
# agents and Chromium (for the console's browser tests), which it installs
# first. Four parallel tests per package, not go test's one per core: most
# of them spend their time waiting on the processes they drive (engines,
# git, the CLI agents) or on the clock (see "How the tests are built" in
# docs/development.md).
TESTPARALLEL ?= 4
test: nats-cli agents chromium binsize
	@scripts/quiet-build.sh "$(MAKE)"
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -parallel $(TESTPARALLEL) -timeout 14m $(PKGS)
	FUZZTIME=3s FUZZMINIMIZETIME=0 FUZZFRESH=1 GO=$(GO) scripts/fuzz.sh

# Debian's chromium, for the console's browser tests (driven by chromedp),
# installed with apt-get when /usr/bin/chromium is missing.
chromium:
	@test -x /usr/bin/chromium || { apt-get update && apt-get install -y chromium; }

# The console's browser tests, writing their screenshots into docs/ for
# docs/console.md.
screenshots: chromium
	ORBIT_SCREENSHOTS=1 $(GO) test -count=1 -run Browser ./console/

# Every fuzz target for FUZZTIME each (default 30s; make fuzz FUZZTIME=10m
# for a long run), one after another since Go fuzzes one target per process,
# then a summary of executions and findings. A failing input is written to
# the package's testdata/fuzz/<Target>/: keep it there as the regression test
# of the fix. scripts/fuzz.sh <Target>... runs only those.
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) scripts/fuzz.sh

# Benchmarks print their figures as ratios against the raw JetStream / bbolt
# / git baseline measured in the same run; the cluster's throughput with 2
# and 3 engines against 1 engine on the same three-node R3 cluster; reading
# a signed log against an unsigned one; what the CLI agents' sandbox adds
# to starting a program.
bench:
	$(GO) test -run '^$$' -bench Append -benchtime 3000x -count 1 ./internal/bench/
	$(GO) test -run '^$$' -bench GroupCommit -benchtime 3000x -count 1 ./internal/bench/
	$(GO) test -run '^$$' -bench EchoJob -benchtime 5x -count 1 ./internal/bench/
	$(GO) test -run '^$$' -bench FanOut -benchtime 2x -count 1 ./internal/bench/
	$(GO) test -run '^$$' -bench ViewRebuild -benchtime 2x -count 1 ./internal/bench/
	$(GO) test -run '^$$' -bench LiveProjection -benchtime 2000x -count 1 ./internal/bench/
	$(GO) test -run '^$$' -bench GroundhogAttempt/small -benchtime 40x -count 1 ./internal/bench/
	$(GO) test -run '^$$' -bench GroundhogAttempt/large -benchtime 5x -count 1 ./internal/bench/
	$(GO) test -run '^$$' -bench ShipOverhead/small -benchtime 20x -count 1 ./internal/bench/
	$(GO) test -run '^$$' -bench ShipOverhead/large -benchtime 5x -count 1 -timeout 20m ./internal/bench/
	$(GO) test -run '^$$' -bench ClusterThroughput -benchtime 1x -count 1 -timeout 20m ./internal/bench/
	$(GO) test -run '^$$' -bench Scan -benchtime 3x -count 1 ./events/
	$(GO) test -run '^$$' -bench APIRequest -benchtime 5000x -count 1 ./events/
	$(GO) test -run '^$$' -bench Start -benchtime 50x -count 1 ./internal/sandbox/
	$(GO) test -run '^$$' -bench StartWait -benchtime 100x -count 1 ./internal/proc/

# Orbit beside DBOS Transact Go (on a PostgreSQL cluster of its own, fsync
# and synchronous_commit on) and Temporal's dev server (on an SQLite file,
# synchronous=FULL) on the same workloads, interleaved: one table of
# medians and ratios, and the fsyncs per step of each on W1 (strace).
# PostgreSQL and strace come from Debian when missing; the Temporal CLI is
# built from the Go module proxy (v1.5.1: the proxy's v1.9.1 lacks its
# nested cliext module and does not build); the peers' programs from their
# own module, internal/bench/peers, so that their SDKs stay out of
# Orbit's. BENCH_PEERS_FLAGS passes flags (bin/bench-peers -h).
TEMPORAL_CLI := v1.5.1
TEMPORAL     := bin/temporal-cli-$(TEMPORAL_CLI)/temporal
PEERS        := internal/bench/peers
bench-peers: $(TEMPORAL)
	@need=; \
	command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || need=postgresql; \
	command -v strace >/dev/null 2>&1 || need="$$need strace"; \
	if [ -n "$$need" ]; then apt-get update && apt-get install -y $$need; fi
	cd $(PEERS) && $(GO) build -o $(CURDIR)/bin/bench-dbos ./dbos && $(GO) build -o $(CURDIR)/bin/bench-temporal ./temporal
	$(GO) build -o bin/bench-peers ./internal/cmd/benchpeers
	bin/bench-peers -temporal-server $(TEMPORAL) -orbit-commit "$$(git describe --always --dirty 2>/dev/null)" $(BENCH_PEERS_FLAGS)

$(TEMPORAL):
	GOBIN=$(CURDIR)/$(dir $(TEMPORAL)) $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI)

# fsyncs per event of a strict log under load (64 appenders), counted with
# strace: each event its own acknowledged publish, against events.Append.
fsyncs:
	GO=$(GO) scripts/fsyncs.sh

# The soak tests: 200 concurrent short runs and a fan_out of 1,000 items on
# an `orbit serve` process (wall time, rates, the engine's peak RSS); and
# careless use at scale (thousands of reads and child runs, an endless
# recursion) after which a job must still run at once; and routines every
# minute for ten minutes on two engines of a three-node cluster, then both
# engines down across three ticks (about a quarter of an hour).
soak:
	ORBIT_SOAK=1 $(GO) test -count=1 -run Soak -v -timeout 20m ./internal/soak/
	ORBIT_SOAK=1 $(GO) test -count=1 -run 'TestSoakRoutinesEveryMinuteOnTwoEngines' -v -timeout 25m ./cmd/orbit/

# The chaos suite in full: every job killed (SIGKILL) at every failpoint that
# applies and at random moments, then the cluster trials (TestChaosCluster:
# three nats-servers, two engines, losing the stream leader's node, the
# engine holding the run, or both); prints a table of trials and the seed
# (CHAOS_SEED=<n> repeats a run). make test runs a quick subset of it.
chaos:
	CHAOS=full $(GO) test -count=1 -run Chaos -v -timeout 30m ./internal/chaos/
	CLUSTER_CHAOS=1 CHAOS=full $(GO) test -count=1 -run 'TestChaosCluster' -v -timeout 30m ./internal/chaos/

# The heavy tests of Orbit on a three-node NATS cluster with two engines
# (kill -9 of an engine mid-run, max_active_runs across engines, SIGTERM
# with no server, the stream leader's node killed mid fan-out, the CLI with
# one engine SIGSTOPped), then the
# cluster trials of the chaos suite (TestChaosCluster: the chaos jobs on
# three nats-servers and two engines, losing the stream leader's node, the
# engine holding the run, or both; also in make chaos). make
# test runs the events-level cluster tests (appends through the loss of
# the stream leader, too few servers for the replicas) and TestClusterSmoke
# (two engines, a run before and after the stream leader's node stops).
cluster-chaos:
	CLUSTER_CHAOS=1 $(GO) test -count=1 -run 'TestCluster' -v -timeout 15m ./cmd/orbit/
	CLUSTER_CHAOS=1 CHAOS=full $(GO) test -count=1 -run 'TestChaosCluster' -v -timeout 30m ./internal/chaos/

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

# Ships a backlog of three tasks to a bare origin, offline (replayed agents).
demo-ship: build
	ORBIT=$(BIN) scripts/demo-ship.sh

# The git processes the engine runs for demo-groundhog's three attempts,
# per git subcommand.
git-count: build
	ORBIT=$(BIN) scripts/git-count.sh

# A three-node NATS cluster (nats-server built from the module's own
# dependency) and two engines on it, locally; a fan-out shared by both.
cluster-demo: build
	$(GO) build -o bin/nats-server github.com/nats-io/nats-server/v2
	ORBIT=$(BIN) NATS_SERVER=bin/nats-server scripts/cluster-demo.sh

# Groundhog over the real Claude Code CLI (the pinned one of make agents,
# else claude on PATH), offline against a scripted Anthropic server.
demo-groundhog-cli: build
	$(GO) build -o bin/scriptedmodel ./internal/cmd/scriptedmodel
	ORBIT=$(BIN) SCRIPTED_MODEL=bin/scriptedmodel scripts/demo-groundhog-cli.sh

# The same plan over the real Codex CLI, offline against a scripted OpenAI
# Responses server.
demo-groundhog-codex: build
	$(GO) build -o bin/scriptedmodel ./internal/cmd/scriptedmodel
	ORBIT=$(BIN) SCRIPTED_MODEL=bin/scriptedmodel scripts/demo-groundhog-codex.sh

# The seeded example_cli_agent: one agent step on Claude Code, offline.
demo-cli-agent: build
	$(GO) build -o bin/scriptedmodel ./internal/cmd/scriptedmodel
	ORBIT=$(BIN) SCRIPTED_MODEL=bin/scriptedmodel scripts/demo-cli-agent.sh

clean:
	rm -rf bin $(DEMO) .demo-groundhog .demo-ship .demo-groundhog-cli .demo-groundhog-codex .demo-cli-agent .demo-cluster $(AGENTS)/node_modules
