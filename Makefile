# rpcd: build, run, test. `make run` and `make test` are the README's two commands.
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)

SWIFT ?= swift
CONFIG ?= config/rpcd.conf
BIN := .build/debug

# Installation (make install): DESTDIR stages, PREFIX is where the files will live. BUILD=debug installs the
# debug products that `make test` already built, instead of building release ones (the system tests do).
PREFIX ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
BUILD ?= release
BINDIR = $(PREFIX)/bin
LIBDIR = $(PREFIX)/lib
UNITDIR ?= $(LIBDIR)/systemd/system
MANDIR = $(PREFIX)/share/man
MODULES := echo calc kv sysinfo

.PHONY: all deps build release run test test-swift test-python test-system test-avahi test-fuzz test-soak soak fuzz install bench bench-micro clean

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
	$(MAKE) --no-print-directory test-swift test-python test-system test-avahi test-fuzz test-soak

test-swift:
	$(SWIFT) test --skip-build

# The Python interop client, and the module guide's out-of-tree examples built as a module author would.
test-python:
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) python3 -m unittest discover -v -s examples/python -p 'test_*.py'
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) python3 -m unittest discover -v -s examples/modules -p 'test_*.py'

# rpcd under a real systemd, booted in its own namespaces (Tests/SystemTests/README.md). Needs root; installs
# the debug build into a staging directory that only the test's mount namespace sees.
test-system:
	python3 -m unittest discover -v -s Tests/SystemTests -p 'test_systemd.py'

# libFuzzer harnesses with AddressSanitizer (fuzz/README.md): `make fuzz` runs each for FUZZ_SECONDS (60 by
# default, release build); `make test` runs each for 10 s (debug build: it compiles faster) and fails on any crash. New inputs stay under .build-fuzz/.
FUZZ_SECONDS ?= 60

fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh

test-fuzz:
	FUZZ_SECONDS=10 FUZZ_BUILD=debug fuzz/run.sh

# Valid calls that must all succeed while rpcd is reloaded and attacked (Tests/SoakTests/soak.py): `make test`
# runs it for 30 s on the debug build; `make soak` for SOAK_SECONDS (default 1800) on a release build.
SOAK_SECONDS ?= 1800

test-soak:
	python3 Tests/SoakTests/soak.py $(CURDIR)/$(BIN) --seconds 30

soak: deps
	$(SWIFT) build -c release --scratch-path .build-release
	python3 Tests/SoakTests/soak.py $(CURDIR)/.build-release/release --seconds $(SOAK_SECONDS)

install: deps
ifeq ($(BUILD),release)
	$(SWIFT) build -c release
endif
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/rpcd/modules $(DESTDIR)$(LIBDIR)/rpcd/handlers.d \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(LIBDIR)/sysusers.d $(DESTDIR)$(LIBDIR)/tmpfiles.d \
		$(DESTDIR)$(LIBDIR)/systemd/catalog $(DESTDIR)$(SYSCONFDIR)/rpcd $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 .build/$(BUILD)/rpcd .build/$(BUILD)/rpcctl $(DESTDIR)$(BINDIR)/
	for module in $(MODULES); do install -m 0755 .build/$(BUILD)/lib$$module.so $(DESTDIR)$(LIBDIR)/rpcd/modules/; done
	install -m 0644 config/handlers.d/*.conf $(DESTDIR)$(LIBDIR)/rpcd/handlers.d/
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' systemd/rpcd.service.in > $(DESTDIR)$(UNITDIR)/rpcd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/rpcd.service
	install -m 0644 systemd/rpcd.socket $(DESTDIR)$(UNITDIR)/
	install -m 0644 systemd/rpcd.sysusers $(DESTDIR)$(LIBDIR)/sysusers.d/rpcd.conf
	install -m 0644 systemd/rpcd.tmpfiles $(DESTDIR)$(LIBDIR)/tmpfiles.d/rpcd.conf
	install -m 0644 systemd/rpcd.catalog $(DESTDIR)$(LIBDIR)/systemd/catalog/rpcd.catalog
	install -m 0644 man/rpcctl.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 man/rpcd.conf.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 man/rpcd.8 $(DESTDIR)$(MANDIR)/man8/
	# The administrator's file is never overwritten.
	[ -e $(DESTDIR)$(SYSCONFDIR)/rpcd/rpcd.conf ] || install -m 0644 config/rpcd.conf $(DESTDIR)$(SYSCONFDIR)/rpcd/rpcd.conf
	@if [ -z "$(DESTDIR)" ]; then \
		systemd-sysusers $(LIBDIR)/sysusers.d/rpcd.conf && systemd-tmpfiles --create $(LIBDIR)/tmpfiles.d/rpcd.conf && \
		journalctl --update-catalog && systemctl daemon-reload 2>/dev/null || true; \
		echo "installed; start with: systemctl enable --now rpcd.socket rpcd.service"; \
	fi

# DNS-SD advertising and discovery against real avahi-daemons, each in a network namespace of its own
# (Tests/SystemTests/netns.py); needs root. Nothing is sent on the machine's own interfaces.
test-avahi:
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) python3 -m unittest discover -v -s Tests/SystemTests -p 'test_avahi.py'

bench: deps
	bench/run.sh

# Instructions and allocations per operation of the call path's hot spots, counted by valgrind (bench/micro.sh).
bench-micro: deps
	bench/micro.sh

clean:
	rm -rf .build .build-fuzz
