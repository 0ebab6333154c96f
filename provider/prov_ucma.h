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
#define PROV_UCMA_CLOSE_LINGER_MS	1000

struct prov_ucma_ops {
	/* A new channel (open(2) flags: O_NONBLOCK, O_CLOEXEC): its descriptor. */
	int	(*open)(int flags);
	/* One ucma command (struct rdma_ucm_cmd_hdr and its body): @len, or -errno. */
	ssize_t	(*write)(int fd, const void *buf, size_t len);
	/*
	 * Destroys the channel's IDs, as closing the kernel's file does.  @fd
	 * itself stays open a moment (PROV_UCMA_CLOSE_LINGER_MS): a GET_EVENT
	 * another thread writes on it meanwhile sleeps, as one written just
	 * before the close does in the kernel, where this one would get EBADF
	 * (rping's event thread races its main thread's rdma_destroy_event_channel()).
	 * Then it is closed and @released(@fd) called: from then on the number
	 * is no channel's.
	 */
	void	(*close)(int fd, void (*released)(int fd));
};

#endif
