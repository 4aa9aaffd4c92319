/* Driver for rules.test: the gradient rules of LANGUAGE.md section 7 as
 * exact checks at chosen points, for the f32 build (ru_*) and the f64 build
 * (ru64_*) of rules.sg. rules_body.h holds the checks; it is included once
 * per dtype with DT (the sg_dtype) and F(name) (the export) defined. */
#include "rules32.h"
#include "rules64.h"
#include "opsutil.h"

static double sq_(double v) { return v * v; }

#define DT SG_F32
#define F(name) ru_##name
#define RULES rules_f32
#include "rules_body.h"
#undef DT
#undef F
#undef RULES

#define DT SG_F64
#define F(name) ru64_##name
#define RULES rules_f64
#include "rules_body.h"

int main(void) {
  printf("== f32\n");
  rules_f32();
  printf("== f64\n");
  rules_f64();
  return sgt_finish();
}
