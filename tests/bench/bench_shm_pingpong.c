// SPDX-License-Identifier: MIT
/*
 * The floor under same-host latency: two processes ping-pong one counter in
 * shared memory, each spinning on it, as ib_write_lat's two ends spin on the
 * last byte of their buffer.  Prints half round trips in perftest's terms
 * (typical = median, 99 % and 99.9 % percentiles, maximum), so a same-host
 * ib_write_lat figure can be read against what scheduling alone allows on
 * this machine.  A benchmark, not a test.
 *
 *   bench_shm_pingpong [ITERATIONS]
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 5000;
	_Atomic uint64_t *ping, *pong;
	uint64_t *half;
	pid_t child;

	if (iters < 100) {
		fprintf(stderr, "usage: bench_shm_pingpong [ITERATIONS >= 100]\n");
		return 2;
	}
	/* The two counters on separate cache lines, as two perftest buffers are. */
	ping = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	half = calloc((size_t)iters, sizeof(*half));
	if (ping == MAP_FAILED || !half) {
		perror("bench_shm_pingpong");
		return 1;
	}
	pong = ping + 8;
	child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) {
		for (uint64_t i = 1; i <= (uint64_t)iters; i++) {
			while (atomic_load_explicit(ping, memory_order_acquire) != i)
				;
			atomic_store_explicit(pong, i, memory_order_release);
		}
		_exit(0);
	}
	for (uint64_t i = 1; i <= (uint64_t)iters; i++) {
		uint64_t t0 = now_ns();

		atomic_store_explicit(ping, i, memory_order_release);
		while (atomic_load_explicit(pong, memory_order_acquire) != i)
			;
		half[i - 1] = (now_ns() - t0) / 2;
	}
	waitpid(child, NULL, 0);
	qsort(half, (size_t)iters, sizeof(*half), cmp_u64);
	printf("shm ping-pong, two spinning processes, %ld iterations, half round trip (us):\n", iters);
	printf("t_min=%.2f t_typical=%.2f p99=%.2f p99.9=%.2f t_max=%.2f\n", half[0] / 1e3,
	       half[iters / 2] / 1e3, half[iters * 99 / 100] / 1e3, half[iters * 999 / 1000] / 1e3,
	       half[iters - 1] / 1e3);
	return 0;
}
