// SPDX-License-Identifier: MIT
/* The packet-socket broker: root's process that hands unprivileged verbs programs their socket. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "uroce/host.h"
#include "host_bpf.h"
#include "host_cm_exit.h"
#include "host_netdev.h"
#include "host_qpn.h"

#define STOP_WAIT_US	(2 * 1000 * 1000)
#define REAP_MS		100	/* how often it looks for the DREQs of dead processes */

/* RUN_DIR/devices/DEV.SUFFIX: "sock", the broker's socket. */
static int dev_sock_path(const char *dev, const char *suffix, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/devices/%s.%s",
			     host_run_dir(), dev, suffix) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

static void pid_path(const char *dev, char *buf, size_t len)
{
	snprintf(buf, len, "%s/devices/%s.broker", host_run_dir(), dev);
}

/*
 * A client: a process holding one of the broker's packet sockets, on the
 * connection it got it through.  Its socket's filter (strict: host_bpf.h)
 * lets in the RoCE frames of exactly the QPNs the broker allocated to it
 * and it has not freed; the table of QPNs is root's (host_qpn_protect()).
 */
struct client {
	int			conn;
	int32_t			pid;
	uint32_t		start;
	uid_t			uid;
	uint32_t		held;	/* bits set in its filter: QPNs allocated, not freed */
	struct host_qpn_filter	filter;
	int			xsks;	/* af_xdp: the XSKMAP of the XDP program attached for it */
};

/* What one user other than root may hold of a netdev's QPNs, across its processes, by default. */
#define USER_QPN_QUOTA		(HOST_QPN_SLOTS / 4)

static uint32_t user_holds(const struct client *clients, size_t n, uid_t uid)
{
	uint32_t held = 0;

	for (size_t i = 0; i < n; i++)
		if (clients[i].uid == uid)
			held += clients[i].held;
	return held;
}

static bool client_holds(const struct client *c, uint32_t qpn)
{
	return host_qpn_bit((const _Atomic uint64_t *)c->filter.bits, qpn);
}

static void client_bit(struct client *c, uint32_t qpn, bool on)
{
	uint32_t slot = qpn - HOST_QPN_BASE;
	uint64_t bit = 1ull << (slot % 64);

	if (on)
		__atomic_fetch_or(&c->filter.bits[slot / 64], bit, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&c->filter.bits[slot / 64], ~bit, __ATOMIC_RELEASE);
	c->held += on ? 1 : -1;
}

/* A packet socket whose holder sees the netdev's frames for its own QPNs only. */
static int make_packet_socket(struct client *c, int ifindex, const uint8_t mac[6])
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), one = 1, ret;
	char why[256];

	if (fd < 0)
		return -errno;
	ret = host_qpn_filter_load(&c->filter, why, sizeof(why));
	if (ret)
		goto err;
	host_qpn_filter_strict(&c->filter, ifindex, mac);
	ret = host_qpn_filter_attach(&c->filter, fd, why, sizeof(why));
	if (!ret && setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one)))
		ret = -errno;
	if (ret)
		goto err;
	return fd;
err:
	close(fd);
	return ret;
}

/*
 * An af_xdp port's copies of the ARP and ND frames of @ifindex, its filter
 * locked.  Its QPNs are kept in a QPN filter as for af_packet, one that no
 * socket runs: the XDP program hands the port every RoCE frame.
 */
static int make_neigh_tap(struct client *c, int ifindex)
{
	char why[256];
	int fd, one = 1, ret = host_qpn_filter_load(&c->filter, why, sizeof(why));

	if (ret)
		return ret;
	fd = host_netdev_neigh_tap_open(ifindex);
	if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one))) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* The client is gone (or its connection is): its QPNs go back to the table, its socket goes deaf. */
static void client_drop(struct client *c, struct host_qpn_map *qpns, const char *netdev)
{
	for (uint32_t slot = 0; c->filter.bits && slot < HOST_QPN_SLOTS; slot++)
		if (client_holds(c, HOST_QPN_BASE + slot)) {
			client_bit(c, HOST_QPN_BASE + slot, false);
			if (qpns)
				host_qpn_free_for(qpns, c->pid, c->start, HOST_QPN_BASE + slot);
		}
	host_qpn_filter_close(&c->filter);
	if (c->xsks >= 0) {
		close(c->xsks);
		host_bpf_xdp_detach_for(netdev, (uint32_t)c->pid);
	}
	close(c->conn);
	c->conn = -1;
}

/* A message of @len bytes on @conn, with the descriptor it carries (else -1) in @fd. */
static ssize_t recv_with_fd(int conn, void *buf, size_t len, int flags, int *fd)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl),
	};
	struct cmsghdr *c;
	ssize_t n = recvmsg(conn, &msg, flags | MSG_CMSG_CLOEXEC);

	*fd = -1;
	c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(c), sizeof(int));
	return n;
}

/* @len bytes of @buf on @conn, with descriptor @fd when >= 0. */
static int send_with_fd(int conn, const void *buf, size_t len, int fd, int flags)
{
	char ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (fd >= 0) {
		msg.msg_control = ctl;
		msg.msg_controllen = sizeof(ctl);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(conn, &msg, MSG_NOSIGNAL | flags) == (ssize_t)len ? 0 : -errno;
}

/*
 * An af_xdp port without privilege: the XDP program attached for it, AF_XDP
 * sockets (CAP_NET_RAW) that it then sets up itself, and those sockets in
 * the program's XSKMAP.  The netdev is the client's alone while its
 * program is attached (one af_xdp process per netdev queue, as for root).
 */
static void client_serve_xdp(struct client *c, const struct host_link_cfg *cfg,
			     const struct host_qpn_request *req, int fd_in,
			     struct host_qpn_answer *ans, int *fd_out)
{
	if (cfg->pmd != HOST_PMD_AF_XDP) {
		ans->ret = -EOPNOTSUPP;
	} else if (req->op == HOST_QPN_OP_XDP_ATTACH) {
		ans->ret = c->xsks >= 0 ? -EALREADY :
			   host_bpf_xdp_attach_for(cfg->netdev, (uint32_t)c->pid, &ans->qpn);
		if (ans->ret >= 0) {
			c->xsks = ans->ret;
			ans->ret = 0;
		}
	} else if (req->op == HOST_QPN_OP_XSK_SOCKET) {
		*fd_out = c->xsks < 0 ? -1 : socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
		ans->ret = c->xsks < 0 ? -EPERM : *fd_out < 0 ? -errno : 0;
	} else if (req->op == HOST_QPN_OP_XSK_INSERT) {
		int domain = 0;
		socklen_t len = sizeof(domain);

		/* Only its own AF_XDP sockets, only into its own program's map. */
		if (c->xsks < 0 || fd_in < 0 ||
		    getsockopt(fd_in, SOL_SOCKET, SO_DOMAIN, &domain, &len) || domain != AF_XDP)
			ans->ret = -EPERM;
		else
			ans->ret = bpf_map_update_elem(c->xsks, &req->qpn, &fd_in, 0) ? -errno : 0;
	}
}

/* One request; false when the connection is done with.  @user_held: what c's user holds. */
static bool client_serve(struct client *c, const struct host_link_cfg *cfg,
			 struct host_qpn_map *qpns, uint32_t user_held)
{
	struct host_qpn_request req;
	struct host_qpn_answer ans = { .ret = -EINVAL };
	int fd_in, fd_out = -1;
	ssize_t n = recv_with_fd(c->conn, &req, sizeof(req), MSG_WAITALL | MSG_DONTWAIT, &fd_in);
	bool ok;

	if (n != sizeof(req)) {
		if (fd_in >= 0)
			close(fd_in);
		return false;
	}
	if (req.op >= HOST_QPN_OP_XDP_ATTACH && req.op <= HOST_QPN_OP_XSK_INSERT) {
		client_serve_xdp(c, cfg, &req, fd_in, &ans, &fd_out);
	} else if (!qpns) {
		ans.ret = -ENODEV;
	} else if (req.op == HOST_QPN_OP_ALLOC) {
		/* Its bit before it learns the QPN: its first frame already comes in. */
		ans.ret = c->uid && user_held >= (cfg->user_qpns ? cfg->user_qpns : USER_QPN_QUOTA) ?
			  -EDQUOT :
			  host_qpn_alloc_for(qpns, c->pid, c->start, &ans.qpn);
		if (!ans.ret)
			client_bit(c, ans.qpn, true);
	} else if (req.op == HOST_QPN_OP_FREE) {
		ans.ret = client_holds(c, req.qpn) ? 0 : -EPERM;
		if (!ans.ret) {
			client_bit(c, req.qpn, false);
			host_qpn_free_for(qpns, c->pid, c->start, req.qpn);
		}
	}
	if (fd_in >= 0)
		close(fd_in);
	ok = !send_with_fd(c->conn, &ans, sizeof(ans), fd_out, MSG_DONTWAIT);
	if (fd_out >= 0)
		close(fd_out);
	return ok;
}

/* What comes with a client's first socket: the client as the broker (and the run directory) sees it. */
struct broker_hello {
	int32_t		pid;
	uint32_t	start;
};

static volatile sig_atomic_t broker_stop;

static void on_term(int sig)
{
	(void)sig;
	broker_stop = 1;
}

/* Is this process's network namespace one that `ip netns add` named? */
static bool netns_named(void)
{
	char name[NAME_MAX + 1];

	return host_netns_name(name, sizeof(name));
}

/* Where the broker posts the DREQs of processes that died with connections up. */
struct poster {
	const char	*netdev;
	int		fd;	/* a packet socket that receives nothing */
};

static int post_frame(void *arg, const uint8_t *frame, uint32_t len)
{
	struct poster *p = arg;
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_halen = 6 };
	struct ifreq ifr = { 0 };

	to.sll_ifindex = (int)if_nametoindex(p->netdev);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", p->netdev);
	if (!to.sll_ifindex || ioctl(p->fd, SIOCGIFHWADDR, &ifr) ||
	    !host_cm_exit_frame_ok(frame, len, (const uint8_t *)ifr.ifr_hwaddr.sa_data))
		return -EINVAL;
	memcpy(to.sll_addr, frame, 6);
	return sendto(p->fd, frame, len, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)len ?
	       0 : -errno;
}

/*
 * The broker's life: one socket per connection and, as the kernel does when
 * a process's rdma_cm file closes, a DREQ for each connection a dead
 * process left established; until stopped, its device is gone, or the
 * named namespace it serves was deleted (`ip netns del` without `uroce link
 * del`: the broker would be all that keeps it alive).
 */
static void serve(int lfd, const struct host_link_cfg *cfg)
{
	struct poster poster = { .netdev = cfg->netdev };
	struct host_qpn_map *qpns = NULL;
	struct client *clients = NULL;
	struct pollfd *pfd = NULL;
	bool named = netns_named();
	uint64_t idle_ms = 0;
	char conf[600], why[256];
	size_t n = 0, cap = 0;

	snprintf(conf, sizeof(conf), "%s/devices/%s.conf", host_run_dir(), cfg->name);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGPIPE, SIG_IGN);
	poster.fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (host_qpn_open(cfg->netdev, &qpns, why, sizeof(why)))
		qpns = NULL;	/* clients get a socket, and -ENODEV for QPNs */
	while (!broker_stop) {
		struct client *c;
		int conn, fd, ifindex, ready;
		struct ifreq ifr = { 0 };
		struct ucred cred;
		socklen_t len = sizeof(cred);

		if (poster.fd >= 0)
			host_cm_exit_reap(cfg->netdev, post_frame, &poster);
		if (n + 1 > cap) {
			size_t want = cap ? 2 * cap : 16;
			void *pc = realloc(clients, want * sizeof(*clients));

			if (pc)
				clients = pc;
			pc = pc ? realloc(pfd, (want + 1) * sizeof(*pfd)) : NULL;
			if (!pc)
				break;
			pfd = pc;
			cap = want;
		}
		pfd[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (size_t i = 0; i < n; i++)
			pfd[i + 1] = (struct pollfd){ .fd = clients[i].conn, .events = POLLIN };
		ready = poll(pfd, n + 1, REAP_MS);
		if (ready <= 0) {
			idle_ms += REAP_MS;
			/* A device removed without `uroce link del` (its run directory reset). */
			if (idle_ms >= 1000) {
				idle_ms = 0;
				if (access(conf, F_OK) || (named && !netns_named()))
					break;
			}
			continue;
		}
		for (size_t i = n; i-- > 0;) {
			if (!pfd[i + 1].revents ||
			    client_serve(&clients[i], cfg, qpns, user_holds(clients, n, clients[i].uid)))
				continue;
			client_drop(&clients[i], qpns, cfg->netdev);
			clients[i] = clients[--n];
		}
		if (!(pfd[0].revents & POLLIN))
			continue;
		conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			continue;
		c = &clients[n];
		*c = (struct client){ .conn = conn, .filter.prog_fd = -1, .xsks = -1 };
		ifindex = (int)if_nametoindex(cfg->netdev);
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", cfg->netdev);
		if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
		    !(c->start = host_qpn_proc_start(cred.pid)))
			fd = -ESRCH;
		else if (!ifindex || poster.fd < 0 || ioctl(poster.fd, SIOCGIFHWADDR, &ifr))
			fd = -ENODEV;
		else if (cfg->pmd == HOST_PMD_AF_XDP)
			fd = make_neigh_tap(c, ifindex);
		else
			fd = make_packet_socket(c, ifindex, (const uint8_t *)ifr.ifr_hwaddr.sa_data);
		c->pid = cred.pid;
		c->uid = cred.uid;
		if (fd >= 0) {
			struct broker_hello hello = { .pid = c->pid, .start = c->start };

			send_with_fd(conn, &hello, sizeof(hello), fd, 0);
			close(fd);
			n++;
		} else {
			int code = -fd;

			/* No fd: the errno instead, as 4 bytes. */
			(void)!write(conn, &code, sizeof(code));
			client_drop(c, NULL, cfg->netdev);
		}
	}
	while (n)
		client_drop(&clients[--n], qpns, cfg->netdev);
	free(clients);
	free(pfd);
	if (qpns)
		host_qpn_close(qpns);
	if (poster.fd >= 0)
		close(poster.fd);
}

/*
 * RUN_DIR/devices/DEV.broker: "PID START [GROUP]", the group named as well
 * for a user who cannot name it from the socket's gid (in a user namespace
 * where that gid is not mapped).
 */
static int write_pid(const char *dev, pid_t pid, const char *group)
{
	char path[600], tmp[640];
	FILE *f;

	pid_path(dev, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "%d %u%s%s\n", (int)pid, host_qpn_proc_start(pid), group ? " " : "",
		group ? group : "");
	if (fclose(f) || rename(tmp, path))
		return -errno;
	return 0;
}

int host_broker_start(const struct host_link_cfg *cfg, const char *group, char *err,
		      size_t errlen)
{
	struct sockaddr_un sa;
	mode_t mode = 0666;
	gid_t gid = (gid_t)-1;
	int lfd, ret;
	pid_t pid;

	if (group) {
		struct group *g = getgrnam(group);

		if (!g) {
			snprintf(err, errlen, "no group %s (see `getent group`)", group);
			return -ENOENT;
		}
		gid = g->gr_gid;
		mode = 0660;
	}
	if (dev_sock_path(cfg->name, "sock", &sa)) {
		snprintf(err, errlen, "run directory path too long: %s", host_run_dir());
		return -ENAMETOOLONG;
	}
	unlink(sa.sun_path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chown(sa.sun_path, (uid_t)-1, gid) || chmod(sa.sun_path, mode) || listen(lfd, 64)) {
		ret = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", sa.sun_path, strerror(-ret));
		goto err_close;
	}
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot start the broker: %s", strerror(-ret));
		goto err_close;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		/* Out of the caller's session and pipes: `uroce link add` returns at once. */
		setsid();
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		/* Nor the caller's other descriptors (a lock it holds, a pipe it waits on). */
		lfd = fcntl(lfd, F_DUPFD_CLOEXEC, 100);
		if (lfd < 0 || dup3(lfd, 3, O_CLOEXEC) != 3)
			_exit(1);
		close_range(4, ~0u, 0);
		if (chdir("/"))
			_exit(1);
		serve(3, cfg);
		unlink(sa.sun_path);
		_exit(0);
	}
	close(lfd);
	ret = write_pid(cfg->name, pid, group);
	if (ret) {
		kill(pid, SIGTERM);
		snprintf(err, errlen, "cannot record the broker's PID: %s", strerror(-ret));
		return ret;
	}
	return 0;

err_close:
	if (lfd >= 0)
		close(lfd);
	unlink(sa.sun_path);
	return ret;
}

void host_broker_stop(const char *dev)
{
	struct sockaddr_un sa;
	char path[600];
	unsigned start = 0;
	int pid = 0;
	FILE *f;

	pid_path(dev, path, sizeof(path));
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%d %u", &pid, &start) != 2)
			pid = 0;
		fclose(f);
	}
	unlink(path);
	if (pid > 0 && start && host_qpn_proc_start(pid) == start) {
		kill(pid, SIGTERM);
		for (int us = 0; us < STOP_WAIT_US && host_qpn_proc_start(pid) == start; us += 10000)
			usleep(10000);
	}
	if (dev_sock_path(dev, "sock", &sa) == 0)
		unlink(sa.sun_path);
}

/*
 * The broker's first answer: a socket, with this process as the broker sees
 * it (in a PID namespace of its own, not getpid(): host_self_set()), or an
 * errno as 4 bytes.
 */
static int recv_fd(int conn)
{
	union {
		struct broker_hello	hello;
		int			code;
	} buf;
	int fd;
	ssize_t n = recv_with_fd(conn, &buf, sizeof(buf), 0, &fd);

	if (n < 0)
		return -errno;
	if (fd >= 0 && n == sizeof(buf.hello)) {
		if (buf.hello.pid != (int32_t)getpid())
			host_self_set(buf.hello.pid, buf.hello.start);
		return fd;
	}
	if (fd >= 0)
		close(fd);
	return n == sizeof(buf.code) && buf.code > 0 ? -buf.code : -EIO;
}

/* The name of the group that may use @dev: as the broker file says, else of @gid. */
static void broker_group(const char *dev, gid_t gid, char *out, size_t len)
{
	char path[600], name[64];
	struct group *g;
	unsigned start;
	FILE *f;
	int pid;

	pid_path(dev, path, sizeof(path));
	f = fopen(path, "re");
	if (f) {
		int n = fscanf(f, "%d %u %63s", &pid, &start, name);

		fclose(f);
		if (n == 3) {
			snprintf(out, len, "%s", name);
			return;
		}
	}
	g = getgrgid(gid);
	snprintf(out, len, "%s", g ? g->gr_name : "?");
}

int host_broker_fetch(const struct host_link_cfg *cfg, int *keep, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	struct stat st;
	int conn, fd;

	if (dev_sock_path(cfg->name, "sock", &sa))
		return -ENAMETOOLONG;
	if (stat(sa.sun_path, &st))
		return -ENOENT;
	conn = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (conn < 0)
		return -errno;
	if (connect(conn, (struct sockaddr *)&sa, sizeof(sa))) {
		int ret = -errno;
		char group[64];

		close(conn);
		if (ret == -EACCES || ret == -EPERM) {
			broker_group(cfg->name, st.st_gid, group, sizeof(group));
			snprintf(err, errlen,
				 "%s: permission denied: only members of group %s may use it (%s): ask root to add you (`usermod -aG %s USER`, then log in again)",
				 cfg->name, group, sa.sun_path, group);
		} else if (ret == -ECONNREFUSED)
			snprintf(err, errlen,
				 "%s: its broker does not run (%s refuses connections): recreate the device (`uroce link del %s`, `uroce link add ...` as root)",
				 cfg->name, sa.sun_path, cfg->name);
		else
			snprintf(err, errlen, "%s: cannot reach its broker %s: %s", cfg->name,
				 sa.sun_path, strerror(-ret));
		return ret;
	}
	fd = recv_fd(conn);
	if (keep && fd >= 0)
		*keep = conn;
	else
		close(conn);
	if (fd < 0)
		snprintf(err, errlen, "%s: its broker could not make a packet socket on %s: %s",
			 cfg->name, cfg->netdev, strerror(-fd));
	return fd;
}

int host_broker_xdp_call(int conn, uint32_t op, uint32_t *arg, int fd_in, int *fd_out)
{
	struct host_qpn_request req = { .op = op, .qpn = *arg };
	struct host_qpn_answer ans;
	int fd, ret;

	ret = send_with_fd(conn, &req, sizeof(req), fd_in, 0);
	if (ret)
		return ret;
	if (recv_with_fd(conn, &ans, sizeof(ans), MSG_WAITALL, &fd) != sizeof(ans)) {
		if (fd >= 0)
			close(fd);
		return -EPIPE;
	}
	*arg = ans.qpn;
	if (fd_out)
		*fd_out = fd;
	else if (fd >= 0)
		close(fd);
	return ans.ret;
}
