/* The frame-pointer walk of the LD_PRELOAD sampler's signal handler, as a header so that unit
 * tests can run it on crafted stacks. It reads memory, so it reads only what is surely
 * mapped: words between the interrupted stack pointer and the top of the thread's stack. */
#ifndef CP_PRELOAD_FPWALK_H
#define CP_PRELOAD_FPWALK_H

#include <stdint.h>

/*
 * Fills ips[0..max) with the interrupted instruction ip, then the return addresses found by
 * following saved frame pointers from fp: each frame is {saved fp, return address}. Returns
 * how many entries were filled (at least 1 when max > 0). Async-signal-safe, reads nothing
 * outside [sp, stack_hi):
 *   - sp must lie in the thread's stack [stack_lo, stack_hi), else the thread runs on some
 *     other stack (a signal stack, a coroutine) and only ip is returned;
 *   - each frame address must be 8-byte aligned and lie in [sp, stack_hi - 16];
 *   - each saved frame pointer must be above the frame holding it (the walk moves strictly
 *     towards the stack's top, so it ends, even on a corrupt or cyclic chain);
 *   - a return address below 4096 (0 ends the outermost frame) stops the walk.
 */
static inline uint32_t pl_fp_walk(uint64_t ip, uint64_t fp, uint64_t sp, uint64_t stack_lo,
                                  uint64_t stack_hi, uint64_t *ips, uint32_t max)
{
	uint32_t n = 0;
	if (!max)
		return 0;
	ips[n++] = ip;
	if (stack_hi < stack_lo + 16 || sp < stack_lo || sp >= stack_hi)
		return n;
	uint64_t lo = sp;
	while (n < max) {
		if (fp < lo || fp > stack_hi - 16 || (fp & 7))
			break;
		const volatile uint64_t *frame = (const volatile uint64_t *)(uintptr_t)fp;
		uint64_t next = frame[0], ret = frame[1];
		if (ret < 4096)
			break;
		ips[n++] = ret;
		lo = fp + 16; /* the caller's frame lies above this one */
		fp = next;
	}
	return n;
}

#endif
