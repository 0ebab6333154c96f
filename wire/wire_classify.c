// SPDX-License-Identifier: MIT
/* One walk over a received frame's L2, L3 and L4 headers: what it is and where they are. */
#include "wire_classify.h"

enum wire_frame_kind wire_classify(const void *frame, uint32_t len, struct wire_frame_offsets *o)
{
	return wire_classify_inline(frame, len, o);
}
