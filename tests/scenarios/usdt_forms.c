// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * usdt_forms N
 *
 * PyTorch's two allocator probes, pytorch:malloc(ptr, device, size, stream) and
 * pytorch:free(ptr), fired from seven sites whose notes place the arguments in each way a
 * compiler may: the forms libbpf's argument specs decode and gpuleak's USDT program reads,
 * some at once (arguments in memory near each other off one register) and the others one by
 * one (tests/test_pytorch.py). Each site is a device of its own and a block size of its own:
 *   form  device  block    arguments
 *   near  1       1 MiB    all four in one frame, within 30 bytes (8@-416(%rbp) -1@-408(%rbp)
 *                          8@-402(%rbp) -8@-394(%rbp): the registers and offsets are clang's)
 *   far   2       2 MiB    in one frame, the size 320 bytes above the pointer
 *   regs  3       3 MiB    all four in registers (8@%r14 -1@%al 4@%ebx -8@%rcx), the size
 *                          a 4-byte argument in a register whose upper half is 0xff..
 *   mixed 4       4 MiB    the pointer in a register, the others in memory, the size a
 *                          4-byte argument with 0xff.. in the 4 bytes above it
 *   const 5       5 MiB    the device a constant (-1@$5), the others in memory
 *   bases 6       6 MiB    the pointer and device off the stack, the size and stream off
 *                          another register (a heap record's fields)
 *   index 7       7 MiB    all four at base + index * 8 + offset (8@(%rax,%rdx,8) ...:
 *                          an array element, scale-index-base)
 * The bytes around every argument in memory are 0xff: an argument narrowed from a wider read
 * shows them if it is not narrowed right. Each site allocates N blocks and frees all but the
 * last: at "done" one block live per device, N allocations and N - 1 frees per site.
 * Memory is the process's own (malloc); no CUDA call is made.
 */
#include <stdint.h>
#include <string.h>
#include <sys/sdt.h>
#include "scenario.h"

#define MiB (1ULL << 20)

/*
 * A frame's arguments, laid out here rather than by the compiler: the size 14 bytes above
 * the pointer, its bytes from the third on in the next aligned word (a block's size in MiB
 * starts there), as a packed frame or a byte-aligned spill may leave it.
 */
struct near_args {
	uint64_t ptr;
	int8_t dev;
	uint8_t fill[5];
	uint64_t size;
	int64_t stream;
} __attribute__((packed));

struct far_args {
	uint64_t ptr;
	int8_t dev;
	uint8_t fill[311];
	uint64_t size;
	int64_t stream;
};

/*
 * The probes' argument templates are assembler text (STAP_PROBE_ASM makes a string of them):
 * formatting would split "8@%[p]" apart.
 */
// clang-format off
static void fire_free(void *p)
{
	uint64_t ptr = (uint64_t)p;

	__asm__ __volatile__(STAP_PROBE_ASM(pytorch, free, 8@%[ptr]) : : [ptr] "m"(ptr));
}

/* A frame struct's four fields, 0xff around them, as pytorch:malloc's arguments in memory. */
#define FIRE_FROM_FRAME(type, p, dev, size)                                                    \
	do {                                                                                   \
		type a;                                                                        \
                                                                                               \
		memset(&a, 0xff, sizeof(a));                                                   \
		a.ptr = (uint64_t)(p);                                                         \
		a.dev = (dev);                                                                 \
		a.size = (size);                                                               \
		a.stream = 7;                                                                  \
		__asm__ __volatile__(STAP_PROBE_ASM(pytorch, malloc,                            \
						    8@%[p] -1@%[d] 8@%[s] -8@%[st])           \
				     : : [p] "m"(a.ptr), [d] "m"(a.dev), [s] "m"(a.size),      \
				       [st] "m"(a.stream));                                    \
	} while (0)

static void fire_near(void *p, int8_t dev, uint64_t size)
{
	FIRE_FROM_FRAME(struct near_args, p, dev, size);
}

static void fire_far(void *p, int8_t dev, uint64_t size)
{
	FIRE_FROM_FRAME(struct far_args, p, dev, size);
}

static void fire_regs(void *p, int8_t dev, uint64_t size)
{
	/* the device's and the size's registers hold 0xff.. above their low byte and half */
	uint64_t d = 0xffffffffffffff00ULL | (uint8_t)dev;
	uint64_t s = 0xffffffff00000000ULL | size;

	__asm__ __volatile__(STAP_PROBE_ASM(pytorch, malloc, 8@%[p] -1@%b[d] 4@%k[s] -8@%[st])
			     : : [p] "r"(p), [d] "q"(d), [s] "r"(s), [st] "r"((int64_t)7));
}

static void fire_mixed(void *p, int8_t dev, uint64_t size)
{
	struct near_args a;

	memset(&a, 0xff, sizeof(a));
	a.dev = dev;
	a.size = 0xffffffff00000000ULL | size;
	a.stream = 7;
	__asm__ __volatile__(STAP_PROBE_ASM(pytorch, malloc, 8@%[p] -1@%[d] 4@%[s] -8@%[st])
			     : : [p] "r"(p), [d] "m"(a.dev), [s] "m"(a.size), [st] "m"(a.stream));
}

static void fire_const(void *p, uint64_t size)
{
	struct near_args a;

	memset(&a, 0xff, sizeof(a));
	a.ptr = (uint64_t)p;
	a.size = size;
	a.stream = 7;
	__asm__ __volatile__(STAP_PROBE_ASM(pytorch, malloc, 8@%[p] -1@$5 8@%[s] -8@%[st])
			     : : [p] "m"(a.ptr), [s] "m"(a.size), [st] "m"(a.stream));
}

static void fire_bases(void *p, int8_t dev, uint64_t size, struct near_args *heap)
{
	struct near_args a;

	memset(&a, 0xff, sizeof(a));
	a.ptr = (uint64_t)p;
	a.dev = dev;
	heap->size = size;
	heap->stream = 7;
	__asm__ __volatile__(STAP_PROBE_ASM(pytorch, malloc, 8@%[p] -1@%[d] 8@%[s] -8@%[st])
			     : : [p] "m"(a.ptr), [d] "m"(a.dev), [s] "m"(heap->size),
			       [st] "m"(heap->stream));
}

static void fire_indexed(void *p, int8_t dev, uint64_t size)
{
	/* element 2 of an array of words, 0xff around the arguments */
	uint64_t w[8];
	long i = 2;

	memset(w, 0xff, sizeof(w));
	w[2] = (uint64_t)p;
	memcpy(&w[3], &dev, 1);
	w[4] = size;
	w[5] = 7;
	__asm__ __volatile__(STAP_PROBE_ASM(pytorch, malloc,
					    8@(%[b],%[i],8) -1@8(%[b],%[i],8)
					    8@16(%[b],%[i],8) -8@24(%[b],%[i],8))
			     : : [b] "r"(w), [i] "r"(i), "m"(w));
}

// clang-format on

int main(int argc, char **argv)
{
	struct near_args *heap;
	unsigned long long n, i;
	int form;

	scenario_usage(argc, 2, "usdt_forms N");
	n = scenario_bytes(argv[1], "N");
	heap = malloc(sizeof(*heap));
	if (!n || !heap)
		return 2;
	memset(heap, 0xff, sizeof(*heap));
	scenario_ready();
	for (form = 1; form <= 7; form++) {
		uint64_t size = form * MiB;

		for (i = 0; i < n; i++) {
			void *p = malloc(size);

			if (!p)
				return 1;
			switch (form) {
			case 1:
				fire_near(p, 1, size);
				break;
			case 2:
				fire_far(p, 2, size);
				break;
			case 3:
				fire_regs(p, 3, size);
				break;
			case 4:
				fire_mixed(p, 4, size);
				break;
			case 5:
				fire_const(p, size);
				break;
			case 6:
				fire_bases(p, 6, size, heap);
				break;
			default:
				fire_indexed(p, 7, size);
			}
			if (i + 1 < n) {
				fire_free(p);
				free(p);
			}
		}
	}
	scenario_done();
	return 0;
}
