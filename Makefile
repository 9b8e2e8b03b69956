# courier — build, test and check. Every tool the targets need is fetched
# by `go` itself from the module proxy: nothing needs installing by hand.

GO       ?= go
BIN      := bin
FUZZTIME ?= 60s
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

# Every fuzz target, as package:FuzzName.
FUZZ_TARGETS := \
	./provenance:FuzzDecode \
	./mailbox:FuzzDecodeRequest \
	./mailbox:FuzzDecodeResponse \
	./mailbox:FuzzDecodeHeartbeat \
	./audit:FuzzCensus \
	./internal/strictjson:FuzzFoldKey \
	./mailbox:FuzzEscapeSessionID \
	./mailbox:FuzzCheckServing \
	./rules:FuzzMatch \
	./rules:FuzzParse \
	./rules:FuzzDecodeSnapshot \
	./prompt:FuzzClean \
	./chain:FuzzCleanReason \
	./plugins:FuzzPluginOutput

.PHONY: all build test test-deps fmt-check vet lint fuzz demo clean proto

all: build

## build: the broker, the child and the example authorizer plugins
## (courier-authz-denylist, courier-authz-readonly) into bin/
build:
	$(GO) build -o $(BIN)/ ./cmd/...

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
		$$(cd $(PROTO_DIR) && find * -name '*.proto' | sort)

## test: gofmt check, go vet, and every test (integration/ included) with the race detector
test: fmt-check vet test-deps
	$(GO) test -race -count=1 ./...

# test-deps installs what the end-to-end tests drive besides our binaries:
# tmux, for the operator prompt's scripts (they skip without it).
test-deps:
	@command -v tmux >/dev/null 2>&1 || { echo "tmux missing: installing Debian's tmux for the prompt tests"; \
		(apt-get update -qq && apt-get install -y -qq tmux) || echo "could not install tmux: the tty scripts will be skipped"; }

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## lint: gofmt, vet and staticcheck (fetched at a pinned version)
lint: fmt-check vet
	$(GO) run $(STATICCHECK) ./...

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

clean:
	rm -rf $(BIN)
	$(GO) clean -testcache
