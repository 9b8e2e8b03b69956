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
	./rules:FuzzDecodeSnapshot

.PHONY: all build test fmt-check vet lint fuzz demo clean

all: build

## build: the broker and child binaries into bin/
build:
	$(GO) build -o $(BIN)/ ./cmd/...

## test: gofmt check, go vet, and every test (integration/ included) with the race detector
test: fmt-check vet
	$(GO) test -race -count=1 ./...

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
