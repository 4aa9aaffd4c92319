/* Driver for rules_forward.test: section 7's rules in forward mode, exact
 * checks at chosen points of test/ops/Inputs/rules.sg's exports' f_jvp, for
 * the f32 build (ru_*) and the f64 build (ru64_*). */
#include "rules32.h"
#include "rules64.h"
#include "opsutil.h"

#define DT SG_F32
#define F(name) ru_##name
#define RULES(name) rules_f32_##name
#include "rules_jvp_body.h"
#undef DT
#undef F
#undef RULES

#define DT SG_F64
#define F(name) ru64_##name
#define RULES(name) rules_f64_##name
#include "rules_jvp_body.h"

int main(void) {
  printf("== f32\n");
  rules_f32_run();
  printf("== f64\n");
  rules_f64_run();
  return sgt_finish();
}
