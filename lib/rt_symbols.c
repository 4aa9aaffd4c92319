/* The JIT's table of the runtime functions (lib/jit.c binds the generated
 * code's calls to these addresses, so linking works whether libsgrt is
 * linked statically, is part of libsgc.so, or was loaded with RTLD_LOCAL,
 * as Python's ctypes does): one entry per row of runtime/rt_functions.def,
 * the table codegen declares the functions from, so every runtime function
 * the generated code can call is here. */
#include "jit.h"
#include "sgrt.h"

#define RT(name, ret, params) {"sg_rt_" #name, (JitRtFunction *)sg_rt_##name},
const JitRtSymbol jit_rt_symbols[] = {
#include "rt_functions.def"
    {0, 0},
};
