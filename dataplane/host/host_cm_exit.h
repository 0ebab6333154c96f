/* SPDX-License-Identifier: MIT */
/* A process's rdma_cm connections, each with the DREQ frame to post for it should the process die. */
#ifndef UROCE_HOST_CM_EXIT_H
#define UROCE_HOST_CM_EXIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/*
 * RUN_DIR/cm/KEY.exit/PID.START (KEY: the netdev), one line per
 * established connection, "COMM_ID FRAME": the local comm ID and, in hex,
 * the whole Ethernet frame of the DREQ its CM would send (ICRC included).
 * The kernel ends a dead process's connections when its file closes; here
 * the device's broker does, by posting the frames of a process that is gone
 * (host_cm_exit_reap()).  The file exists while the process has such
 * connections.
 */
#define HOST_CM_EXIT_FRAME_MAX	512

struct host_cm_exit;

/* Return: 0, or -errno with one line in @err. */
int host_cm_exit_open(const char *key, struct host_cm_exit **out, char *err, size_t errlen);
/* Forget the table; the file stays for the broker when connections are still in it. */
void host_cm_exit_close(struct host_cm_exit *t);
/* @comm_id's frame is @frame (@len bytes); @len 0: the connection is over. Return: 0 or -errno. */
int host_cm_exit_set(struct host_cm_exit *t, uint32_t comm_id, const uint8_t *frame, uint32_t len);

/*
 * Is @frame a DREQ as host_cm_exit_set() keeps them: RoCE (ICRC checked), a
 * UD SEND Only from @src_mac to QP1 with the GSI Q_Key, a CM DREQ MAD?  The
 * broker posts nothing else, whoever wrote the file.
 */
bool host_cm_exit_frame_ok(const uint8_t *frame, uint32_t len, const uint8_t src_mac[6]);

/**
 * host_cm_exit_reap() - post the frames of processes that are gone.
 * @key: the netdev.
 * @send: posts one frame; the files are claimed (renamed) first, so two
 *        reapers never post the same frame.
 * Return: frames posted.
 */
unsigned host_cm_exit_reap(const char *key, int (*send)(void *arg, const uint8_t *frame,
							   uint32_t len), void *arg);

#endif
