# rpcd: build, run, test. `make run` and `make test` are the README's two commands.
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)

SWIFT ?= swift
CONFIG ?= config/rpcd.conf
BIN := .build/debug

.PHONY: all deps build release run test test-swift test-python test-avahi bench clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# Runs the daemon in the foreground with the example configuration and the example modules straight from
# the build tree (Ctrl-C stops it; `kill -HUP` reloads).
run: build
	$(BIN)/rpcd --config $(CONFIG) --handlers-dir config/handlers.d --module-dir $(BIN)

test: deps
	$(SWIFT) build --build-tests
	$(MAKE) --no-print-directory test-swift test-python test-avahi

test-swift:
	$(SWIFT) test --skip-build

test-python:
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) python3 -m unittest discover -v -s examples/python -p 'test_*.py'

# DNS-SD advertising and discovery against real avahi-daemons, each in a network namespace of its own
# (Tests/SystemTests/netns.py); needs root. Nothing is sent on the machine's own interfaces.
test-avahi:
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) python3 -m unittest discover -v -s Tests/SystemTests -p 'test_*.py'

bench: deps
	bench/run.sh

clean:
	rm -rf .build
