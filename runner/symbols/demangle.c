/* Demangling through libiberty (the demangler of binutils and GDB): C++ Itanium names and
 * both Rust manglings. Kept in its own file because libiberty's headers declare their own
 * xmalloc family, which must not meet common/xalloc.h in one translation unit. */
#include "runner/symbols/symbolize.h"

#include <demangle.h>
#include <string.h>

char *sym_demangle(const char *name)
{
	if (!name)
		return NULL;
	/* Itanium C++ and Rust legacy start with _Z, Rust v0 with _R; anything else (C names,
	 * and libiberty's more adventurous guesses for other languages) stays as it is. */
	if (!(name[0] == '_' && (name[1] == 'Z' || name[1] == 'R')))
		return NULL;
	/*
	 * DMGL_AUTO tries Rust first (legacy Rust names are valid Itanium names too, which would
	 * come out as "foo::bar::h0123456789abcdef"), then Itanium. Without DMGL_VERBOSE the Rust
	 * demangler drops the legacy hash suffix.
	 */
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}
