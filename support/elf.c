/* support/elf.c — a shared object checked before dlopen (kfuse/elf.h).
 * The dynamic loader maps a file's segments as its program headers say and
 * touches them: a module cut short (a copy interrupted, a disk full) then
 * dies of SIGBUS inside dlopen, taking the loading process with it. So the
 * loaders (kfuse run, kfuse.load) read the ELF header first: the magic, a
 * 64-bit little-endian x86-64 shared object, the program and section
 * header tables inside the file, and every loadable segment's bytes inside
 * it. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kfuse/elf.h"

static bool within(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

bool kf_elf_check(const char *path, char *why, size_t n) {
  why[0] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, n, "cannot open it: %s", strerror(errno));
    return false;
  }
  bool ok = false;
  struct stat st;
  Elf64_Ehdr eh;
  if (fstat(fd, &st) != 0) {
    snprintf(why, n, "cannot stat it: %s", strerror(errno));
    goto out;
  }
  uint64_t size = (uint64_t)st.st_size;
  if (!S_ISREG(st.st_mode)) {
    snprintf(why, n, "not a regular file");
    goto out;
  }
  if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    snprintf(why, n, "not an ELF file (%llu bytes)", (unsigned long long)size);
    goto out;
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64 ||
      eh.e_type != ET_DYN) {
    snprintf(why, n, "not an x86-64 shared object (class %d, machine %d, type %d)", eh.e_ident[EI_CLASS],
             eh.e_machine, eh.e_type);
    goto out;
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
      !within(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), size)) {
    snprintf(why, n, "its program headers lie outside its %llu bytes: truncated or damaged", (unsigned long long)size);
    goto out;
  }
  if (eh.e_shnum && (eh.e_shentsize != sizeof(Elf64_Shdr) ||
                     !within(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), size))) {
    snprintf(why, n, "its section headers end past its %llu bytes: truncated", (unsigned long long)size);
    goto out;
  }
  for (int i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != (ssize_t)sizeof ph) {
      snprintf(why, n, "cannot read its program header %d", i);
      goto out;
    }
    if (ph.p_type == PT_LOAD && !within(ph.p_offset, ph.p_filesz, size)) {
      snprintf(why, n, "segment %d ends at byte %llu of a %llu-byte file: truncated", i,
               (unsigned long long)(ph.p_offset + ph.p_filesz), (unsigned long long)size);
      goto out;
    }
  }
  ok = true;
out:
  close(fd);
  return ok;
}
