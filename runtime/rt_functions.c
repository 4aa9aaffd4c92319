/* rt_functions.def checked against the runtime's C prototypes at compile
 * time: each row becomes a _Static_assert that sg_rt_<name>, as sgrt.h
 * declares it (and its defining file, which includes sgrt.h, defines it),
 * has exactly the row's type. A row whose types or arity differ from the C
 * function, or that names no function, stops the build; so the LLVM
 * declarations codegen makes from the same rows are the functions'. No
 * code: the object is empty. */
#include "sgrt.h"

#define RT_VOID void
#define RT_I32 int
#define RT_I64 int64_t
#define RT_PTR(T) T
#define RT(name, ret, params)                                                                  \
  _Static_assert(_Generic(&sg_rt_##name, ret(*) params: 1, default: 0),                       \
                 "runtime/rt_functions.def: the row of sg_rt_" #name                            \
                 " differs from its prototype in runtime/sgrt.h");
#include "rt_functions.def"
