# sgc: build the compiler (build/bin/sgc, build/bin/sgc-opt), the runtime
# (build/lib/libsgrt.a), the compiler as a library (build/lib/libsgc.a and
# libsgc.so, build/include/sgc.h) and the Python module (build/python/sgc). `make check` runs the lit suite, `make demo` the
# shipped stable-softmax example. On a fresh machine the first `make` installs
# flex, bison and LLVM 19 (see tools/configure.sh).

LLVM_CONFIG ?= llvm-config-19
CC ?= cc
PREFIX ?= /usr/local
B := build
# The one place the version is written is lib/sgc.h (SGC_VERSION): the
# command's --version, the .pc files and the Python module read it there.
VERSION := $(shell sed -n 's/^\#define SGC_VERSION "\(.*\)"$$/\1/p' lib/sgc.h)
.DEFAULT_GOAL := all

WARN := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wmissing-prototypes -Werror
OPT ?= -O2 -g
SAN ?=
# -fPIC: the compiler's objects also make up libsgc.so; without semantic
# interposition the compiler still inlines its own functions as without it.
CFLAGS_ALL = $(WARN) $(OPT) $(SAN) -fPIC -fno-semantic-interposition -D_POSIX_C_SOURCE=200809L
# The runtime's kernels are built for speed; target_clones picks AVX2/AVX-512
# versions at load time, so the library stays portable.
RT_OPT ?= -O3 -g

-include $(B)/config.mk
$(B)/config.mk: tools/configure.sh
	@mkdir -p $(B)
	LLVM_CONFIG=$(LLVM_CONFIG) CC="$(CC)" sh tools/configure.sh $@

# ---- sources: one stage per folder ----
FRONT_SRC := $(filter-out frontend/parser.c frontend/lexer.c,$(wildcard frontend/*.c))
IR_SRC := $(wildcard ir/*.c)
PASS_SRC := $(wildcard passes/*.c)
CG_SRC := $(wildcard codegen/*.c)
RT_SRC := $(wildcard runtime/*.c)
DRV_COMMON := driver/pipeline.c driver/options.c driver/files.c

GEN := $(B)/gen
GEN_SRC := $(GEN)/parser.c $(GEN)/lexer.c
LIB_SRC := $(FRONT_SRC) $(IR_SRC) $(PASS_SRC) $(CG_SRC) $(DRV_COMMON)
LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o) $(GEN)/parser.o $(GEN)/lexer.o
RT_OBJ := $(RT_SRC:%.c=$(B)/obj/%.o)
SGCLIB_OBJ := $(B)/obj/lib/libsgc.o $(B)/obj/lib/jit.o $(B)/obj/lib/cache.o $(B)/obj/lib/rt_symbols.o

SGC := $(B)/bin/sgc
SGC_OPT := $(B)/bin/sgc-opt
LIBSGRT := $(B)/lib/libsgrt.a
LIBSGC := $(B)/lib/libsgc.a
PYMOD := $(B)/python/sgc
LIBSGC_SO := $(PYMOD)/libsgc.so
PYTHON := /usr/bin/python3

all: $(SGC) $(SGC_OPT) $(LIBSGRT) $(B)/include/sg_runtime.h \
     $(LIBSGC) $(LIBSGC_SO) $(B)/include/sgc.h $(PYMOD)/__init__.py $(PYMOD)/torch.py

# Objects depend on the Makefile too: a change of flags (-fPIC) rebuilds them.
$(B)/obj/%.o: %.c $(B)/config.mk $(GEN)/parser.h Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LLVM_CFLAGS) -I$(GEN) -MMD -MP -c $< -o $@

$(B)/obj/driver/options.o: CFLAGS_ALL += -DSGC_VERSION='"$(VERSION)"'
$(B)/obj/driver/options.o: lib/sgc.h

$(B)/obj/lib/%.o: lib/%.c $(B)/config.mk $(GEN)/parser.h Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LLVM_CFLAGS) -Iruntime -I$(GEN) -MMD -MP -c $< -o $@

$(B)/obj/runtime/%.o: runtime/%.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(RT_OPT) $(SAN) -fPIC -D_POSIX_C_SOURCE=200809L -MMD -MP -c $< -o $@
# The random numbers are the same bits everywhere only without fused multiply-adds.
$(B)/obj/runtime/philox.o: RT_OPT += -ffp-contract=off

# Generated parser and lexer: warnings that the generated code trips over
# are relaxed for those two files only.
$(GEN)/parser.c $(GEN)/parser.h: frontend/parser.y
	@mkdir -p $(GEN)
	bison -Wall -Werror --defines=$(GEN)/parser.h -o $(GEN)/parser.c $<
$(GEN)/lexer.c $(GEN)/lexer.h: frontend/lexer.l $(GEN)/parser.h
	@mkdir -p $(GEN)
	flex --header-file=$(GEN)/lexer.h -o $(GEN)/lexer.c $<
GEN_WARN := -Wno-unused-function -Wno-missing-prototypes -Wno-sign-compare -Wno-unused-parameter
$(GEN)/parser.o: $(GEN)/parser.c $(GEN)/lexer.h Makefile
	$(CC) $(CFLAGS_ALL) $(GEN_WARN) -Ifrontend -I$(GEN) -c $< -o $@
$(GEN)/lexer.o: $(GEN)/lexer.c $(GEN)/parser.h Makefile
	$(CC) $(CFLAGS_ALL) $(GEN_WARN) -Ifrontend -I$(GEN) -c $< -o $@

# LLVM_TOOL_LDFLAGS: LLVM's static libraries where they link (configure.sh).
$(SGC): $(B)/obj/driver/sgc.o $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $^ -o $@ $(LLVM_TOOL_LDFLAGS) -lm -lpthread
$(SGC_OPT): $(B)/obj/driver/sgc_opt.o $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $^ -o $@ $(LLVM_TOOL_LDFLAGS) -lm -lpthread

$(LIBSGRT): $(RT_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(B)/include/sg_runtime.h: runtime/sg_runtime.h
	@mkdir -p $(dir $@)
	cp $< $@

# libsgc (lib/): the compiler's stages plus the JIT. libsgc.a leaves the
# runtime to -lsgrt; libsgc.so, which the Python module loads (and which
# lives in it, so that -lsgc always means the static library), carries its
# own copy and exports only the public names.
$(LIBSGC): $(LIB_OBJ) $(SGCLIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(LIBSGC_SO): $(LIB_OBJ) $(SGCLIB_OBJ) $(RT_OBJ) lib/libsgc.map
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -shared -Wl,--version-script=lib/libsgc.map -Wl,-soname,libsgc.so \
	  $(LIB_OBJ) $(SGCLIB_OBJ) $(RT_OBJ) -o $@ $(LLVM_LDFLAGS) -lm -lpthread
$(B)/include/sgc.h: lib/sgc.h
	@mkdir -p $(dir $@)
	cp $< $@
$(PYMOD)/%.py: python/sgc/%.py
	@mkdir -p $(dir $@)
	cp $< $@

# The Python module goes where Debian's python3 looks for PREFIX=/usr
# (lib/python3/dist-packages); for any other PREFIX, put that directory on
# PYTHONPATH.
PYDIR = $(PREFIX)/lib/python3/dist-packages/sgc
install: all
	install -d $(PREFIX)/bin $(PREFIX)/include $(PREFIX)/lib/pkgconfig $(PYDIR) \
	  $(PREFIX)/share/man/man1
	install -m 755 $(SGC) $(PREFIX)/bin/sgc
	install -m 644 runtime/sg_runtime.h $(PREFIX)/include/sg_runtime.h
	install -m 644 lib/sgc.h $(PREFIX)/include/sgc.h
	install -m 644 $(LIBSGRT) $(PREFIX)/lib/libsgrt.a
	install -m 644 $(LIBSGC) $(PREFIX)/lib/libsgc.a
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	  lib/pkgconfig/sgrt.pc.in > $(PREFIX)/lib/pkgconfig/sgrt.pc
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@LLVM_LIBS@|$(LLVM_LDFLAGS)|' \
	  lib/pkgconfig/sgc.pc.in > $(PREFIX)/lib/pkgconfig/sgc.pc
	install -m 644 python/sgc/__init__.py python/sgc/torch.py $(PYDIR)/
	install -m 644 $(LIBSGC_SO) $(PYDIR)/libsgc.so
	sed 's|@VERSION@|$(VERSION)|' docs/sgc.1.in > $(PREFIX)/share/man/man1/sgc.1

# ---- tests ----
LIT_FLAGS ?= -sv
check: all
	SGC_VERIFY=1 sh tools/lit.sh $(LIT) $(LIT_FLAGS)

# The whole suite with the compiler, the runtime and the test drivers built
# under AddressSanitizer and UndefinedBehaviorSanitizer, in a separate tree.
# float-cast-overflow by name: gcc's `undefined` leaves it out.
ASAN_CHECKS = -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all
check-asan:
	$(MAKE) B=build-asan SAN="$(ASAN_CHECKS) -fno-omit-frame-pointer" all
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 LSAN_OPTIONS=suppressions=$(CURDIR)/test/lsan.supp SGC_BUILD=build-asan SGC_TEST_SAN="$(ASAN_CHECKS)" \
	  SGC_VERIFY=1 sh tools/lit.sh $(LIT) $(LIT_FLAGS)

demo: all
	@sh examples/demo.sh

# docs/graphs/*.svg: the --emit-dot picture of every example (needs graphviz)
graphs: all
	@sh tools/render_graphs.sh $(SGC) docs/graphs

# bench/run.sh: the generated code against hand-written C and PyTorch;
# bench/python_overhead.py: the cost of a call from Python.
bench: all
	@status=0; sh bench/run.sh || status=$$?; echo; \
	echo "== Python: the cost of a call (bench/python_overhead.py) =="; \
	PYTHONPATH=$(B)/python $(PYTHON) bench/python_overhead.py || status=1; exit $$status

FUZZ_SECONDS ?= 60
fuzz: $(B)/config.mk
	@sh tools/fuzz.sh $(FUZZ_SECONDS)

clean:
	rm -rf build build-asan

.PHONY: all install check check-asan demo bench fuzz clean graphs
-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
