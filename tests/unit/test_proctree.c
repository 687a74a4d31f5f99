/* The process tree: mappings replaced by later ones (no munmap is reported), fork copying the
 * parent's maps, exec starting afresh, and addresses turned into file offsets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "runner/attribution/proctree.h"

static void check_maps(const struct addr_space *as, const uint64_t (*want)[3], size_t n)
{
	assert_int_equal(as->n, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(as->maps[i].start, want[i][0]);
		assert_int_equal(as->maps[i].end, want[i][1]);
		assert_int_equal(as->maps[i].pgoff, want[i][2]);
	}
}

static void test_insert_overlaps(void **state)
{
	(void)state;
	struct addr_space as = {0};
	struct map m = {0x1000, 0x5000, 0, 1};
	addr_space_insert(&as, &m);
	m = (struct map){0x8000, 0x9000, 0, 2};
	addr_space_insert(&as, &m);
	/* a mapping in the middle of the first splits it into head and tail */
	m = (struct map){0x2000, 0x3000, 0x10000, 3};
	addr_space_insert(&as, &m);
	const uint64_t want1[][3] = {{0x1000, 0x2000, 0},
	                             {0x2000, 0x3000, 0x10000},
	                             {0x3000, 0x5000, 0x2000},
	                             {0x8000, 0x9000, 0}};
	check_maps(&as, want1, 4);
	assert_int_equal(as.maps[2].dso, 1);
	/* one covering several replaces them all */
	m = (struct map){0x1800, 0x8800, 0x500, 4};
	addr_space_insert(&as, &m);
	const uint64_t want2[][3] = {
	        {0x1000, 0x1800, 0}, {0x1800, 0x8800, 0x500}, {0x8800, 0x9000, 0x800}};
	check_maps(&as, want2, 3);
	assert_int_equal(addr_space_find(&as, 0x17ff)->dso, 1);
	assert_int_equal(addr_space_find(&as, 0x1800)->dso, 4);
	assert_int_equal(addr_space_find(&as, 0x8fff)->dso, 2);
	assert_null(addr_space_find(&as, 0x9000));
	assert_null(addr_space_find(&as, 0xfff));
	addr_space_release(&as);
}

static void test_fork_exec_resolve(void **state)
{
	(void)state;
	struct proctree t;
	proctree_init(&t);
	t.procfs_fallback = 0;
	proctree_get(&t, 100, "sh");
	proctree_mmap(&t, 100, 0x400000, 0x10000, 0x1000, "/bin/sh");
	proctree_mmap(&t, 100, 0x7f0000000000, 0x1000, 0, "[vdso]");
	proctree_fork(&t, 101, 100, 101, 100);
	struct proc *child = proctree_find(&t, 101);
	assert_non_null(child);
	assert_string_equal(child->name, "sh");
	assert_int_equal(child->as.n, 2);
	uint32_t dso;
	uint64_t off;
	proctree_resolve(&t, child, 0x400123, &dso, &off);
	assert_string_equal(t.dsos[dso].path, "/bin/sh");
	assert_int_equal(t.dsos[dso].kind, DSO_FILE);
	assert_int_equal(off, 0x1123); /* ip - start + pgoff */
	proctree_resolve(&t, child, 0x7f0000000010, &dso, &off);
	assert_int_equal(t.dsos[dso].kind, DSO_VDSO);
	assert_int_equal(off, 0x10);

	/* exec: the address space starts empty; the full executable name replaces the
	 * 15-byte comm */
	proctree_comm(&t, 101, 101, "accuracy_worklo", 1);
	assert_int_equal(child->as.n, 0);
	proctree_mmap(&t, 101, 0x500000, 0x1000, 0, "/opt/bin/accuracy_workload");
	assert_string_equal(child->name, "accuracy_workload");
	proctree_resolve(&t, child, 0x400123, &dso, &off);
	assert_int_equal(t.dsos[dso].kind, DSO_UNKNOWN);
	/* the parent is untouched */
	assert_int_equal(proctree_find(&t, 100)->as.n, 2);
	/* a thread is not a process */
	proctree_fork(&t, 100, 100, 102, 100);
	assert_int_equal(t.processes_seen, 2);
	assert_int_equal(t.threads_seen, 3);
	/* anonymous executable memory belongs to its process (JIT maps are per pid) */
	proctree_mmap(&t, 100, 0x10000000, 0x1000, 0, "//anon");
	proctree_resolve(&t, proctree_find(&t, 100), 0x10000010, &dso, &off);
	assert_int_equal(t.dsos[dso].kind, DSO_ANON);
	assert_int_equal(t.dsos[dso].pid, 100);
	assert_int_equal(off, 0x10000010);
	/* exit frees the maps */
	proctree_exit(&t, 100, 100);
	assert_int_equal(proctree_find(&t, 100)->as.n, 0);
	/* a process first seen by a mapping of no file, or by an empty name, is never named ""
	 * (its stacks' root frame: folded text cannot hold an empty one) */
	proctree_mmap(&t, 300, 0x1000, 0x1000, 0, "");
	assert_string_equal(proctree_find(&t, 300)->name, "[unknown]");
	proctree_comm(&t, 301, 301, "", 0);
	assert_string_equal(proctree_find(&t, 301)->name, "[unknown]");
	proctree_comm(&t, 301, 301, "", 1);
	assert_string_equal(proctree_find(&t, 301)->name, "[unknown]");
	proctree_release(&t);
}

static void test_procfs_maps(void **state)
{
	(void)state;
	struct proctree t;
	proctree_init(&t);
	struct proc *p = proctree_get(&t, 5, "x");
	const char *maps =
	        "55d0c0000000-55d0c0001000 r--p 00000000 08:01 123 /usr/bin/x\n"
	        "55d0c0001000-55d0c0005000 r-xp 00001000 08:01 123 /usr/bin/x\n"
	        "7f0000000000-7f0000010000 r-xp 00002000 08:01 456 /usr/lib/lib name.so\n"
	        "7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0 [vdso]\n"
	        "garbage line\n";
	assert_int_equal(proctree_load_procfs_maps(&t, p, maps), 3);
	uint32_t dso;
	uint64_t off;
	proctree_resolve(&t, p, 0x55d0c0001010, &dso, &off);
	assert_string_equal(t.dsos[dso].path, "/usr/bin/x");
	assert_int_equal(off, 0x1010);
	proctree_resolve(&t, p, 0x7f0000000004, &dso, &off);
	assert_string_equal(t.dsos[dso].path, "/usr/lib/lib name.so");
	assert_int_equal(off, 0x2004);
	proctree_release(&t);
}

static void test_chain_ends_outside_mappings(void **state)
{
	(void)state;
	struct proctree t;
	proctree_init(&t);
	t.procfs_fallback = 0;
	struct proc *p = proctree_get(&t, 9, "x");
	proctree_mmap(&t, 9, 0x400000, 0x10000, 0, "/bin/x");
	/* leaf, caller, then a frame-pointer walk gone astray: 0, then random values */
	uint64_t ips[] = {0x400010, 0x400200, 0x0, 0x7777777, 0x400300};
	uint32_t dsos[5];
	uint64_t offs[5];
	assert_int_equal(proctree_resolve_chain(&t, p, ips, 5, dsos, offs), 2);
	assert_int_equal(offs[1], 0x200);
	/* an unknown leaf is kept: it is where the CPU was */
	uint64_t lone[] = {0x9999, 0x400010};
	assert_int_equal(proctree_resolve_chain(&t, p, lone, 2, dsos, offs), 2);
	assert_int_equal(t.dsos[dsos[0]].kind, DSO_UNKNOWN);
	proctree_release(&t);
}

static void test_many_processes_bounded(void **state)
{
	(void)state;
	struct proctree t;
	proctree_init(&t);
	t.procfs_fallback = 0;
	proctree_get(&t, 1, "init");
	for (int i = 2; i < 20000; i++) {
		proctree_fork(&t, i, 1, i, 1);
		proctree_mmap(&t, i, 0x1000, 0x1000, 0, "/bin/true");
		proctree_exit(&t, i, i);
	}
	assert_int_equal(t.processes_seen, 19999);
	assert_true(t.nprocs < 200); /* exited processes were dropped */
	assert_non_null(proctree_find(&t, 1));
	proctree_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_insert_overlaps),
	        cmocka_unit_test(test_fork_exec_resolve),
	        cmocka_unit_test(test_procfs_maps),
	        cmocka_unit_test(test_chain_ends_outside_mappings),
	        cmocka_unit_test(test_many_processes_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
