/* Modules renamed between two profiles: a program or library whose file name changed while its
 * code did not (tests -> tests_v2, libfoo.so.1.2 -> libfoo.so.1.3). Functions are named with
 * their module, so without this every function of a renamed object is "new" in one profile and
 * "gone" from the other, and a rename reads as a regression. report/ and ab compare the head
 * with its modules named as the base names them. */
#ifndef CP_RENAME_H
#define CP_RENAME_H

#include "model/profile.h"

struct strbuf;

/*
 * The modules of p that ref knows under another name: each module only p has is paired with
 * the module only ref has that shares the most function names with it (addresses of
 * unsymbolized code, "module+0x1f0", compared without the module), when they share at least
 * half the functions of the larger of the two and no other module of ref shares as many.
 * Returns NULL when nothing is renamed; else a new profile (the caller's, profile_free): p with
 * those modules, their unsymbolized addresses, and process frames named after them (or after
 * their first 15 bytes, the kernel's process name) named as in ref. When note is not NULL,
 * each pairing is appended to it as "NEW as OLD (K of N functions in common)", separated by
 * "; ". Names are not escaped.
 */
struct profile *profile_rename_modules(const struct profile *p, const struct profile *ref,
                                       struct strbuf *note);

#endif
