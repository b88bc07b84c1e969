# zkbench build, test and benchmark targets. `make test` is what CI runs.
GO        ?= go
PKGS      ?= ./...
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
BIN       := bin/zkbench
TESTFLAGS ?= -race -count=1 -timeout 20m

.PHONY: build test bench lint deps clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/zkbench

# Tests start their own servers: an embedded etcd in-process and a local
# ZooKeeper from an installed distribution (Debian: apt-get install zookeeper).
test:
	$(GO) test $(TESTFLAGS) $(PKGS)

# Benchmarks: session memory, instrument overhead, and the lock benchmark.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./backends/... 
	$(GO) test -run '^$$' -bench . -benchmem ./backends/instrument/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@if command -v staticcheck >/dev/null 2>&1; then staticcheck $(PKGS); else echo "staticcheck not installed; skipped"; fi

# Installs what the tests need on Debian: Java is assumed present, ZooKeeper is not.
deps:
	@if [ ! -e /usr/share/java/zookeeper.jar ] && [ -z "$$ZOOKEEPER_HOME" ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper; fi
	$(GO) mod download

clean:
	rm -rf bin
