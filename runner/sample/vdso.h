/* The kernel's vdso image: every native process on a kernel gets the same one, so ciprof's own
 * copy can stand for the (possibly exited) sampled process's, for symbols and for CFI. */
#ifndef CP_VDSO_H
#define CP_VDSO_H

/* A new memfd (owned: close it) holding this process's vdso image, whose extent comes from its
 * own program and section headers; or -1 with cp_error set. */
int vdso_image_fd(void);

#endif
