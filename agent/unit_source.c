/* agent/unit_source.c — what a unit's source may include.
 *
 * A unit's source is untrusted (a model wrote it), and NVRTC opens any file
 * an #include names that the compiling process can read: by absolute path,
 * by a path relative to the working directory or to an include directory
 * ("../../etc/..."), and its error log quotes the lines it read, which the
 * verdict hands back to the policy. So before NVRTC sees a source, every
 * directive that opens a file is checked against an allow-list:
 *
 *   - kfuse's own headers (the embedded kf_*.cuh), "" or <>;
 *   - the CUDA toolkit's device headers an honest kernel needs, <> only:
 *     cuda_fp16.h, cuda_bf16.h, cuda_fp8.h, mma.h, the pipeline and
 *     barrier headers, cooperative_groups.h and cooperative_groups/NAME,
 *     cuda/NAME (pipeline, barrier, atomic, ptx, ...) and cuda/std/NAME.
 *
 * Anything else is refused with the line it is on, as is every construct
 * that could make this scan and the compiler's preprocessor disagree about
 * what is a directive: a name produced by a macro (#include X), raw string
 * literals (a comment opener inside one reads as code to a scanner that
 * does not know them), trigraphs, a backslash followed by spaces at a line
 * end (some preprocessors splice there, some do not), and __has_include
 * (which probes the host's files). #include_next, #import and #embed are
 * refused whatever they name. (NVRTC gets the source as a C string, so a
 * NUL byte ends it for the compiler exactly where it ends it here.)
 *
 * The scan follows the preprocessor's first phases: lines spliced at a
 * backslash-newline, comments removed outside string and character
 * literals (with C++14 digit separators inside numbers), and a directive
 * being '#' (or the digraph '%:') first on a line. Where this scan is
 * unsure it sees more directives than the compiler, never fewer: a '#'
 * after a comment that spans lines is treated as a directive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

/* toolkit headers by exact name */
static const char *const toolkit_exact[] = {
  "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "cuda_fp6.h", "cuda_fp4.h", "mma.h",
  "cuda_pipeline.h", "cuda_pipeline_primitives.h", "cuda_awbarrier.h",
  "cuda_awbarrier_primitives.h", "cooperative_groups.h", "sm_90_rt.h",
};
/* toolkit headers by folder: one more path segment */
static const char *const toolkit_dirs[] = {"cooperative_groups/", "cuda/", "cuda/std/"};

/* A path segment: letters, digits, '_', '-' and '.', not starting with '.' */
static bool plain_segment(const char *s, size_t n) {
  if (n == 0 || s[0] == '.') return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
          c == '.'))
      return false;
  }
  return true;
}

static bool is_template_header(const char *name, size_t n) {
  for (int i = 0; i < kf_n_templates; i++) {
    const char *t = kf_templates[i].name;
    size_t l = strlen(t);
    if (l == n && l > 4 && strcmp(t + l - 4, ".cuh") == 0 && memcmp(t, name, n) == 0) return true;
  }
  return false;
}

static bool is_toolkit_header(const char *name, size_t n) {
  for (size_t i = 0; i < sizeof toolkit_exact / sizeof toolkit_exact[0]; i++)
    if (strlen(toolkit_exact[i]) == n && memcmp(toolkit_exact[i], name, n) == 0) return true;
  for (size_t i = 0; i < sizeof toolkit_dirs / sizeof toolkit_dirs[0]; i++) {
    size_t l = strlen(toolkit_dirs[i]);
    if (n > l && memcmp(name, toolkit_dirs[i], l) == 0 && memchr(name + l, '/', n - l) == NULL &&
        plain_segment(name + l, n - l))
      return true;
  }
  return false;
}

/* ---- the scan ---- */

typedef struct scan {
  char *text; /* spliced, comments replaced by spaces; '\n' kept */
  size_t n;
  int *line;  /* the source line of each byte of text */
  kf_strbuf *why;
  int refused;
  bool toolkit;
} scan;

static void refuse(scan *s, int line, const char *fmt, const char *arg, size_t argn) {
  s->refused++;
  if (s->refused > 10) return; /* the first ten are enough */
  char quoted[96];
  size_t k = argn < 80 ? argn : 80;
  size_t j = 0;
  for (size_t i = 0; i < k && j + 1 < sizeof quoted; i++) /* the unit's own text, printable */
    quoted[j++] = (arg[i] >= 0x20 && arg[i] < 0x7f) ? arg[i] : '?';
  quoted[j] = '\0';
  kf_strbuf_printf(s->why, "line %d: ", line);
  kf_strbuf_printf(s->why, fmt, quoted, argn > 80 ? "..." : "");
  kf_strbuf_printf(s->why, "\n");
}

static bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Phases 1-2: splice backslash-newline; refuse what could be read two ways.
 * Returns false on allocation failure. */
static bool splice(scan *s, const char *src) {
  size_t n = strlen(src);
  s->text = malloc(n + 1);
  s->line = malloc((n + 1) * sizeof *s->line);
  if (!s->text || !s->line) return false;
  int line = 1;
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    char c = src[i];
    if (c == '\\') {
      size_t k = i + 1;
      while (k < n && (src[k] == ' ' || src[k] == '\t' || src[k] == '\r')) k++;
      if (k < n && src[k] == '\n') {
        bool spaces = false;
        for (size_t q = i + 1; q < k; q++) spaces |= src[q] != '\r';
        if (spaces) refuse(s, line, "a backslash followed by spaces ends the line%s%s", "", 0);
        line++;
        i = k;
        continue;
      }
    }
    if (c == '?' && i + 2 < n && src[i + 1] == '?' && strchr("=/'()!<>-", src[i + 2]))
      refuse(s, line, "a trigraph (??%.1s%s)", src + i + 2, 1);
    s->line[j] = line;
    s->text[j++] = c;
    if (c == '\n') line++;
  }
  s->text[j] = '\0';
  s->line[j] = line;
  s->n = j;
  return true;
}

/* Phase 3, enough of it: comments become spaces (newlines kept), literals
 * are skipped whole; raw strings refused. */
static void strip_comments(scan *s) {
  char *t = s->text;
  size_t n = s->n;
  size_t i = 0;
  while (i < n) {
    char c = t[i];
    if (c == '/' && i + 1 < n && t[i + 1] == '/') {
      while (i < n && t[i] != '\n') t[i++] = ' ';
    } else if (c == '/' && i + 1 < n && t[i + 1] == '*') {
      t[i++] = ' ';
      t[i++] = ' ';
      while (i < n && !(t[i] == '*' && i + 1 < n && t[i + 1] == '/')) {
        if (t[i] != '\n') t[i] = ' ';
        i++;
      }
      if (i < n) {
        t[i++] = ' ';
        t[i++] = ' ';
      }
    } else if (c >= '0' && c <= '9' && (i == 0 || !ident_char(t[i - 1]))) {
      /* a pp-number: digits, letters, '.', "e+" and the like, and the
       * digit separator ' between two of its characters */
      i++;
      while (i < n) {
        char d = t[i];
        if (ident_char(d) || d == '.') i++;
        else if ((d == '+' || d == '-') && strchr("eEpP", t[i - 1])) i++;
        else if (d == '\'' && i + 1 < n && ident_char(t[i + 1])) i += 2;
        else break;
      }
    } else if (ident_char(c)) {
      size_t b = i;
      while (i < n && ident_char(t[i])) i++;
      size_t l = i - b;
      if ((l == 13 && memcmp(t + b, "__has_include", 13) == 0) ||
          (l == 18 && memcmp(t + b, "__has_include_next", 18) == 0) || (l == 11 && memcmp(t + b, "__has_embed", 11) == 0))
        refuse(s, s->line[b], "%s%s is not allowed in a unit", t + b, l);
      /* an encoding prefix ending in R opens a raw string */
      if (i < n && t[i] == '"' && t[i - 1] == 'R' &&
          (i - b == 1 || ((i - b == 2) && strchr("LuU", t[b])) || (i - b == 3 && t[b] == 'u' && t[b + 1] == '8')))
        refuse(s, s->line[b], "a raw string literal%s%s", "", 0);
    } else if (c == '"' || c == '\'') {
      i++;
      while (i < n && t[i] != c && t[i] != '\n') i += t[i] == '\\' && i + 1 < n && t[i + 1] != '\n' ? 2 : 1;
      if (i < n && t[i] == c) i++;
    } else {
      i++;
    }
  }
}

static size_t skip_blank(const char *t, size_t i, size_t n) {
  while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || t[i] == '\v' || t[i] == '\f')) i++;
  return i;
}

/* One directive at t[i] (just past '#'); returns the end of its line. */
static size_t directive(scan *s, size_t i) {
  const char *t = s->text;
  size_t n = s->n;
  int line = s->line[i];
  i = skip_blank(t, i, n);
  size_t b = i;
  while (i < n && ident_char(t[i])) i++;
  size_t wl = i - b;
  size_t eol = i;
  while (eol < n && t[eol] != '\n') eol++;
  if (wl == 0) return eol;
  const char *w = t + b;
  bool inc = wl == 7 && memcmp(w, "include", 7) == 0;
  if (!inc) {
    if ((wl == 12 && memcmp(w, "include_next", 12) == 0) || (wl == 6 && memcmp(w, "import", 6) == 0) ||
        (wl == 5 && memcmp(w, "embed", 5) == 0))
      refuse(s, line, "#%s%s is not allowed in a unit", w, wl);
    return eol;
  }
  i = skip_blank(t, i, n);
  char open = i < n ? t[i] : '\n';
  char close = open == '<' ? '>' : open == '"' ? '"' : 0;
  if (!close) {
    refuse(s, line, "#include %s%s: a unit names its header literally, in <> or \"\"", t + i, eol - i);
    return eol;
  }
  size_t nb = i + 1, ne = nb;
  while (ne < eol && t[ne] != close) ne++;
  size_t after = ne < eol ? skip_blank(t, ne + 1, n) : ne;
  if (ne >= eol || after != eol) {
    refuse(s, line, "#include %s%s: not one header name", t + i, eol - i);
    return eol;
  }
  const char *name = t + nb;
  size_t nl = ne - nb;
  if (is_template_header(name, nl)) return eol;
  if (open == '<' && is_toolkit_header(name, nl)) {
    s->toolkit = true;
    return eol;
  }
  if (open == '"' && is_toolkit_header(name, nl)) {
    refuse(s, line, "#include \"%s\"%s: the toolkit's headers are included as <...>", name, nl);
    return eol;
  }
  refuse(s, line,
         "#include of %s%s is not allowed: a unit may include kfuse's headers (kf_*.cuh) and the CUDA "
         "toolkit's device headers (<cuda_fp16.h>, <cuda_bf16.h>, <cuda_fp8.h>, <mma.h>, <cuda_pipeline.h>, "
         "<cooperative_groups.h>, <cooperative_groups/NAME>, <cuda/NAME>, <cuda/std/NAME>)",
         name, nl);
  return eol;
}

/* Directives: '#' or '%:' first on a line. Comments are blanks by now and
 * no literal spans a line (raw strings are refused), so a line's first
 * character is never inside either. */
static void directives(scan *s) {
  const char *t = s->text;
  size_t n = s->n;
  for (size_t i = 0; i < n;) {
    i = skip_blank(t, i, n);
    if (i < n && (t[i] == '#' || (t[i] == '%' && i + 1 < n && t[i + 1] == ':'))) i = directive(s, i + (t[i] == '#' ? 1 : 2));
    while (i < n && t[i] != '\n') i++;
    i++;
  }
}

bool kf_unit_source_check(const char *source, bool *needs_toolkit, kf_strbuf *why) {
  scan s = {0};
  s.why = why;
  if (needs_toolkit) *needs_toolkit = false;
  if (!source) return true;
  if (!splice(&s, source)) {
    kf_strbuf_printf(why, "out of memory checking the source\n");
    free(s.text);
    free(s.line);
    return false;
  }
  strip_comments(&s);
  directives(&s);
  if (s.refused > 10) kf_strbuf_printf(why, "(%d more)\n", s.refused - 10);
  if (needs_toolkit) *needs_toolkit = s.toolkit;
  free(s.text);
  free(s.line);
  return s.refused == 0;
}
