# moraine — build, test, demo, install.  `make help` lists the targets.
PREFIX   ?= /usr/local
CC       ?= cc
LUA54_INC ?= /usr/include/lua5.4
LUAJIT_INC ?= /usr/include/luajit-2.1
VERSION  := 0.1.0
SOMAJOR  := 0
# Warnings are errors for development and CI (make, make test, make asan, ...);
# a user's `make install` builds without -Werror, so a newer compiler's new
# warnings cannot break an install (DEV=1 keeps -Werror there too; WERROR=
# on the command line turns it off anywhere).
ifneq ($(filter install,$(MAKECMDGOALS)),)
ifneq ($(DEV),1)
WERROR   ?=
endif
endif
WERROR   ?= -Werror
WARN     := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
OPT      ?= -O2 -g
SAN      :=
CFLAGS_ALL = $(WARN) $(WERROR) $(OPT) $(SAN) -fPIC -Iengine
LIBS     := -llmdb -ljansson -lsqlite3 -lpthread -lm
BUILD    ?= build

ENGINE_SRC := $(sort $(wildcard engine/*.c))
ENGINE_OBJ := $(ENGINE_SRC:engine/%.c=$(BUILD)/engine/%.o)
BINDING_SRC := $(sort $(wildcard bindings/*.c))
BINDING_HDR := bindings/moraine_binding.h
ENGINE_HDR := $(sort $(wildcard engine/*.h))
CTEST_SRC  := $(sort $(wildcard tests/c/test_*.c))
CTEST_BIN  := $(CTEST_SRC:tests/c/%.c=$(BUILD)/tests/%)

.PHONY: crash-long all lib lua test test-c test-lua test-lua54 test-luajit test-bin demo asan valgrind install uninstall clean deps help lint docs

all: lib lua $(BUILD)/moraine.pc

help:
	@echo "make          build libmoraine and the Lua module (Lua 5.4 and LuaJIT)"
	@echo "make test     install missing Debian packages, build, run C tests and busted specs under Lua 5.4 and LuaJIT"
	@echo "make demo     install missing packages, build, import the bundled real catalog and show its spec history"
	@echo "make valgrind  run the C tests and the busted suite under valgrind memcheck"
	@echo "make asan     run the whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer"
	@echo "make install  install library, header, pkg-config file, Lua module and the moraine command under PREFIX ($(PREFIX))"
	@echo "make clean    remove build/"
	@echo "make bench    benchmarks against SQLite, DuckDB and the LMDB floor (bench/README.md)"
	@echo "make crash-long  10,000 SIGKILLs of a committing writer, then of a sync (docs/reliability.md)"
	@echo "make fuzz     libFuzzer targets for a bounded time (docs/fuzzing.md)"
	@echo "make uninstall    remove what make install put under PREFIX"
	@echo "make lint     luacheck on every Lua file (.luacheckrc)"
	@echo "make docs     the Lua API as HTML in build/docs (LDoc, config.ld)"
	@echo "make deps     install the Debian packages of every target (each target installs its own: scripts/install-deps.sh)"

deps:
	@sh scripts/install-deps.sh

# Every Lua file of the repository (luacheck recurses into directories for *.lua).
LUA_LINT := bindings scripts/moraine scripts spec examples tests/fuzz bench

lint:
	@sh scripts/install-deps.sh lint
	luacheck -q $(LUA_LINT)

# The Lua API as HTML (LDoc reads config.ld): build/docs/index.html.
docs:
	@sh scripts/install-deps.sh docs
	ldoc -q -c config.ld -d $(BUILD)/docs .

# libmoraine.so.0.1.0, its SONAME libmoraine.so.0, and libmoraine.so for the linker.
SHLIB := $(BUILD)/libmoraine.so.$(VERSION)

lib: $(BUILD)/libmoraine.a $(SHLIB) $(BUILD)/libmoraine.so.$(SOMAJOR) $(BUILD)/libmoraine.so

$(BUILD)/engine/%.o: engine/%.c $(ENGINE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

# Written anew each time: `ar r` into an existing archive keeps the members of
# engine sources that no longer exist (a renamed file's old object would clash).
$(BUILD)/libmoraine.a: $(ENGINE_OBJ)
	rm -f $@
	ar rcs $@ $^

$(SHLIB): $(ENGINE_OBJ)
	$(CC) -shared $(SAN) -Wl,-soname,libmoraine.so.$(SOMAJOR) -o $@ $^ $(LIBS)

$(BUILD)/libmoraine.so.$(SOMAJOR) $(BUILD)/libmoraine.so: $(SHLIB)
	ln -sf libmoraine.so.$(VERSION) $@

# The Lua module: the C sources of bindings/ (one set for both runtimes),
# built once per runtime into one shared object.
lua: $(BUILD)/lua54/moraine/core.so $(BUILD)/luajit/moraine/core.so

$(BUILD)/lua54/moraine/core.so: $(BINDING_SRC) $(BINDING_HDR) $(ENGINE_OBJ) $(ENGINE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -I$(LUA54_INC) -shared -o $@ $(BINDING_SRC) $(ENGINE_OBJ) $(LIBS)

$(BUILD)/luajit/moraine/core.so: $(BINDING_SRC) $(BINDING_HDR) $(ENGINE_OBJ) $(ENGINE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -I$(LUAJIT_INC) -shared -o $@ $(BINDING_SRC) $(ENGINE_OBJ) $(LIBS)

# Each test binary: rebuilt when its source, the library it links (and so any
# engine source) or a header it reads changes.
$(BUILD)/tests/%: tests/c/%.c $(BUILD)/libmoraine.a tests/c/check.h $(ENGINE_HDR) $(BUILD)/tests/crash_writer $(BUILD)/tests/idorder_oracle
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests/c -o $@ $< $(BUILD)/libmoraine.a $(LIBS)

# The C++ library's std::unordered_map that test_idorder checks
# engine/verbs_idorder.c against (built without the sanitizers: it is the oracle).
$(BUILD)/tests/idorder_oracle: tests/c/idorder_oracle.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=c++11 -Wall -Wextra -Werror -O2 -o $@ $<

# The process the crash and concurrency tests kill or read beside.
$(BUILD)/tests/crash_writer: tests/crash/writer.c $(BUILD)/libmoraine.a $(ENGINE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libmoraine.a $(LIBS)

# 10,000 SIGKILLs of a committing writer (docs/reliability.md records a run).
crash-long: all $(BUILD)/tests/test_crash
	MORAINE_CRASH_KILLS=10000 $(BUILD)/tests/test_crash
	sh scripts/run-lua.sh lua5.4 $(BUILD) tests/crash/sync_kill.lua 10000

$(BUILD)/moraine.pc: moraine.pc.in
	@mkdir -p $(BUILD)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

# Tests: C tests, then busted under both runtimes. tests/run-all.sh sums the
# counts into the closing "N passed, N failed" line.
# `make test`, `make asan` and `make valgrind` count a skipped (pending) test
# as a failure (MORAINE_NO_SKIP=1): their setup installs everything the tests need.
test:
	@sh scripts/install-deps.sh test
	@$(MAKE) --no-print-directory all test-bin
	@MORAINE_NO_SKIP=1 sh tests/run-all.sh $(BUILD)

test-bin: $(CTEST_BIN)

test-c: all $(CTEST_BIN)
	@sh tests/run-all.sh $(BUILD) c

test-lua54: all
	@sh tests/run-all.sh $(BUILD) lua54

test-luajit: all
	@sh tests/run-all.sh $(BUILD) luajit

# The same suite under ASan+UBSan, in its own build tree. Lua loads the
# module with dlopen, so the sanitizer runtime is preloaded.
# (The test binaries are ordinary targets of that tree, so they are rebuilt
# whenever an engine source or header changes, like build/'s.)
asan:
	@sh scripts/install-deps.sh asan
	@$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" all test-bin
	@MORAINE_ASAN=1 MORAINE_NO_SKIP=1 sh tests/run-all.sh build-asan

# The C tests and the busted suite under valgrind memcheck (leaks and invalid
# reads fail the run), on a fresh build.
valgrind:
	@sh scripts/install-deps.sh valgrind
	@$(MAKE) --no-print-directory all test-bin
	@MORAINE_NO_SKIP=1 sh tests/run-all.sh $(BUILD) valgrind

demo:
	@sh scripts/install-deps.sh demo
	@$(MAKE) --no-print-directory all
	@sh scripts/run-lua.sh lua5.4 $(BUILD) scripts/demo.lua examples/catalogs/s1_evolution/catalog

# The benchmark (bench/README.md): moraine through C and Lua, the raw LMDB
# floor, SQLite (as DuckLake creates it, and indexed) and DuckDB on one
# generated catalog; sizes from BENCH_* (see bench/run.sh). Not part of `make test`.
BENCH_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -g -Iengine
BENCH_BIN    := $(BUILD)/bench/gen $(BUILD)/bench/bench $(BUILD)/bench/store_pages $(BUILD)/bench/lua54/benchclock.so $(BUILD)/bench/luajit/benchclock.so

.PHONY: bench
bench:
	@sh scripts/install-deps.sh bench
	@sh bench/setup.sh
	@$(MAKE) --no-print-directory all $(BENCH_BIN)
	@sh bench/run.sh $(BUILD)

$(BUILD)/bench/gen: bench/gen.c
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $<

$(BUILD)/bench/bench: bench/bench.c $(BUILD)/libmoraine.a $(ENGINE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(BUILD)/libmoraine.a -lsqlite3 $(LIBS)

$(BUILD)/bench/store_pages: bench/store_pages.c
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(LIBS)

$(BUILD)/bench/lua54/benchclock.so: bench/lclock.c
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -fPIC -shared -I$(LUA54_INC) -o $@ $< -lsqlite3

$(BUILD)/bench/luajit/benchclock.so: bench/lclock.c
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -fPIC -shared -I$(LUAJIT_INC) -o $@ $< -lsqlite3

# Install: library, header and pkg-config file; the Lua module for Lua 5.4 and
# LuaJIT where each runtime looks by default ($(PREFIX)/lib/lua/5.x and
# $(PREFIX)/share/lua/5.x; with PREFIX=/usr, Debian's multiarch C module
# directory); the `moraine` command in $(PREFIX)/bin, its first line kept and
# the installed module directories put first on its search path.
ifeq ($(PREFIX),/usr)
LUA_CMOD_BASE ?= $(PREFIX)/lib/$(shell $(CC) -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)/lua
else
LUA_CMOD_BASE ?= $(PREFIX)/lib/lua
endif
LUA54_LIBDIR  ?= $(LUA_CMOD_BASE)/5.4
LUA54_SHARE   ?= $(PREFIX)/share/lua/5.4
LUAJIT_LIBDIR ?= $(LUA_CMOD_BASE)/5.1
LUAJIT_SHARE  ?= $(PREFIX)/share/lua/5.1
INSTALL_LUA_SRC := bindings/moraine.lua $(wildcard bindings/moraine/*.lua)
INSTALL_CLI_SRC := $(wildcard bindings/moraine/cli/*.lua)

MANDIR ?= $(PREFIX)/share/man

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin \
	  $(DESTDIR)$(MANDIR)/man1
	install -m 644 $(BUILD)/libmoraine.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHLIB) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libmoraine.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libmoraine.so.$(SOMAJOR)
	ln -sf libmoraine.so.$(SOMAJOR) $(DESTDIR)$(PREFIX)/lib/libmoraine.so
	install -m 644 moraine.1 $(DESTDIR)$(MANDIR)/man1/moraine.1
	install -m 644 engine/moraine.h engine/moraine_verbs.h $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' moraine.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/moraine.pc
	chmod 644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/moraine.pc
	install -d $(DESTDIR)$(LUA54_LIBDIR)/moraine $(DESTDIR)$(LUAJIT_LIBDIR)/moraine \
	  $(DESTDIR)$(LUA54_SHARE)/moraine $(DESTDIR)$(LUAJIT_SHARE)/moraine \
	  $(DESTDIR)$(LUA54_SHARE)/moraine/cli $(DESTDIR)$(LUAJIT_SHARE)/moraine/cli
	install -m 755 $(BUILD)/lua54/moraine/core.so $(DESTDIR)$(LUA54_LIBDIR)/moraine/core.so
	install -m 755 $(BUILD)/luajit/moraine/core.so $(DESTDIR)$(LUAJIT_LIBDIR)/moraine/core.so
	for share in $(DESTDIR)$(LUA54_SHARE) $(DESTDIR)$(LUAJIT_SHARE); do \
	  install -m 644 bindings/moraine.lua $$share/moraine.lua || exit 1; \
	  for f in $(filter bindings/moraine/%,$(INSTALL_LUA_SRC)); do install -m 644 $$f $$share/moraine/ || exit 1; done; \
	  for f in $(INSTALL_CLI_SRC); do install -m 644 $$f $$share/moraine/cli/ || exit 1; done; \
	done
	@if [ -f scripts/moraine ]; then \
	  echo "install scripts/moraine -> $(DESTDIR)$(PREFIX)/bin/moraine"; \
	  if head -n 1 scripts/moraine | grep -q '^#!.*lua'; then \
	    { head -n 1 scripts/moraine; \
	      echo 'package.path = "$(LUA54_SHARE)/?.lua;" .. package.path; package.cpath = "$(LUA54_LIBDIR)/?.so;" .. package.cpath'; \
	      tail -n +2 scripts/moraine; } > $(DESTDIR)$(PREFIX)/bin/moraine; \
	  else cp scripts/moraine $(DESTDIR)$(PREFIX)/bin/moraine; fi && chmod 755 $(DESTDIR)$(PREFIX)/bin/moraine; \
	else echo "make install: scripts/moraine not found, the moraine command is not installed"; fi
	@$(MAKE) --no-print-directory ldconfig-note

# After installing libmoraine.so.$(SOMAJOR): the dynamic linker's cache. Run when
# installing into the system's own directories (/usr, /usr/local) as root;
# otherwise what to do is printed.
.PHONY: ldconfig-note
ldconfig-note:
	@if [ -z "$(DESTDIR)" ] && { [ "$(PREFIX)" = /usr ] || [ "$(PREFIX)" = /usr/local ]; } && [ "$$(id -u)" -eq 0 ] \
	  && command -v ldconfig >/dev/null 2>&1; then \
	  echo "ldconfig"; ldconfig; \
	else \
	  echo "make install: libmoraine.so.$(SOMAJOR) is in $(DESTDIR)$(PREFIX)/lib; run ldconfig as root if that directory is in /etc/ld.so.conf(.d), or set LD_LIBRARY_PATH=$(PREFIX)/lib"; \
	fi

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libmoraine.a $(DESTDIR)$(PREFIX)/lib/libmoraine.so \
	  $(DESTDIR)$(PREFIX)/lib/libmoraine.so.$(SOMAJOR) $(DESTDIR)$(PREFIX)/lib/libmoraine.so.$(VERSION) \
	  $(DESTDIR)$(MANDIR)/man1/moraine.1 \
	  $(DESTDIR)$(PREFIX)/include/moraine.h $(DESTDIR)$(PREFIX)/include/moraine_verbs.h $(DESTDIR)$(PREFIX)/lib/pkgconfig/moraine.pc $(DESTDIR)$(PREFIX)/bin/moraine \
	  $(DESTDIR)$(LUA54_LIBDIR)/moraine/core.so $(DESTDIR)$(LUAJIT_LIBDIR)/moraine/core.so \
	  $(DESTDIR)$(LUA54_SHARE)/moraine.lua $(DESTDIR)$(LUAJIT_SHARE)/moraine.lua \
	  $(DESTDIR)$(LUA54_SHARE)/moraine/*.lua $(DESTDIR)$(LUAJIT_SHARE)/moraine/*.lua \
	  $(DESTDIR)$(LUA54_SHARE)/moraine/cli/*.lua $(DESTDIR)$(LUAJIT_SHARE)/moraine/cli/*.lua
	-rmdir $(DESTDIR)$(LUA54_SHARE)/moraine/cli $(DESTDIR)$(LUAJIT_SHARE)/moraine/cli 2>/dev/null
	-rmdir $(DESTDIR)$(LUA54_LIBDIR)/moraine $(DESTDIR)$(LUAJIT_LIBDIR)/moraine \
	  $(DESTDIR)$(LUA54_SHARE)/moraine $(DESTDIR)$(LUAJIT_SHARE)/moraine 2>/dev/null

clean:
	rm -rf build build-asan

# ---- fuzzing (docs/fuzzing.md) -------------------------------------------------
# libFuzzer targets under ASan+UBSan, built with clang into build-fuzz/ (engine
# sources compiled straight into each target). `make fuzz` builds them, seeds
# the corpora from the fixtures, replays tests/fuzz/regressions/, then fuzzes
# each target for FUZZ_SECONDS, FUZZ_JOBS at a time. Not part of `make test`.
FUZZ_CC       ?= clang
FUZZ_BUILD    ?= build-fuzz
FUZZ_SECONDS  ?= 60
FUZZ_JOBS     ?= 2
FUZZ_TARGETS  ?= key record ndjson verbs ident sql
FUZZ_FIXTURES ?= tests/fixtures/ducklake
FUZZ_CFLAGS   := -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
                 -fno-sanitize-recover=undefined -Iengine -Itests/fuzz
FUZZ_LIBS     := -llmdb -ljansson -lsqlite3 -lpthread -lm
FUZZ_DEPS     := $(ENGINE_SRC) $(ENGINE_HDR) $(wildcard tests/fuzz/*.h)

.PHONY: fuzz fuzz-deps
fuzz: fuzz-deps
	@$(MAKE) --no-print-directory fuzz-run

fuzz-deps:
	@sh scripts/install-deps.sh fuzz

.PHONY: fuzz-run
fuzz-run: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%) $(FUZZ_BUILD)/corpus/.stamp
	@sh tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_JOBS) $(FUZZ_TARGETS)

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DEPS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(ENGINE_SRC) $(FUZZ_LIBS)

# The Lua sources of the verbs target, embedded (xxd -i: moraine_lua, the key readers
# moraine.lua loads (ident_lua, expr_lua, sql_lua, sql_types_lua), verbs_driver_lua).
$(FUZZ_BUILD)/verbs_lua.h: bindings/moraine.lua bindings/moraine/ident.lua bindings/moraine/expr.lua bindings/moraine/sql.lua \
  bindings/moraine/sql_types.lua tests/fuzz/verbs_driver.lua
	@mkdir -p $(dir $@)
	(cd bindings && xxd -i moraine.lua) > $@.tmp
	(cd bindings/moraine && xxd -i ident.lua && xxd -i expr.lua && xxd -i sql.lua && xxd -i sql_types.lua) >> $@.tmp
	(cd tests/fuzz && xxd -i verbs_driver.lua) >> $@.tmp
	mv $@.tmp $@

$(FUZZ_BUILD)/fuzz_verbs: tests/fuzz/fuzz_verbs.c $(BINDING_SRC) $(BINDING_HDR) $(FUZZ_BUILD)/verbs_lua.h $(FUZZ_DEPS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -I$(LUA54_INC) -I$(FUZZ_BUILD) -o $@ tests/fuzz/fuzz_verbs.c $(BINDING_SRC) \
	  $(ENGINE_SRC) $(FUZZ_LIBS) -llua5.4

# The Lua sources of the sql target, embedded (xxd -i: ident_lua, expr_lua, sql_lua, sql_types_lua, sql_driver_lua).
$(FUZZ_BUILD)/sql_lua.h: bindings/moraine/ident.lua bindings/moraine/expr.lua bindings/moraine/sql.lua bindings/moraine/sql_types.lua \
  tests/fuzz/sql_driver.lua
	@mkdir -p $(dir $@)
	(cd bindings/moraine && xxd -i ident.lua && xxd -i expr.lua && xxd -i sql.lua && xxd -i sql_types.lua) > $@.tmp
	(cd tests/fuzz && xxd -i sql_driver.lua) >> $@.tmp
	mv $@.tmp $@

$(FUZZ_BUILD)/fuzz_sql: tests/fuzz/fuzz_sql.c $(BINDING_SRC) $(BINDING_HDR) $(FUZZ_BUILD)/sql_lua.h $(FUZZ_DEPS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -I$(LUA54_INC) -I$(FUZZ_BUILD) -o $@ tests/fuzz/fuzz_sql.c $(BINDING_SRC) \
	  $(ENGINE_SRC) $(FUZZ_LIBS) -llua5.4

$(FUZZ_BUILD)/seed_corpus: tests/fuzz/seed_corpus.c $(FUZZ_DEPS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=address,undefined -Iengine -Itests/fuzz -o $@ $< $(ENGINE_SRC) $(FUZZ_LIBS)

$(FUZZ_BUILD)/corpus/.stamp: $(FUZZ_BUILD)/seed_corpus
	$(FUZZ_BUILD)/seed_corpus $(FUZZ_FIXTURES) $(FUZZ_BUILD)/corpus
	@touch $@
