/* frontend/aten.c — placeholder; being written. */
#include "kfuse/frontend.h"
void kf_aten_list(kf_aten_visit_fn fn, void *user) { (void)fn; (void)user; }
