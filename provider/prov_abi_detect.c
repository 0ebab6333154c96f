// SPDX-License-Identifier: MIT
/* Which libibverbs (rdma-core 34..56) the provider was loaded into, asked of the library itself. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "prov_abi.h"

struct prov_abi prov_abi;

/* Does the loaded library @handle export @name with version @version? */
static bool prov_has_symbol(void *handle, const char *name, const char *version)
{
	return dlvsym(handle, name, version) != NULL;
}

/*
 * Offsets at which a libibverbs may keep verbs_qp's comp_mask: right after
 * its struct ibv_qp_ex, which has 0, 1 or 2 of the late wr_* operations.
 * The probe sets one candidate word at a time; only the one the library
 * reads turns ibv_qp_to_qp_ex() non-NULL.
 */
static size_t prov_probe_qp_comp_mask(void)
{
	static _Alignas(16) unsigned char probe[sizeof(struct verbs_qp)];

	for (unsigned late = 0; late <= VERBS_QP_EX_LATE_OPS; late++) {
		size_t off = VERBS_QP_EX_SIZE_34 + late * sizeof(void (*)(void));
		uint32_t mask = VERBS_QP_EX;

		memset(probe, 0, sizeof(probe));
		memcpy(probe + off, &mask, sizeof(mask));
		if (ibv_qp_to_qp_ex((struct ibv_qp *)probe) == (struct ibv_qp_ex *)probe)
			return off;
	}
	return 0;
}

int prov_abi_detect(struct prov_abi *abi, char *err, size_t errlen)
{
	bool has_35, has_36;
	Dl_info info;
	void *lib;

	memset(abi, 0, sizeof(*abi));
	/* The library that resolved our private-ABI imports is the one that loaded us. */
	if (!dladdr((void *)verbs_set_ops, &info) || !info.dli_fname) {
		snprintf(err, errlen, "cannot tell which libibverbs is loaded");
		return -ENOTSUP;
	}
	snprintf(abi->library, sizeof(abi->library), "%s", info.dli_fname);
	lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!lib) {
		snprintf(err, errlen, "cannot inspect %s: %s", abi->library, dlerror());
		return -ENOTSUP;
	}
	has_35 = prov_has_symbol(lib, "ibv_import_dm", "IBVERBS_1.13");
	has_36 = prov_has_symbol(lib, "ibv_query_qp_data_in_order", "IBVERBS_1.14");
	dlclose(lib);
	if (has_36 && !has_35) {
		snprintf(err, errlen, "%s exports IBVERBS_1.14 without IBVERBS_1.13: not an "
			 "rdma-core 34..56 libibverbs", abi->library);
		return -ENOTSUP;
	}
	abi->ops_layout = has_36 ? PROV_OPS_RDMA_CORE_36 :
			  has_35 ? PROV_OPS_RDMA_CORE_35 : PROV_OPS_RDMA_CORE_34;

	abi->qp_comp_mask_offset = prov_probe_qp_comp_mask();
	if (!abi->qp_comp_mask_offset) {
		snprintf(err, errlen, "%s keeps verbs_qp's comp_mask where no rdma-core 34..56 "
			 "does", abi->library);
		return -ENOTSUP;
	}
	return 0;
}

void prov_abi_qp_set_ex(struct verbs_qp *vqp)
{
	uint32_t mask;

	memcpy(&mask, (unsigned char *)vqp + prov_abi.qp_comp_mask_offset, sizeof(mask));
	mask |= VERBS_QP_EX;
	memcpy((unsigned char *)vqp + prov_abi.qp_comp_mask_offset, &mask, sizeof(mask));
}
