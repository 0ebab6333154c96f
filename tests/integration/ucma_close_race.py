# SPDX-License-Identifier: MIT
"""Run under `uroce exec`: a GET_EVENT that another thread writes just after the channel was closed
sleeps, as one written just before does in the kernel (rping's event thread races its main thread's
rdma_destroy_event_channel), other commands on it are EBADF, and the descriptor is released later.
Prints one line per finding; exit 0 when all hold."""

import ctypes
import errno
import os
import sys
import threading
import time

LINGER_S = 1.0	# PROV_UCMA_CLOSE_LINGER_MS
RDMA_PS_TCP = 0x0106

cm = ctypes.CDLL('librdmacm.so.1', use_errno=True)
cm.rdma_create_event_channel.restype = ctypes.c_void_p
cm.rdma_destroy_event_channel.argtypes = [ctypes.c_void_p]
cm.rdma_get_cm_event.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
cm.rdma_create_id.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]


class Channel(ctypes.Structure):
    """librdmacm's struct rdma_event_channel: the descriptor alone.  A copy of the destroyed one,
    so the late calls read no freed memory."""
    _fields_ = [('fd', ctypes.c_int)]


failed = 0


def check(cond, what):
    global failed
    print(('ok: ' if cond else 'FAILED: ') + what, flush=True)
    failed += not cond


ch = cm.rdma_create_event_channel()
check(bool(ch), 'rdma_create_event_channel')
fd = ctypes.cast(ch, ctypes.POINTER(Channel)).contents.fd
late = Channel(fd)
result = {}


def event_thread():
    time.sleep(0.05)	# the main thread's destroy comes first
    event = ctypes.c_void_p()
    ret = cm.rdma_get_cm_event(ctypes.byref(late), ctypes.byref(event))
    result['ret'] = (ret, ctypes.get_errno())


t = threading.Thread(target=event_thread, daemon=True)
t.start()
cm.rdma_destroy_event_channel(ch)
time.sleep(0.3)
check(t.is_alive(), f'a GET_EVENT after the close sleeps (returned {result.get("ret")})')

cm_id = ctypes.c_void_p()
ret = cm.rdma_create_id(ctypes.byref(late), ctypes.byref(cm_id), None, RDMA_PS_TCP)
check(ret != 0 and ctypes.get_errno() == errno.EBADF,
      f'CREATE_ID on the closed channel: EBADF (ret {ret}, {os.strerror(ctypes.get_errno())})')

time.sleep(LINGER_S + 0.2)
try:
    os.fstat(fd)
    released = False
except OSError as e:
    released = e.errno == errno.EBADF
check(released, f'descriptor {fd} released {LINGER_S} s after the close')
check(t.is_alive(), 'the late GET_EVENT still sleeps')
sys.stdout.flush()
os._exit(1 if failed else 0)
