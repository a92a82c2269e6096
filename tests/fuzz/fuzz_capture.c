// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: `gpuleak report` on arbitrary bytes. The input goes through the whole
 * offline path (header, blocks, inflate, record decoder, tracker, symbolizer, text and JSON
 * report) exactly as replay__run does, minus the file. CRCs are not checked: a mutated
 * payload must reach the decoders, and a crafted file can carry valid CRCs anyway.
 */
#include <stdint.h>
#include <stdio.h>
#include "capture.h"
#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;

	if (!null)
		null = fopen("/dev/null", "w");
	if (!null)
		return 0;
	/* intervals too: the interval report reads the tracker mid-stream */
	replay__mem(data, size, CAPTURE_R_NO_CRC, 100000000, null, null);
	return 0;
}
