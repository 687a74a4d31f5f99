/* Whether LD_PRELOAD can reach a program: shared by the injected library (checking each
 * program its process execs) and the runner (checking the command). No allocation, only
 * open/pread/fstat/close, so it may run between vfork and exec. */
#ifndef CP_PRELOAD_ELFCHECK_H
#define CP_PRELOAD_ELFCHECK_H

#include "runner/preload/format.h"

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* PL_EXEC_STATIC for an ELF file without an interpreter (static or static-PIE) or of
 * another class than this library's; 0 for a dynamic ELF or anything else. fd is read with
 * pread only. */
static inline uint32_t pl_elf_fd_flags(int fd)
{
	Elf64_Ehdr eh;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG))
		return 0;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64)
		return PL_EXEC_STATIC; /* a 32-bit program cannot load a 64-bit library */
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return 0;
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 256)
		return 0;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			return 0;
		if (ph.p_type == PT_INTERP)
			return 0;
	}
	return PL_EXEC_STATIC;
}

/*
 * What keeps LD_PRELOAD from reaching the program at path: PL_EXEC_STATIC, PL_EXEC_SETID
 * (set-user-ID to another user or set-group-ID to another group: the loader then ignores
 * LD_PRELOAD), or 0. A "#!" script is judged by its interpreter (one level).
 */
static inline uint32_t pl_exec_flags(const char *path)
{
	uint32_t flags = 0;
	char interp[256];
	for (int depth = 0; depth < 2; depth++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return flags;
		struct stat st;
		if (fstat(fd, &st) == 0 && (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
		                            ((st.st_mode & S_ISGID) && st.st_gid != getegid())))
			flags |= PL_EXEC_SETID;
		char head[256];
		ssize_t n = pread(fd, head, sizeof(head) - 1, 0);
		if (n >= 2 && head[0] == '#' && head[1] == '!') {
			close(fd);
			/* The interpreter: the first word after "#!". */
			head[n] = '\0';
			char *p = head + 2;
			while (*p == ' ' || *p == '\t')
				p++;
			char *e = p;
			while (*e && *e != ' ' && *e != '\t' && *e != '\n' && *e != '\r')
				e++;
			if (e == p || *e == '\0')
				return flags; /* no interpreter, or a line longer than we read */
			*e = '\0';
			memcpy(interp, p, (size_t)(e - p) + 1);
			path = interp;
			continue;
		}
		flags |= pl_elf_fd_flags(fd);
		close(fd);
		return flags;
	}
	return flags;
}

#endif
