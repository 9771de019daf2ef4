# moraine — build, test, demo, install.  `make help` lists the targets.
PREFIX   ?= /usr/local
CC       ?= cc
LUA54_INC ?= /usr/include/lua5.4
LUAJIT_INC ?= /usr/include/luajit-2.1
WARN     := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
OPT      ?= -O2 -g
SAN      :=
CFLAGS_ALL = $(WARN) $(OPT) $(SAN) -fPIC -Iengine
LIBS     := -llmdb -ljansson -lpthread -lm
BUILD    ?= build

ENGINE_SRC := $(sort $(wildcard engine/*.c))
ENGINE_OBJ := $(ENGINE_SRC:engine/%.c=$(BUILD)/engine/%.o)
CTEST_SRC  := $(sort $(wildcard tests/c/test_*.c))
CTEST_BIN  := $(CTEST_SRC:tests/c/%.c=$(BUILD)/tests/%)

.PHONY: all lib lua test test-c test-lua test-lua54 test-luajit demo asan valgrind install uninstall clean deps help

all: lib lua $(BUILD)/moraine.pc

help:
	@echo "make          build libmoraine and the Lua module (Lua 5.4 and LuaJIT)"
	@echo "make test     install missing Debian packages, build, run C tests and busted specs under Lua 5.4 and LuaJIT"
	@echo "make demo     install missing packages, build, import the bundled real catalog and show its spec history"
	@echo "make valgrind  run the C tests under valgrind memcheck"
	@echo "make asan     run the whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer"
	@echo "make install  install library, header, pkg-config file, Lua module and the moraine command under PREFIX ($(PREFIX))"
	@echo "make clean    remove build/"

deps:
	@sh scripts/install-deps.sh

lib: $(BUILD)/libmoraine.a $(BUILD)/libmoraine.so

$(BUILD)/engine/%.o: engine/%.c engine/moraine.h engine/internal.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/libmoraine.a: $(ENGINE_OBJ)
	ar rcs $@ $^

$(BUILD)/libmoraine.so: $(ENGINE_OBJ)
	$(CC) -shared $(SAN) -o $@ $^ $(LIBS)

# The Lua module: one C source, built once per runtime.
lua: $(BUILD)/lua54/moraine/core.so $(BUILD)/luajit/moraine/core.so

$(BUILD)/lua54/moraine/core.so: bindings/moraine_core.c $(ENGINE_OBJ) engine/moraine.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -I$(LUA54_INC) -shared -o $@ bindings/moraine_core.c $(ENGINE_OBJ) $(LIBS)

$(BUILD)/luajit/moraine/core.so: bindings/moraine_core.c $(ENGINE_OBJ) engine/moraine.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -I$(LUAJIT_INC) -shared -o $@ bindings/moraine_core.c $(ENGINE_OBJ) $(LIBS)

$(BUILD)/tests/%: tests/c/%.c $(BUILD)/libmoraine.a tests/c/check.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests/c -o $@ $< $(BUILD)/libmoraine.a $(LIBS)

$(BUILD)/moraine.pc: moraine.pc.in
	@mkdir -p $(BUILD)
	sed -e 's|@PREFIX@|$(PREFIX)|g' $< > $@

# Tests: C tests, then busted under both runtimes. tests/run-all.sh sums the
# counts into the closing "N passed, N failed" line.
test: deps
	@$(MAKE) --no-print-directory all $(CTEST_BIN)
	@sh tests/run-all.sh $(BUILD)

test-c: all $(CTEST_BIN)
	@sh tests/run-all.sh $(BUILD) c

test-lua54: all
	@sh tests/run-all.sh $(BUILD) lua54

test-luajit: all
	@sh tests/run-all.sh $(BUILD) luajit

# The same suite under ASan+UBSan, in its own build tree. Lua loads the
# module with dlopen, so the sanitizer runtime is preloaded.
asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" all build-asan/tests/.stamp
	@MORAINE_ASAN=1 sh tests/run-all.sh build-asan

build-asan/tests/.stamp: $(CTEST_SRC)
	@$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" $(CTEST_SRC:tests/c/%.c=build-asan/tests/%)
	@touch $@

# The C tests under valgrind memcheck (leaks and invalid reads fail the run).
valgrind: $(CTEST_BIN)
	@sh tests/run-all.sh $(BUILD) valgrind

demo: deps
	@$(MAKE) --no-print-directory all
	@sh scripts/run-lua.sh lua5.4 $(BUILD) scripts/demo.lua examples/catalogs/s1_evolution/catalog

LUA54_LIBDIR  ?= $(PREFIX)/lib/x86_64-linux-gnu/lua/5.4
LUA54_SHARE   ?= $(PREFIX)/share/lua/5.4
LUAJIT_LIBDIR ?= $(PREFIX)/lib/x86_64-linux-gnu/lua/5.1
LUAJIT_SHARE  ?= $(PREFIX)/share/lua/5.1

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(BUILD)/libmoraine.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libmoraine.so $(DESTDIR)$(PREFIX)/lib/
	install -m 644 engine/moraine.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/moraine.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -d $(DESTDIR)$(LUA54_LIBDIR)/moraine $(DESTDIR)$(LUAJIT_LIBDIR)/moraine $(DESTDIR)$(LUA54_SHARE) $(DESTDIR)$(LUAJIT_SHARE)
	install -m 755 $(BUILD)/lua54/moraine/core.so $(DESTDIR)$(LUA54_LIBDIR)/moraine/
	install -m 755 $(BUILD)/luajit/moraine/core.so $(DESTDIR)$(LUAJIT_LIBDIR)/moraine/
	install -m 644 bindings/moraine.lua $(DESTDIR)$(LUA54_SHARE)/moraine.lua
	install -m 644 bindings/moraine.lua $(DESTDIR)$(LUAJIT_SHARE)/moraine.lua
	if [ -f scripts/moraine ]; then install -m 755 scripts/moraine $(DESTDIR)$(PREFIX)/bin/moraine; fi

clean:
	rm -rf build build-asan
