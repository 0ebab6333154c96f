// SPDX-License-Identifier: MIT
/* The provider's own sockets come from the kernel, never from a socket interposer such as librspreload. */
#include <sys/syscall.h>
#include <unistd.h>

int socket(int domain, int type, int protocol);

/*
 * librspreload (rsockets), preloaded next to uroce's libraries, turns every
 * IPv4 and IPv6 stream or datagram socket into an rsocket, which is an
 * rdma_cm ID.  The provider's sockets (DPDK's interface ioctls when a port
 * starts, RESOLVE_IP's routing lookup) would then re-enter rdma_cm while it
 * holds ucma_lock, and the program hangs.  prov.map keeps this definition
 * local to the module, so only the module's own calls take it; other calls
 * on these descriptors pass such interposers, which do not know them.
 */
int socket(int domain, int type, int protocol)
{
	return (int)syscall(SYS_socket, domain, type, protocol);
}
