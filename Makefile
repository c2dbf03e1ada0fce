# sync-events: see README.md. Every target works from a fresh clone with Go alone.
SHELL := /bin/bash
GO    ?= go
BIN   := bin
ADDR  ?= 127.0.0.1:3000
EVENT ?= events/post-fresh.json

# The Lambda binary: linux/arm64, no RPC mode (provided.al2023 speaks the
# Runtime API), no paths or symbols in it.
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags='-s -w -buildid='

.PHONY: example run test test-full capacity build lint bench bench-space load fuzz contract invoke invoke-all coldstart host-bootstrap clean tools build-SyncEventsFunction build-PokeFunction build-RetentionFunction build-SequencerFunction

## run: serve the real handler on $(ADDR), on the embedded backend unless DYNAMODB_ENDPOINT is set
run:
	ADDR=$(ADDR) $(GO) run ./cmd/sync-events-local

## example: the notes example on http://localhost:5173 against make run's server (start that first); SYNC_EVENTS_API and SYNC_EVENTS_TOKEN point it at a deployed API
example:
	cd clients/typescript && { [ -d node_modules ] || PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund; } && node ../../examples/notes/serve.mjs

# Without cgo (the race detector needs it; test-full has it), so that the
# Lambda binaries the emulator tests build share the test build's cache;
# and without the OpenAPI contract's validator (-tags nocontract, and not
# package openapi), whose compile was most of a cold make test.
## test: every package's tests but the system simulations and the contract checks, without the race detector: what a change needs, under a minute warm
test:
	CGO_ENABLED=0 $(GO) test -tags nocontract -count=1 -timeout 15m $$($(GO) list ./... | grep -v -e '/simulation$$' -e '/openapi$$')

## test-full: every test, the simulations included, with the race detector (CI runs it on kumo, moto and dynoxide; 40 minutes at most: moto, serialised, is slow)
# On a server of DYNAMODB_ENDPOINT, one package at a time: the packages
# would share that one server, and dynoxide answers 500 (its SQLite locked)
# to writers of several packages at once often enough for the SDK's
# retries to run out; one package's tests share it as they always have.
test-full:
	$(GO) test -race -count=1 -timeout 40m $(if $(DYNAMODB_ENDPOINT),-p 1) ./...

# The largest bootstrap a build may make, in bytes (10 MiB): Lambda reads
# the whole binary at every cold start. make build and SAM's build fail past
# it; docs/performance.md gives the size and the cold start.
BOOTSTRAP_MAX_BYTES := 10485760
check-size = @size=$$(wc -c < $(1)); \
	if [ $$size -gt $(BOOTSTRAP_MAX_BYTES) ]; then echo "$(1) is $$size bytes, over BOOTSTRAP_MAX_BYTES ($(BOOTSTRAP_MAX_BYTES))"; exit 1; fi; \
	echo "$(1): $$size bytes, at most $(BOOTSTRAP_MAX_BYTES)"

## build: each function's bootstrap for linux/arm64, as SAM and Lambda run it, held to BOOTSTRAP_MAX_BYTES
build:
	@mkdir -p $(BIN)/lambda $(BIN)/poke $(BIN)/retention $(BIN)/sequencer
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/lambda/bootstrap ./functions/sync-events
	$(call check-size,$(BIN)/lambda/bootstrap)
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/poke/bootstrap ./functions/poke
	$(call check-size,$(BIN)/poke/bootstrap)
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/retention/bootstrap ./functions/retention
	$(call check-size,$(BIN)/retention/bootstrap)
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/sequencer/bootstrap ./functions/sequencer
	$(call check-size,$(BIN)/sequencer/bootstrap)

# SAM's makefile builder calls these targets with ARTIFACTS_DIR set.
build-SyncEventsFunction:
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/sync-events
	$(call check-size,$(ARTIFACTS_DIR)/bootstrap)

build-PokeFunction:
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/poke
	$(call check-size,$(ARTIFACTS_DIR)/bootstrap)

build-RetentionFunction:
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/retention
	$(call check-size,$(ARTIFACTS_DIR)/bootstrap)

build-SequencerFunction:
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/sequencer
	$(call check-size,$(ARTIFACTS_DIR)/bootstrap)

## invoke: run the real bootstrap under aws-lambda-rie, as sam local invoke does, for each of EVENT (files, in order)
invoke: $(BIN)/aws-lambda-rie host-bootstrap
	$(GO) run ./cmd/sync-events-invoke -rie $(BIN)/aws-lambda-rie -bootstrap $(BIN)/host/bootstrap $(EVENT)

## invoke-all: every file in events/, in the order of events/expected.json, against one backend
invoke-all: $(BIN)/aws-lambda-rie host-bootstrap
	$(GO) run ./cmd/sync-events-invoke -rie $(BIN)/aws-lambda-rie -bootstrap $(BIN)/host/bootstrap -manifest events/expected.json

## coldstart: median time from starting aws-lambda-rie to the function's first answer, over COLD runs
COLD ?= 15
coldstart: $(BIN)/aws-lambda-rie host-bootstrap
	$(GO) run ./cmd/sync-events-invoke -rie $(BIN)/aws-lambda-rie -bootstrap $(BIN)/host/bootstrap -cold $(COLD) events/post-fresh.json 2>/dev/null

# The Lambda build for this machine's OS and architecture, for the emulator.
host-bootstrap:
	@mkdir -p $(BIN)/host
	CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/host/bootstrap ./functions/sync-events

## capacity: capacity units per request, measured on the backend at DYNAMODB_ENDPOINT (dynoxide reports them; kumo and moto do not, and the test says so)
capacity:
	$(GO) test -count=1 -run TestCapacityUnits -v ./functions/sync-events/simulation

## fuzz: each fuzz target for FUZZTIME (seed corpora in testdata/fuzz/, run by make test too)
FUZZTIME ?= 15s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzCanonicalHash$$' -fuzztime $(FUZZTIME) ./idempotency
	$(GO) test -run '^$$' -fuzz '^FuzzHandler$$' -fuzztime $(FUZZTIME) ./functions/sync-events/api
	$(GO) test -run '^$$' -fuzz '^FuzzPushThenPull$$' -fuzztime $(FUZZTIME) ./functions/sync-events/api

## bench: the benchmarks, BENCHCOUNT runs each, summarised by benchstat (medians, with spread)
BENCHCOUNT ?= 6
bench: $(BIN)/benchstat
	$(GO) test -run '^$$' -bench . -benchmem -count $(BENCHCOUNT) ./idempotency ./idempotency/dynamodbstore ./functions/sync-events/api ./functions/sync-events/simulation | tee $(BIN)/bench.txt
	$(BIN)/benchstat $(BIN)/bench.txt

## bench-space: one busy space's writers, 1 to 32, sustained (3,000 events and 30 s at least) beside bursts, 3 runs each on a fresh server (kumo; DYNOXIDE=its binary for dynoxide), medians by benchstat (scripts/bench-space.sh; docs/performance.md)
bench-space: $(BIN)/benchstat
	BENCHSTAT=$(BIN)/benchstat OUT=$(BIN) scripts/bench-space.sh

## load: make run's server on LOAD_ADDR (per-user rate limits off: it measures the service, not one user), driven by cmd/loadgen with CLIENTS clients for REQUESTS requests
CLIENTS  ?= 16
REQUESTS ?= 2000
USERS    ?= 20
MIX      ?= fresh=70,replay=20,conflict=10
WINDOW   ?= 0
LOAD_ADDR ?= 127.0.0.1:3999
load:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/sync-events-local ./cmd/sync-events-local
	$(GO) build -o $(BIN)/loadgen ./cmd/loadgen
	@ADDR=$(LOAD_ADDR) CHANGES_PER_SECOND=0 READS_PER_SECOND=0 $(BIN)/sync-events-local > $(BIN)/load-server.log 2>&1 & pid=$$!; \
	for i in $$(seq 100); do (exec 3<>/dev/tcp/$(subst :,/,$(LOAD_ADDR))) 2>/dev/null && break; sleep 0.1; done; \
	$(BIN)/loadgen -url http://$(LOAD_ADDR) -clients $(CLIENTS) -requests $(REQUESTS) -users $(USERS) -mix $(MIX) -window $(WINDOW); rc=$$?; \
	kill $$pid; exit $$rc

## contract: make run's server on CONTRACT_ADDR (per-user rate limits off: schemathesis is one user at machine speed), fuzzed against openapi/openapi.yaml by schemathesis at CONTRACT_SEED (on PATH: pip install -r .ci/requirements-contract.txt)
SCHEMATHESIS      ?= schemathesis
CONTRACT_ADDR     ?= 127.0.0.1:3998
CONTRACT_EXAMPLES ?= 100
CONTRACT_TIMEOUT  ?= 600
CONTRACT_SEED     ?= 20261202
contract:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/sync-events-local ./cmd/sync-events-local
	@ADDR=$(CONTRACT_ADDR) CHANGES_PER_SECOND=0 READS_PER_SECOND=0 $(BIN)/sync-events-local > $(BIN)/contract-server.log 2>&1 & pid=$$!; \
	for i in $$(seq 100); do (exec 3<>/dev/tcp/$(subst :,/,$(CONTRACT_ADDR))) 2>/dev/null && break; sleep 0.1; done; \
	SCHEMATHESIS_HOOKS=schemathesis_hooks PYTHONPATH=openapi timeout $(CONTRACT_TIMEOUT) $(SCHEMATHESIS) run openapi/openapi.yaml \
	  --url http://$(CONTRACT_ADDR) --checks all --max-examples $(CONTRACT_EXAMPLES) --seed $(CONTRACT_SEED) \
	  --phases examples,coverage,fuzzing,stateful --workers 1 --report junit --report-dir $(BIN)/contract-report; rc=$$?; \
	kill $$pid; exit $$rc

## tools: staticcheck, benchstat and the Lambda Runtime Interface Emulator, pinned in tools/go.mod
tools: $(BIN)/staticcheck $(BIN)/benchstat $(BIN)/aws-lambda-rie
$(BIN)/staticcheck $(BIN)/benchstat $(BIN)/aws-lambda-rie: tools/go.mod tools/go.sum
	@mkdir -p $(BIN)
	cd tools && $(GO) build -o ../$(BIN)/ honnef.co/go/tools/cmd/staticcheck golang.org/x/perf/cmd/benchstat github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie

## lint: gofmt, go vet, staticcheck
lint: $(BIN)/staticcheck
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(BIN)/staticcheck ./...

clean:
	rm -rf $(BIN) .aws-sam
