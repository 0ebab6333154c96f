/* SPDX-License-Identifier: MIT */
/* Between the preloaded rdma_cm device (prov_ucma_fd.c) and the provider that answers it (prov_ucma.c). */
#ifndef UROCE_PROVIDER_PROV_UCMA_H
#define UROCE_PROVIDER_PROV_UCMA_H

#include <sys/types.h>

/*
 * The provider module exports one object by this name (its only symbol
 * besides libibverbs' entry point); the preloaded library finds it with
 * dlsym() in the module libibverbs loaded.  Each returns what the system
 * call would, with -errno for an error.
 */
#define PROV_UCMA_OPS_SYMBOL	"uroce_ucma_ops"

struct prov_ucma_ops {
	/* A new channel (open(2) flags: O_NONBLOCK, O_CLOEXEC): its descriptor. */
	int	(*open)(int flags);
	/* One ucma command (struct rdma_ucm_cmd_hdr and its body): @len, or -errno. */
	ssize_t	(*write)(int fd, const void *buf, size_t len);
	/* Destroys the channel's IDs, as closing the kernel's file does, and closes @fd. */
	void	(*close)(int fd);
};

#endif
