// SPDX-License-Identifier: MIT
/*
 * The floor under same-host latency: two processes ping-pong one counter in
 * shared memory, each spinning on it, as ib_write_lat's two ends spin on the
 * last byte of their buffer.  Prints half round trips in perftest's terms
 * (typical = median, 99 % and 99.9 % percentiles, maximum), so a same-host
 * ib_write_lat figure can be read against what scheduling alone allows on
 * this machine.  With --cma each side writes the other's counter in that
 * process's private memory with process_vm_writev(), as uroce's direct
 * placement does: the floor under a same-host write, one system call each way.
 * A benchmark, not a test.
 *
 *   bench_shm_pingpong [--cma] [ITERATIONS]
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
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

/* Store @v into *@counter of process @pid: in shared memory (pid 0), or with process_vm_writev(). */
static void put(pid_t pid, _Atomic uint64_t *counter, uint64_t v)
{
	struct iovec local = { &v, sizeof(v) }, remote = { (void *)counter, sizeof(v) };

	if (!pid)
		atomic_store_explicit(counter, v, memory_order_release);
	else if (process_vm_writev(pid, &local, 1, &remote, 1, 0) != sizeof(v))
		_exit(1);
}

int main(int argc, char **argv)
{
	bool cma = argc > 1 && !strcmp(argv[1], "--cma");
	long iters = argc > 1 + cma ? atol(argv[1 + cma]) : 5000;
	_Atomic uint64_t *ping, *pong;
	pid_t child, parent = getpid();
	uint64_t *half;
	int status;

	if (iters < 100) {
		fprintf(stderr, "usage: bench_shm_pingpong [--cma] [ITERATIONS >= 100]\n");
		return 2;
	}
	/* The two counters on separate cache lines, as two perftest buffers are; private with --cma. */
	ping = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    (cma ? MAP_PRIVATE : MAP_SHARED) | MAP_ANONYMOUS, -1, 0);
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
			put(cma ? parent : 0, pong, i);
		}
		_exit(0);
	}
	for (uint64_t i = 1; i <= (uint64_t)iters; i++) {
		uint64_t t0 = now_ns();

		put(cma ? child : 0, ping, i);
		while (atomic_load_explicit(pong, memory_order_acquire) != i)
			;
		half[i - 1] = (now_ns() - t0) / 2;
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "bench_shm_pingpong: the child failed\n");
		return 1;
	}
	qsort(half, (size_t)iters, sizeof(*half), cmp_u64);
	printf("%s ping-pong, two spinning processes, %ld iterations, half round trip (us):\n",
	       cma ? "process_vm_writev" : "shm", iters);
	printf("t_min=%.2f t_typical=%.2f p99=%.2f p99.9=%.2f t_max=%.2f\n", half[0] / 1e3,
	       half[iters / 2] / 1e3, half[iters * 99 / 100] / 1e3, half[iters * 999 / 1000] / 1e3,
	       half[iters - 1] / 1e3);
	return 0;
}
