# rpcd: build, run, test. `make run` and `make test` are the README's two commands.
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)

SWIFT ?= swift
CONFIG ?= config/rpcd.conf
BIN := .build/debug

# Installation (make install): DESTDIR stages, PREFIX is where the files will live. BUILD=debug installs the
# debug products that `make test` already built, instead of building release ones (the system tests do).
# The Debian package (make deb) installs with this same target: one list of files for both.
PREFIX ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
BUILD ?= release
# Where `swift build` puts its products (the package build keeps its own), and extra flags for it.
SCRATCH ?= .build
SWIFT_BUILD_FLAGS ?=
BINDIR = $(PREFIX)/bin
LIBDIR = $(PREFIX)/lib
UNITDIR ?= $(LIBDIR)/systemd/system
MANDIR = $(PREFIX)/share/man
INCLUDEDIR = $(PREFIX)/include
PKGCONFIGDIR ?= $(PREFIX)/share/pkgconfig
DATADIR = $(PREFIX)/share
# The Swift module SDK, a package of its own (swift-sdk/): what a Swift module's Package.swift names by path.
SWIFTSDKDIR = $(DATADIR)/rpcd/swift-sdk
# SWIFT_RUNTIME=private copies the Swift runtime libraries that rpcd, rpcctl and the modules need (and only
# those) into $(LIBDIR)/rpcd/swift and points their RUNPATH there, so that a machine without Swift runs them
# (scripts/bundle-swift-runtime.sh; the package does this). The default uses the toolchain's copy.
SWIFT_RUNTIME ?= toolchain
# NO_DEPS=1: do not run scripts/install-deps.sh (a package build has its Build-Depends already).
NO_DEPS ?=
VERSION := $(shell sed -n 's/.*static let version = "\(.*\)"/\1/p' Sources/RPCProtocol/RPCDaemonVersion.swift)
MODULES := echo calc kv sysinfo
# The module ABI version (rpcd_module.h), for the .pc file and the package's Provides: rpcd-abi-N.
MODULE_ABI := $(shell sed -n 's/^\#define RPCD_MODULE_ABI_VERSION \([0-9]*\)/\1/p' Sources/CRPCDModule/include/rpcd_module.h)

.PHONY: deb deb-source deb-repro test-package test-package-debs test-package-root test-package-run all deps build build-tests release \
	run check test test-swift install-swift-sdk test-python test-python-package test-interop test-examples test-reference test-metrics test-browser console test-system test-avahi test-fuzz test-soak test-bound soak fuzz install bench \
	bench-reference bench-micro clean

all: build

# What building, running and testing need beyond the Swift toolchain, through apt (root or sudo; once per machine).
deps:
	@scripts/install-deps.sh

# Nothing but the build: no apt, no root. (`make deps` first on a fresh machine.)
build:
	$(SWIFT) build

build-tests:
	$(SWIFT) build --build-tests

release:
	$(SWIFT) build -c release

# Runs the daemon in the foreground with the example configuration and the example modules straight from
# the build tree (Ctrl-C stops it; `kill -HUP` reloads).
run: deps
	$(MAKE) --no-print-directory build
	$(BIN)/rpcd --config $(CONFIG) --handlers-dir config/handlers.d --module-dir $(BIN)

# For contributors, before a commit: the build, the Swift unit and integration tests, and the interop tests
# (Python, curl, requests and websockets clients against the built rpcd). No root, no apt, no namespaces (after
# `make deps` once, as root, on a fresh machine); under 5 minutes on a warm build. The rest (the examples built
# as packages, browser, metrics, soak, fuzzing, systemd, Avahi, packages) is `make test`'s.
check: build-tests
	$(SWIFT) test --skip-build
	$(MAKE) --no-print-directory test-interop

# Every suite, with its own set-up (needs root). scripts/test-all.sh runs them in lanes side by side, on one
# debug build (the package test makes its own release build, once for both versions; the fuzzers a
# sanitized one), and ends with each step's time.
test: deps
	scripts/test-all.sh

test-swift:
	$(SWIFT) test --skip-build

# The Python package's own tests (test-python-package), the interop tests (test-interop), the examples built
# as packages (test-examples) and the benchmark's C++ reference against rpcd (test-reference).
test-python: test-python-package test-interop test-examples test-reference

# The rpcd Python package (python/) alone: its client's codecs and both clients against a small server in the
# test, its handler SDK driving the example handler over pipes, rpcd-handler-check on the examples and broken
# programs. No build needed: the handler-file checks use $(BIN)/rpcd when it is there, and are skipped if not.
test-python-package:
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) python3 -m unittest discover -v -s python/tests -p 'test_*.py'

# Clients against the built rpcd: the rpcd Python package's (every transport), and clients nobody here wrote,
# curl, requests and websockets over HTTP. Seconds; no build of their own.
test-interop:
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) python3 -m unittest discover -v -s examples/python -p 'test_*.py'
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) python3 -m unittest discover -v -s examples/http -p 'test_*.py'

# The module guide's out-of-tree examples built as a module author would, and the typed Swift client built as an
# app developer would. The Swift module builds against the Swift SDK package (swift-sdk/) alone, in a folder of
# its own with no network (about 20 s: the SDK's six targets and the module). The client depends on rpcd's whole
# package, so it is built in rpcd's own build folder (RPCD_SCRATCH): its rpcd targets and dependencies compile
# with the same commands as rpcd's, so SwiftPM reuses them and compiles only the example's own target (in a
# folder of its own it took 8 minutes, swift-syntax and BoringSSL again).
test-examples:
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) python3 -m unittest discover -v -s examples/modules -p 'test_*.py'
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) RPCD_SCRATCH=$(CURDIR)/.build python3 -m unittest discover -v -s examples/swift-client -p 'test_*.py'

# The web console in a real browser: headless Chromium (Debian's chromium, chromium-driver) driven by Selenium
# against a real rpcd on an http:// listener (Tests/BrowserTests); its screenshots go to $(BIN)/browser-tests/.
test-browser:
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) python3 -m unittest discover -v -s Tests/BrowserTests -p 'test_*.py'

# Regenerates Sources/RPCConsole/ConsoleAssets.swift from console/ (RPCConsoleTests fails while it is stale).
console:
	python3 scripts/embed-console.py

# rpcd's metrics from outside (Tests/MetricsTests): promtool checks the exposition and OPERATIONS.md's alerting
# rules, and rpcctl top runs in tmux against a daemon under load and under attack.
test-metrics:
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) python3 -m unittest discover -v -s Tests/MetricsTests -p 'test_*.py'

# rpcd under a real systemd, booted in its own namespaces (Tests/SystemTests/README.md). Needs root; installs
# the debug build into a staging directory that only the test's mount namespace sees.
test-system:
	python3 -m unittest discover -v -s Tests/SystemTests -p 'test_systemd.py'

# libFuzzer harnesses with AddressSanitizer (fuzz/README.md): `make fuzz` runs each for FUZZ_SECONDS (600 by
# default, release build: what an issue that touches a parser or codec needs before it is resolved) and ends
# with a table of executions; `make test` runs each for 10 s (debug build: it compiles faster) and fails on any
# crash. New inputs stay under .build-fuzz/.
FUZZ_SECONDS ?= 600

fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh

test-fuzz:
	FUZZ_SECONDS=10 FUZZ_BUILD=debug fuzz/run.sh

# Valid calls that must all succeed while rpcd is reloaded and attacked and its module hosts are killed with
# SIGKILL (Tests/SoakTests/soak.py): `make test` runs it for 30 s on the debug build, killing hosts throughout;
# `make soak` for SOAK_SECONDS (default 1800) on a release build, killing hosts for the first CHAOS_SECONDS
# (default 600) and checking that the rest of the run stays flat.
SOAK_SECONDS ?= 1800
CHAOS_SECONDS ?= 600

test-soak:
	python3 Tests/SoakTests/soak.py $(CURDIR)/$(BIN) --seconds 30

# The memory bound of docs/SECURITY.md ("Fair shares") under every class of hostile peer bench/hostile.py knows,
# with the shipped limits: each attack smaller and shorter on the debug build; fails when rpcd's peak RSS passes
# the bound or root's rpcd.ping fails. `make soak` runs the whole attacks on the release build.
test-bound:
	python3 bench/hostile.py $(CURDIR)/$(BIN) --short --check-bound --connections 250

soak: deps
	$(SWIFT) build -c release --scratch-path .build-release
	python3 Tests/SoakTests/soak.py $(CURDIR)/.build-release/release --seconds $(SOAK_SECONDS) --chaos-seconds $(CHAOS_SECONDS)
	python3 bench/hostile.py $(CURDIR)/.build-release/release --check-bound

install: $(if $(NO_DEPS),,deps)
ifeq ($(BUILD),release)
	$(SWIFT) build -c release --scratch-path $(SCRATCH) $(SWIFT_BUILD_FLAGS)
endif
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/rpcd/modules $(DESTDIR)$(LIBDIR)/rpcd/handlers.d \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(LIBDIR)/sysusers.d $(DESTDIR)$(LIBDIR)/tmpfiles.d \
		$(DESTDIR)$(LIBDIR)/systemd/catalog $(DESTDIR)$(SYSCONFDIR)/rpcd $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(INCLUDEDIR)/rpcd $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(DATADIR)/bash-completion/completions $(DESTDIR)$(DATADIR)/zsh/vendor-completions \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	install -m 0755 $(SCRATCH)/$(BUILD)/rpcd $(SCRATCH)/$(BUILD)/rpcctl $(DESTDIR)$(BINDIR)/
	for module in $(MODULES); do install -m 0755 $(SCRATCH)/$(BUILD)/lib$$module.so $(DESTDIR)$(LIBDIR)/rpcd/modules/; done
	# The module host process isolated handlers run in (docs/MODULES.md, "Isolation"); rpcd looks for it here.
	install -m 0755 $(SCRATCH)/$(BUILD)/rpcd-module-host $(DESTDIR)$(LIBDIR)/rpcd/
	# For module authors: the C ABI header and its pkg-config file (`pkg-config --cflags rpcd-module`).
	install -m 0644 Sources/CRPCDModule/include/rpcd_module.h $(DESTDIR)$(INCLUDEDIR)/rpcd/
	sed -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
		-e 's|@ABI@|$(MODULE_ABI)|g' -e "s|@SWIFTVERSION@|$$($(SWIFT) --version 2>&1 | sed -n 's/.*Swift version \([0-9]*\.[0-9]*\).*/\1/p' | head -1)|g" \
		-e 's|@SWIFTSDKDIR@|$(SWIFTSDKDIR)|g' packaging/rpcd-module.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/rpcd-module.pc
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/rpcd-module.pc
	$(MAKE) --no-print-directory install-swift-sdk
	# Shell completions, as swift-argument-parser writes them for rpcctl.
	# (bash sources its completions: the generated #! line is dropped.)
	$(SCRATCH)/$(BUILD)/rpcctl --generate-completion-script bash | sed '1{/^#!/d}' > $(DESTDIR)$(DATADIR)/bash-completion/completions/rpcctl
	$(SCRATCH)/$(BUILD)/rpcctl --generate-completion-script zsh > $(DESTDIR)$(DATADIR)/zsh/vendor-completions/_rpcctl
	$(SCRATCH)/$(BUILD)/rpcctl --generate-completion-script fish > $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/rpcctl.fish
	if [ "$(SWIFT_RUNTIME)" = private ]; then \
		scripts/bundle-swift-runtime.sh "$(DESTDIR)" "$(LIBDIR)/rpcd/swift" $(BINDIR)/rpcd $(BINDIR)/rpcctl \
			$(LIBDIR)/rpcd/rpcd-module-host \
			$(foreach module,$(MODULES),$(LIBDIR)/rpcd/modules/lib$(module).so); \
	fi
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
		echo "installed; start with: systemctl enable --now rpcd.service"; \
	fi

# For Swift module authors: the SDK package (swift-sdk/, `pkg-config --variable=swiftsdkdir rpcd-module`), its
# symbolic links into Sources/ replaced by the files they point to (-L), so that the installed copy stands
# alone. Made afresh, so that a file a newer rpcd dropped does not stay behind. No build: examples/modules'
# test builds a module against it.
install-swift-sdk:
	rm -rf $(DESTDIR)$(SWIFTSDKDIR)
	install -d $(DESTDIR)$(SWIFTSDKDIR)
	cp -RL --no-preserve=mode,ownership swift-sdk/Package.swift swift-sdk/Sources $(DESTDIR)$(SWIFTSDKDIR)/

# Debian packages (packaging/README.md): the source package (format 3.0 (quilt), the Swift dependencies as its
# vendor component: packaging/source-package.sh), then rpcd and rpcd-dev built from its unpacked tree with
# dpkg-buildpackage, into DEB_DIR, then checked: lintian --pedantic on the source and the binaries (no error,
# no warning) and hardening-check on every ELF file (packaging/check-debs.sh). A debug package (below) has only
# its binaries linted: it is not made with dpkg-buildflags, and its source package is the release one (whose
# lint takes minutes: the vendor component).
# DEB_VERSION gives the copy a newer changelog entry (the package test builds an upgrade that way). The tree is
# brought up to date with rsync, not made anew, so that the release build in .build-deb/swift is incremental.
DEB_DIR ?= $(CURDIR)/dist
DEB_VERSION ?=
DEB_WORK := $(CURDIR)/.build-deb
# DEB_BUILD=debug packages the debug build in .build (`make build` first) instead of making a release build in
# .build-deb/swift: `make test`'s package test does, so that one build serves every suite (the release build
# took 29 minutes of a two-core machine beside the rest; the package test checks the packaging, not the code).
DEB_BUILD ?= release
DEB_SCRATCH = $(if $(filter debug,$(DEB_BUILD)),$(CURDIR)/.build,$(DEB_WORK)/swift)
deb: deps
	mkdir -p $(DEB_DIR)
	packaging/source-package.sh $(DEB_WORK) $(DEB_VERSION)
	cd $(DEB_WORK)/src/rpcd && SCRATCH=$(DEB_SCRATCH) RPCD_BUILD=$(DEB_BUILD) dpkg-buildpackage -b -us -uc
	mv $(DEB_WORK)/src/*.deb $(DEB_WORK)/src/*.changes $(DEB_WORK)/src/*.buildinfo $(DEB_DIR)/
	-mv $(DEB_WORK)/src/*.ddeb $(DEB_DIR)/ 2>/dev/null
	packaging/check-debs.sh $(if $(filter debug,$(DEB_BUILD)),--no-hardening,$(DEB_WORK)/src/rpcd_$$(dpkg-parsechangelog -l $(DEB_WORK)/src/rpcd/debian/changelog -S Version).dsc) \
		$(DEB_DIR)/rpcd_$$(dpkg-parsechangelog -l $(DEB_WORK)/src/rpcd/debian/changelog -S Version)_amd64.changes
	@ls -l $(DEB_DIR)/*.deb

# Only the source package (.dsc, the orig and orig-vendor tarballs, .debian.tar.xz) in .build-deb/src, linted.
deb-source: deps
	packaging/source-package.sh $(DEB_WORK) $(DEB_VERSION)
	packaging/check-debs.sh $(DEB_WORK)/src/rpcd_$$(dpkg-parsechangelog -l $(DEB_WORK)/src/rpcd/debian/changelog -S Version).dsc

# Two release builds of one source package, each unpacked afresh in a directory of its own (different build
# paths), each with no network (unshare -n: packaging/build-offline.sh), side by side, then compared:
# diffoscope on any .deb that differs (packaging/compare-debs.sh). Two full release builds (an hour and more
# on two loaded cores): not part of `make test`. DEB_BUILD_OPTIONS=nocheck leaves out the tests.
DEB_REPRO := $(DEB_WORK)/repro
deb-repro: deps
	packaging/source-package.sh $(DEB_WORK) $(DEB_VERSION)
	rm -rf $(DEB_REPRO) && mkdir -p $(DEB_REPRO)/source && cp $(DEB_WORK)/src/rpcd_$(VERSION)* $(DEB_REPRO)/source/
	dsc=$$(ls $(DEB_REPRO)/source/*.dsc); \
	packaging/build-offline.sh $$dsc $(DEB_REPRO)/a > $(DEB_REPRO)/a.out 2>&1 & a=$$!; \
	packaging/build-offline.sh $$dsc $(DEB_REPRO)/build-b > $(DEB_REPRO)/b.out 2>&1 & b=$$!; \
	wait $$a; ra=$$?; wait $$b; rb=$$?; tail -n 3 $(DEB_REPRO)/a.out $(DEB_REPRO)/b.out; [ $$ra = 0 ] && [ $$rb = 0 ]
	packaging/compare-debs.sh $(DEB_REPRO)/a $(DEB_REPRO)/build-b

# The packages on a Debian 12 root made by debootstrap, under its own systemd (Tests/SystemTests/test_package.py):
# install, use, build a C module with rpcd-dev, upgrade to a rebuilt package, purge. Needs root.
# The packages (two versions of the debug build that the other suites use: `make deb DEB_BUILD=debug`)
# and the Debian root (debootstrap, cached in .build-deb/debootstrap) are steps of their own, so that
# `make test` can make the root while the packages build.
test-package: build
	$(MAKE) --no-print-directory test-package-debs test-package-root
	$(MAKE) --no-print-directory test-package-run

# Both versions package the debug build (DEB_BUILD=debug): run after `make build`. No rpcd-dbgsym: the test
# does not install it, and compressing a debug build's symbols took minutes. nocheck: `make test` runs the
# tests on this build itself.
test-package-debs:
	DEB_BUILD_OPTIONS="noautodbgsym nocheck" $(MAKE) --no-print-directory deb DEB_BUILD=debug DEB_DIR=$(DEB_WORK)/test/v1
	DEB_BUILD_OPTIONS="noautodbgsym nocheck" $(MAKE) --no-print-directory deb DEB_BUILD=debug DEB_DIR=$(DEB_WORK)/test/v2 \
		DEB_VERSION=$(VERSION)-1+test1

test-package-root:
	python3 Tests/SystemTests/test_package.py --base-root

test-package-run:
	python3 -m unittest discover -v -s Tests/SystemTests -p 'test_package.py'

# DNS-SD advertising and discovery against real avahi-daemons, each in a network namespace of its own
# (Tests/SystemTests/netns.py); needs root. Nothing is sent on the machine's own interfaces.
test-avahi:
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) python3 -m unittest discover -v -s Tests/SystemTests -p 'test_avahi.py'
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) python3 -m unittest discover -v -s Tests/SystemTests -p 'test_widearea.py'

bench: deps
	bench/run.sh

# The C++ JSON-RPC reference of make bench (bench/jsonrpc-reference.cpp): rpcd.ping's protocol work with
# simdjson's On Demand API. -march=x86-64-v3 and -mpclmul: simdjson compiles On Demand for its AVX2 kernel only
# when AVX2, BMI, LZCNT and PCLMUL are all allowed (x86-64-v3 lacks PCLMUL); otherwise it falls back to its
# portable kernel, and the reference would be a weak one. The program prints which kernel it runs.
REFERENCE := .build/jsonrpc-reference/jsonrpc-reference
bench-reference: $(REFERENCE)

$(REFERENCE): bench/jsonrpc-reference.cpp
	mkdir -p $(@D)
	g++ -std=c++17 -O2 -march=x86-64-v3 -mpclmul -Wall -Wextra -o $@ $< -lsimdjson

# The reference against the debug rpcd: the same replies to 77 cases and to mutated requests, and the same
# accept/refuse as Python's strict json on 20,000 mutations (bench/test_reference.py). Seconds.
test-reference: bench-reference
	RPCD_BIN_DIR=$(CURDIR)/$(BIN) RPCD_REFERENCE=$(CURDIR)/$(REFERENCE) python3 -m unittest discover -v -s bench -p 'test_reference.py'

# Instructions and allocations per operation of the call path's hot spots, counted by valgrind (bench/micro.sh).
bench-micro: deps
	bench/micro.sh

# Every build folder the Makefile and the tests make (the package build's scratch is under .build-deb, the
# benchmark's Hummingbird reference in .build-hummingbird; .build-examples is where older trees built the
# examples), and the packages in dist/. (Not $(SCRATCH): debian/rules' `make clean` runs with it pointing at
# .build-deb.)
clean:
	rm -rf .build .build-fuzz .build-release .build-deb .build-hummingbird .build-examples dist
