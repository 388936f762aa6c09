/* kfuse/elf.h — a module file checked before dlopen (support/elf.c). */
#ifndef KFUSE_ELF_H
#define KFUSE_ELF_H

#include <stdbool.h>
#include <stddef.h>

#include "kfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True when path is a whole 64-bit x86-64 ELF shared object: its program
 * and section header tables and every loadable segment inside the file,
 * so dlopen will not fault on it; else false with why (truncated, not
 * ELF, another machine's). */
KF_API bool kf_elf_check(const char *path, char *why, size_t n);

#ifdef __cplusplus
}
#endif
#endif
