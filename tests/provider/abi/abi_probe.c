// SPDX-License-Identifier: MIT
/* Runs the provider's libibverbs ABI detection and checks it against the release the library's file name carries. */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prov_abi.h"

/*
 * rdma-core installs libibverbs as libibverbs.so.1.<minor>.<release>.0
 * (the symlink libibverbs.so.1 points there).  Return: the release, or -1.
 */
static int release_of(const char *library)
{
	char real[PATH_MAX];
	unsigned minor, release;
	int end = 0;

	if (!realpath(library, real))
		return -1;
	if (sscanf(basename(real), "libibverbs.so.1.%u.%u.0%n", &minor, &release, &end) != 2 ||
	    real[strlen(real) - strlen(basename(real)) + (size_t)end] != '\0')
		return -1;
	return (int)release;
}

int main(void)
{
	enum prov_ops_layout want_layout;
	size_t want_offset;
	struct prov_abi abi;
	char err[384];
	int release;

	if (prov_abi_detect(&abi, err, sizeof(err))) {
		printf("detection failed: %s\n", err);
		return 1;
	}
	printf("library %s\nops layout %s (%u operations)\nverbs_qp comp_mask at %zu\n",
	       abi.library, prov_ops_layout_name(abi.ops_layout),
	       prov_ops_layout_count(abi.ops_layout), abi.qp_comp_mask_offset);

	release = release_of(abi.library);
	if (release < 0) {
		printf("SKIP: the file name of %s carries no rdma-core release to check against\n",
		       abi.library);
		return 77;
	}
	if (release < 34 || release > 56) {
		printf("rdma-core %d is outside 34..56 but was not refused\n", release);
		return 1;
	}
	want_layout = release == 34 ? PROV_OPS_RDMA_CORE_34 :
		      release == 35 ? PROV_OPS_RDMA_CORE_35 : PROV_OPS_RDMA_CORE_36;
	/* ibv_qp_ex: wr_atomic_write arrived in 44, wr_flush in 45. */
	want_offset = VERBS_QP_EX_SIZE_34 + (release >= 44) * sizeof(void *) +
		      (release >= 45) * sizeof(void *);
	printf("file name says rdma-core %d: want %s, comp_mask at %zu\n", release,
	       prov_ops_layout_name(want_layout), want_offset);
	if (abi.ops_layout != want_layout || abi.qp_comp_mask_offset != want_offset) {
		printf("MISMATCH\n");
		return 1;
	}
	return 0;
}
