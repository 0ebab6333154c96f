// SPDX-License-Identifier: MIT
/*
 * MPI on uroce: ping-pong between every pair of ranks, allreduce and
 * all-to-all, every received byte checked.  Rank 0 prints one PASS or FAIL
 * line per check (failures summed over all ranks) and two figures of the
 * pair 0-1; the exit status is the number of failed checks.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PINGPONG_ITERS	20
#define PINGPONG_ITERS_LARGE 4	/* 1 MiB: rendezvous, 8 ranks on few CPUs are slow */
#define LAT_ITERS	1000
#define BW_ITERS	50
#define BW_SIZE		(1 << 20)

static int rank, size;

/* The byte at @i of the message @from sends to @to in iteration @iter. */
static uint8_t pattern(int from, int to, int iter, size_t i)
{
	return (uint8_t)(from * 131 + to * 71 + iter * 29 + i * 7 + (i >> 8));
}

static void fill(uint8_t *buf, size_t len, int from, int to, int iter)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(from, to, iter, i);
}

static long mismatches(const uint8_t *buf, size_t len, int from, int to, int iter)
{
	long bad = 0;

	for (size_t i = 0; i < len; i++)
		bad += buf[i] != pattern(from, to, iter, i);
	return bad;
}

/* Print the check's verdict on rank 0 (and its time): @bad is this rank's count of wrong results. */
static int report(const char *name, long bad, double started)
{
	long total = 0;

	MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		if (total)
			printf("FAIL %s: %ld wrong results over %d ranks\n", name, total, size);
		else
			printf("PASS %s (%.2f s)\n", name, MPI_Wtime() - started);
		fflush(stdout);
	}
	return total != 0;
}

/*
 * Round k pairs each rank with rank ^ k, so the rounds 1..size-1 meet every
 * pair once; each message is checked by its receiver and sent back changed.
 */
static long pingpong(size_t len, int iters)
{
	uint8_t *buf = malloc(len);
	long bad = 0;

	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (int k = 1; k < size; k++) {
		int peer = rank ^ k;

		for (int it = 0; it < iters; it++) {
			if (rank < peer) {
				fill(buf, len, rank, peer, it);
				MPI_Send(buf, (int)len, MPI_BYTE, peer, it, MPI_COMM_WORLD);
				memset(buf, 0, len);
				MPI_Recv(buf, (int)len, MPI_BYTE, peer, it, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				bad += mismatches(buf, len, peer, rank, it) != 0;
			} else {
				memset(buf, 0, len);
				MPI_Recv(buf, (int)len, MPI_BYTE, peer, it, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				bad += mismatches(buf, len, peer, rank, it) != 0;
				fill(buf, len, rank, peer, it);
				MPI_Send(buf, (int)len, MPI_BYTE, peer, it, MPI_COMM_WORLD);
			}
		}
	}
	free(buf);
	return bad;
}

/* Sum and maximum of (rank + 1) * (i + 1) over all ranks, for each of @n elements. */
static long allreduce(size_t n)
{
	int64_t *in = malloc(n * sizeof(*in)), *sum = malloc(n * sizeof(*sum)),
		*max = malloc(n * sizeof(*max));
	const int64_t ranks_sum = (int64_t)size * (size + 1) / 2;
	long bad = 0;

	if (!in || !sum || !max)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (size_t i = 0; i < n; i++)
		in[i] = (int64_t)(rank + 1) * (int64_t)(i + 1);
	MPI_Allreduce(in, sum, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(in, max, (int)n, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
	for (size_t i = 0; i < n; i++) {
		bad += sum[i] != ranks_sum * (int64_t)(i + 1);
		bad += max[i] != (int64_t)size * (int64_t)(i + 1);
	}
	free(in);
	free(sum);
	free(max);
	return bad;
}

/* Each rank sends every rank @n (up to 65536) words naming sender, receiver and index. */
static long alltoall(size_t n)
{
	uint32_t *out = malloc(n * size * sizeof(*out)), *in = malloc(n * size * sizeof(*in));
	long bad = 0;

	if (!out || !in)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (int to = 0; to < size; to++)
		for (size_t j = 0; j < n; j++)
			out[to * n + j] = (uint32_t)rank << 24 | (uint32_t)to << 16 | (uint32_t)j;
	memset(in, 0, n * size * sizeof(*in));
	MPI_Alltoall(out, (int)n, MPI_UINT32_T, in, (int)n, MPI_UINT32_T, MPI_COMM_WORLD);
	for (int from = 0; from < size; from++)
		for (size_t j = 0; j < n; j++)
			bad += in[from * n + j] !=
			       ((uint32_t)from << 24 | (uint32_t)rank << 16 | (uint32_t)j);
	free(out);
	free(in);
	return bad;
}

/* Half the round trip of 1-byte messages and the one-way rate of 1 MiB ones, ranks 0 and 1. */
static void figures(void)
{
	static uint8_t buf[BW_SIZE];
	double t0, lat, bw;

	if (rank > 1)
		return;
	t0 = MPI_Wtime();
	for (int i = 0; i < LAT_ITERS; i++) {
		if (rank == 0) {
			MPI_Send(buf, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(buf, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
		}
	}
	lat = (MPI_Wtime() - t0) / LAT_ITERS / 2 * 1e6;
	t0 = MPI_Wtime();
	for (int i = 0; i < BW_ITERS; i++) {
		if (rank == 0)
			MPI_Send(buf, BW_SIZE, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
		else
			MPI_Recv(buf, BW_SIZE, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	/* The receiver's answer ends the clock: the last message has arrived. */
	if (rank == 0)
		MPI_Recv(buf, 1, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else
		MPI_Send(buf, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
	bw = (double)BW_SIZE * BW_ITERS / (MPI_Wtime() - t0) / 1e6;
	if (rank == 0) {
		printf("FIGURE pingpong 1 B latency %.2f usec, 1 MiB messages %.1f MB/s\n", lat, bw);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	static const size_t pp_sizes[] = { 1, 4096, 65536, 1 << 20 };
	static const size_t ar_counts[] = { 1, 1000, 1 << 18 };
	static const size_t a2a_counts[] = { 1, 4096, 65536 };
	char name[64];
	int failed = 0;
	double t0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2 || (size & (size - 1))) {
		if (rank == 0)
			fprintf(stderr, "mpi_check: needs a power of two of ranks, not %d\n", size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (size_t i = 0; i < sizeof(pp_sizes) / sizeof(pp_sizes[0]); i++) {
		int iters = pp_sizes[i] < BW_SIZE ? PINGPONG_ITERS : PINGPONG_ITERS_LARGE;

		snprintf(name, sizeof(name), "pingpong every pair %zu B x %d", pp_sizes[i], iters);
		t0 = MPI_Wtime();
		failed += report(name, pingpong(pp_sizes[i], iters), t0);
	}
	for (size_t i = 0; i < sizeof(ar_counts) / sizeof(ar_counts[0]); i++) {
		snprintf(name, sizeof(name), "allreduce sum and max of %zu int64", ar_counts[i]);
		t0 = MPI_Wtime();
		failed += report(name, allreduce(ar_counts[i]), t0);
	}
	for (size_t i = 0; i < sizeof(a2a_counts) / sizeof(a2a_counts[0]); i++) {
		snprintf(name, sizeof(name), "alltoall %zu uint32 per pair", a2a_counts[i]);
		t0 = MPI_Wtime();
		failed += report(name, alltoall(a2a_counts[i]), t0);
	}
	figures();
	MPI_Finalize();
	return failed;
}
