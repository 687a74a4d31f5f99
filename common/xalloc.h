/* Allocation wrappers that abort on out-of-memory, and overflow-checked size arithmetic,
 * so that call sites stay clean and a size computed from untrusted input cannot wrap. */
#ifndef CP_XALLOC_H
#define CP_XALLOC_H

#include <stddef.h>
#include <stdint.h>

/* All return owned memory, never NULL; they abort with a message on OOM. Their symbols are
 * cp_*: libiberty (the demangler, linked into the same binaries) defines xmalloc & co. itself,
 * and which one a call reached used to depend on the order of the link line. The x* spellings
 * below are this header's names for them. */
void *cp_xmalloc(size_t n);
void *cp_xcalloc(size_t count, size_t size);
void *cp_xrealloc(void *p, size_t n);
char *cp_xstrdup(const char *s);
char *cp_xstrndup(const char *s, size_t n);
/* printf into a new string (owned by the caller). */
char *cp_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The folder of path, as a new string: "." for a bare name, "/" for a name at the root. */
char *cp_xdirname(const char *path);
#define xmalloc   cp_xmalloc
#define xcalloc   cp_xcalloc
#define xrealloc  cp_xrealloc
#define xstrdup   cp_xstrdup
#define xstrndup  cp_xstrndup
#define xasprintf cp_xasprintf
#define xdirname  cp_xdirname

/* Out of memory allocating n bytes, inside a library that does not use the wrappers above:
 * the same message, and abort. */
__attribute__((noreturn)) void cp_xalloc_die(size_t n);
#define xalloc_die cp_xalloc_die

/* Tests only: when set, each allocation above first asks it, and fails (as on OOM: a message
 * and abort) when it returns nonzero; n is the size asked for. */
extern int (*xalloc_test_fail)(size_t n);

/* a + b and a * b, aborting on overflow. */
size_t st_add(size_t a, size_t b);
size_t st_mult(size_t a, size_t b);

/* Grow *arr (of *alloc elements of elem bytes) so that it holds at least need elements. */
void *grow_array(void *arr, size_t elem, size_t need, size_t *alloc);
#define ALLOC_GROW(arr, need, alloc) ((arr) = grow_array((arr), sizeof(*(arr)), (need), &(alloc)))

#endif
