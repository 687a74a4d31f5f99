/* The vdso image in a memfd (see vdso.h). */
#include "runner/sample/vdso.h"
#include "common/error.h"
#include "common/xalloc.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

int vdso_image_fd(void)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return cp_error("this process has no vdso (AT_SYSINFO_EHDR is 0)");
	const unsigned char *img = (const unsigned char *)base;
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)img;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return cp_error("the vdso does not start with an ELF header");
	size_t size = sizeof(*eh);
	size_t ph_end = st_add(eh->e_phoff, st_mult(eh->e_phnum, sizeof(ElfW(Phdr))));
	if (ph_end > size)
		size = ph_end;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(img + eh->e_phoff);
	for (size_t i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		size_t end = st_add(ph[i].p_offset, ph[i].p_filesz);
		if (end > size)
			size = end;
	}
	if (eh->e_shoff) {
		size_t sh_end = st_add(eh->e_shoff, st_mult(eh->e_shnum, eh->e_shentsize));
		if (sh_end > size)
			size = sh_end;
	}
	int fd = memfd_create("ciprof-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return cp_error_errno("cannot create a memfd for the vdso image");
	for (size_t done = 0; done < size;) {
		ssize_t n = write(fd, img + done, size - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int ret = cp_error_errno("cannot copy the vdso image");
			close(fd);
			return ret;
		}
		done += (size_t)n;
	}
	return fd;
}
