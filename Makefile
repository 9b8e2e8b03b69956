# courier — build, test and check. Every tool the targets need is fetched
# by `go` itself from the module proxy: nothing needs installing by hand.

GO       ?= go
BIN      := bin
FUZZTIME ?= 60s
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

# Every fuzz target, as package:FuzzName.
FUZZ_TARGETS := \
	./provenance:FuzzDecode \
	./agenthook:FuzzDecode \
	./agenthook:FuzzRenderMatchesEncodingJSON \
	./provenance:FuzzAppendJSON \
	./cmd/child:FuzzAppendDecision \
	./wire:FuzzDecodeRequest \
	./wire:FuzzPeekRequester \
	./wire:FuzzDecodeRequestSlim \
	./wire:FuzzAppendRequestWire \
	./wire:FuzzDecodeResponse \
	./wire:FuzzDecodeHeartbeat \
	./wire:FuzzResponseBinding \
	./audit:FuzzCensus \
	./internal/strictjson:FuzzFoldKey \
	./internal/strictjson:FuzzCheckAgreesWithOracle \
	./internal/strictjson:FuzzWalkAgreesWithUnmarshal \
	./internal/strictjson:FuzzStringRun \
	./wire:FuzzSplitAgreesWithUnmarshal \
	./reviewlog:FuzzEmitMatchesWrite \
	./reviewlog:FuzzRenderMatchesGeneric \
	./mailbox:FuzzEscapeSessionID \
	./mailbox:FuzzCheckServing \
	./rules:FuzzMatch \
	./rules:FuzzBashAllowNeedsEveryUnit \
	./bashunits:FuzzSplit \
	./rules:FuzzParse \
	./rules:FuzzDecodeSnapshot \
	./prompt:FuzzClean \
	./authorizer:FuzzCleanReason \
	./authorizer:FuzzProjectBash \
	./authorizer:FuzzCleanVerdictNotes \
	./audit:FuzzShadow \
	./intent:FuzzPi \
	./intent:FuzzClaudeCode \
	./intent:FuzzCodex \
	./intent:FuzzAuto \
	./plugins/judge:FuzzParseAnswer \
	./plugins:FuzzPluginOutput \
	./plugins:FuzzCheckHandshakeLine \
	./plugins:FuzzPinInConfig

# The decoders of everything a mailbox peer or the operator writes (request,
# response and its binding, heartbeat, decidedBy, config): `make test` fuzzes
# each briefly, beyond the seed corpus every `go test` runs. The budgets are
# execution counts (about 2 s each here), not durations: a -fuzztime
# duration can fail with a bare "context deadline exceeded" and no crasher
# on a loaded machine (golang/go#75804, not fixed in Go 1.26). Set
# FUZZTIME_SHORT (e.g. 30s, or 100000x) to give every target that budget.
FUZZ_SHORT_TARGETS := \
	./wire:FuzzDecodeRequest:20000x \
	./agenthook:FuzzDecode:20000x \
	./wire:FuzzDecodeResponse:30000x \
	./wire:FuzzResponseBinding:50000x \
	./wire:FuzzDecodeHeartbeat:50000x \
	./provenance:FuzzDecode:100000x \
	./rules:FuzzParse:500x \
	./bashunits:FuzzSplit:20000x \
	./rules:FuzzBashAllowNeedsEveryUnit:10000x \
	./plugins/judge:FuzzParseAnswer:2000x \
	./intent:FuzzAuto:2000x
FUZZTIME_SHORT ?=

# The reliability campaigns (integration/reliability) append their figures
# to $$COURIER_FIGURES, a file of each run's own under bin/; `make test` and
# `make soak` print it at the end.
SOAK_TIMEOUT ?= 60m

.PHONY: all build test test-deps fmt-check vet lint fuzz fuzz-short soak demo clean proto interop interop-deps interop-pi-deps

all: build

## build: the broker, the child, the example authorizer plugins
## (courier-authz-denylist, courier-authz-readonly) and the AI judge
## (courier-authz-judge) into bin/
# The child runs once per permission ask, its start and exit on the user's
# critical path, so it is built without cgo: a static binary that starts
# no libc (1.4-2.7 ms less per ask; docs/decisions/0021). The long-lived
# binaries keep cgo, so that the broker reads a `~name` home through NSS
# as the user's shell does. courier-child-nats is the child with the NATS
# client linked in (-tags nats), which child execs for a NATS transport
# (docs/decisions/0028); courier-broker-nats is the broker with the NATS
# server and client linked in, which broker execs for any NATS flag
# (docs/decisions/0034).
build:
	$(GO) build -o $(BIN)/ $(filter-out %/cmd/child,$(shell $(GO) list ./cmd/...))
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./cmd/child
	CGO_ENABLED=0 $(GO) build -tags nats -o $(BIN)/courier-child-nats ./cmd/child
	$(GO) build -tags nats -o $(BIN)/courier-broker-nats ./cmd/broker

## proto: regenerate plugins/gen from plugins/proto. The generators are
## pinned as go tool directives in go.mod; protoc comes from Debian and is
## installed when missing. Tests never need it: the output is committed.
PROTO_DIR := plugins/proto
PROTO_OUT := plugins/gen
proto:
	@command -v protoc >/dev/null 2>&1 || { echo "protoc missing: installing Debian's protobuf-compiler"; \
		apt-get update -qq && apt-get install -y -qq protobuf-compiler; }
	protoc -I $(PROTO_DIR) \
		--plugin=protoc-gen-go=$$($(GO) tool -n protoc-gen-go) \
		--plugin=protoc-gen-go-grpc=$$($(GO) tool -n protoc-gen-go-grpc) \
		--go_out=$(PROTO_OUT) --go_opt=paths=source_relative \
		--go-grpc_out=$(PROTO_OUT) --go-grpc_opt=paths=source_relative \
		$$(cd $(PROTO_DIR) && find courier -name '*.proto' | sort)

## test: gofmt check, go vet, every test (integration/ included) with the race
## detector, the short fuzz runs, then the reliability figures
test: fmt-check vet test-deps
	@mkdir -p $(BIN); figures=$$(mktemp $(abspath $(BIN))/reliability-figures.XXXXXX); \
	echo "COURIER_FIGURES=$$figures $(GO) test -race -count=1 ./..."; \
	COURIER_FIGURES=$$figures $(GO) test -race -count=1 ./... && \
	$(GO) test -race -count=1 -tags nats ./cmd/child ./cmd/broker && \
	$(MAKE) --no-print-directory fuzz-short && \
	{ echo "== reliability figures (fast campaigns; docs/RELIABILITY.md)"; cat $$figures; }; \
	status=$$?; rm -f $$figures; exit $$status

## fuzz-short: the decoders' fuzz targets, about 2 s each (or FUZZTIME_SHORT each)
fuzz-short:
	@set -e; for t in $(FUZZ_SHORT_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; budget=$${rest#*:}; \
		[ -z "$(FUZZTIME_SHORT)" ] || budget=$(FUZZTIME_SHORT); \
		echo "fuzz $$pkg $$name for $$budget"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $$budget $$pkg; \
	done

## soak: the reliability campaigns at soak size (COURIER_SOAK=1): 240 broker
## kills, 60 hostile rounds, 10 fault cycles... About 4 minutes on the 2-core
## VM (docs/RELIABILITY.md); the figures are printed at the end
soak:
	@mkdir -p $(BIN); figures=$$(mktemp $(abspath $(BIN))/soak-figures.XXXXXX); \
	echo "COURIER_SOAK=1 COURIER_FIGURES=$$figures $(GO) test -count=1 -timeout $(SOAK_TIMEOUT) -run '^TestReliability$$' ./integration/reliability"; \
	COURIER_SOAK=1 COURIER_FIGURES=$$figures $(GO) test -count=1 -timeout $(SOAK_TIMEOUT) -run '^TestReliability$$' ./integration/reliability; \
	status=$$?; echo "== reliability figures (soak campaigns; docs/RELIABILITY.md)"; cat $$figures; rm -f $$figures; exit $$status

# test-deps installs what the end-to-end tests drive besides our binaries:
# tmux, for the operator prompt's scripts (they skip without it); Debian's
# Python packages and proto compilers for the Python example plugin's
# scripts (integration/testdata/plugins/python_*.txtar, which skip without
# them). The Python ones are pinned to their upstream versions in Debian 12
# (bookworm); the * takes Debian's security revisions of that version.
PYTHON_PLUGIN_DEBS := 'python3-grpcio=1.51.1-*' 'python3-protobuf=3.21.12-*' \
	'python3-cryptography=38.0.4-*' 'protobuf-compiler=3.21.12-*' 'protobuf-compiler-grpc=1.51.1-*'
test-deps:
	@command -v tmux >/dev/null 2>&1 || { echo "tmux missing: installing Debian's tmux for the prompt tests"; \
		(apt-get update -qq && apt-get install -y -qq tmux) || echo "could not install tmux: the tty scripts will be skipped"; }
	@{ command -v protoc && command -v grpc_python_plugin && \
		/usr/bin/python3 -I -c 'import grpc, google.protobuf, cryptography'; } >/dev/null 2>&1 || \
		{ echo "Python plugin packages missing: installing Debian's $(PYTHON_PLUGIN_DEBS)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(PYTHON_PLUGIN_DEBS)) || \
		echo "could not install them: the Python plugin scripts will be skipped"; }

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	$(GO) vet -tags nats ./cmd/child ./cmd/broker

## lint: gofmt, vet and staticcheck (fetched at a pinned version)
lint: fmt-check vet
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(STATICCHECK) -tags nats ./cmd/child ./cmd/broker

## fuzz: run every fuzz target for FUZZTIME each (default 60s)
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

## demo: a broker, a few asks through the child, and the audit (non-interactive)
demo: build
	@bash scripts/demo.sh $(BIN)

## bench: real brokers on fresh mailbox roots (tmpfs and disk), driven
## against the 250 ms polling baseline; under 5 minutes. Progress on
## stderr, the table on stdout (its last line is the headline), the same
## figures as JSON in BENCH_OUT. See BENCHMARKS.md and `go doc ./internal/bench`.
## The Go micro-benchmarks: go test -run '^$' -bench . -benchmem ./rules ./mailbox ./provenance
## Some scenarios only, e.g. issue 14's floods (tmpfs):
##   make bench BENCH_FLAGS="--only flood,floodtty --disk="
BENCH_OUT ?= $(BIN)/bench-results.json
BENCH_FLAGS ?=
.PHONY: bench
bench: build
	$(BIN)/courier-bench --bin $(BIN) --out $(BENCH_OUT) $(BENCH_FLAGS)

# The interop suite drives the real agent CLIs, pinned here, installed from
# the npm registry with the machine's npm into a cache outside the repo
# (one npm prefix per package and version, installed once).
INTEROP_CACHE       ?= $(HOME)/.cache/courier-interop
CLAUDE_CODE_VERSION := 2.1.328
CODEX_VERSION       := 0.169.0
INTEROP_CLAUDE      := $(INTEROP_CACHE)/claude-code-$(CLAUDE_CODE_VERSION)
INTEROP_CODEX       := $(INTEROP_CACHE)/codex-$(CODEX_VERSION)
# pi-permission-system as published (its forwarding code, driven by
# integration/interop/testdata/pi-forwarding-driver.mjs), and tsx to load
# it: the package's src/ is TypeScript and Node 20 strips no types.
PI_PERMISSION_VERSION := 20.7.3
TSX_VERSION         := 4.23.15
INTEROP_PI          := $(INTEROP_CACHE)/pi-permission-system-$(PI_PERMISSION_VERSION)
INTEROP_TSX         := $(INTEROP_CACHE)/tsx-$(TSX_VERSION)
INTEROP_TIMEOUT     ?= 20m
# As a user rather than root, where user namespaces are enabled:
# make interop UNSHARE='unshare -rn'
UNSHARE             ?= unshare -n

# npm-pinned installs each "DIR|PACKAGE|VERSION" spec of $(1) from the npm
# registry into its DIR, with the npm install flags $(2), unless that very
# version is already there.
define npm-pinned
	@command -v npm >/dev/null 2>&1 || { echo "$@: npm is needed to install the pinned packages"; exit 1; }
	@set -e; for spec in $(1); do \
		dir=$${spec%%|*}; rest=$${spec#*|}; pkg=$${rest%%|*}; ver=$${rest#*|}; \
		have=$$(node -p "require('$$dir/node_modules/$$pkg/package.json').version" 2>/dev/null || true); \
		if [ "$$have" = "$$ver" ]; then echo "have $$pkg@$$ver in $$dir"; continue; fi; \
		echo "npm install $$pkg@$$ver into $$dir"; mkdir -p "$$dir"; \
		npm install --prefix "$$dir" --no-audit --no-fund --no-save $(2) "$$pkg@$$ver"; \
	done
endef

## interop-deps: install the pinned Claude Code and Codex CLIs from the npm
## registry into INTEROP_CACHE (default ~/.cache/courier-interop), unless
## that version is already there
interop-deps:
	$(call npm-pinned,"$(INTEROP_CLAUDE)|@anthropic-ai/claude-code|$(CLAUDE_CODE_VERSION)" "$(INTEROP_CODEX)|@openai/codex|$(CODEX_VERSION)",)

## interop-pi-deps: install the pinned pi-permission-system and tsx from
## the npm registry into INTEROP_CACHE, unless that version is already
## there. pi's peers (@earendil-works/pi-coding-agent, pi-tui) are left out
## (--omit=peer): the forwarding modules the driver imports load without them
interop-pi-deps:
	$(call npm-pinned,"$(INTEROP_PI)|@gotgenes/pi-permission-system|$(PI_PERMISSION_VERSION)" "$(INTEROP_TSX)|tsx|$(TSX_VERSION)",--omit=peer)

## interop: the real Claude Code and Codex CLIs against courier's hook, each
## driven by a scripted model endpoint on 127.0.0.1, inside a network
## namespace with only loopback (unshare -n: needs root or user namespaces;
## tmux too); pi-permission-system's forwarding code against the broker and
## the child. Not part of `make test`; integration/interop/README.md
interop: interop-deps interop-pi-deps build
	$(GO) test -c -o $(BIN)/interop.test ./integration/interop
	COURIER_INTEROP_DIR=$(INTEROP_CACHE) COURIER_INTEROP_CLAUDE=$(INTEROP_CLAUDE) \
	COURIER_INTEROP_CODEX=$(INTEROP_CODEX) COURIER_BIN=$(abspath $(BIN)) \
	COURIER_INTEROP_PI=$(INTEROP_PI) COURIER_INTEROP_TSX=$(INTEROP_TSX) \
	$(UNSHARE) -- sh -c 'ip link set lo up && exec $(BIN)/interop.test -test.v -test.count=1 -test.timeout $(INTEROP_TIMEOUT) $(INTEROP_FLAGS)'

clean:
	rm -rf $(BIN)
	$(GO) clean -testcache
