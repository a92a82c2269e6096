// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: `gpuleak report` on arbitrary bytes. The input goes through the whole
 * offline path (header, blocks, inflate, record decoder, tracker with rules, timeline,
 * symbolizer and stacks, text and JSON report, the folded, Perfetto and SVG pictures, PyTorch's
 * memory snapshot of --memory-viz with its allocation trace) exactly
 * as replay__run does, minus the file. CRCs are not checked: a mutated payload must reach
 * the decoders, and a crafted file can carry valid CRCs anyway.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "capture/capture.h"
#include "offline/replay.h"
#include "tracker/rules.h"

/* Rules of every kind, so that classification, deferred frees and gates all run. */
static const char fuzz_rules[] = "persistent site=*kv* release=session-end\n"
				 "persistent label=weights* once max=1MiB\n"
				 "persistent api=cudaMallocAsync phase=steps<3\n"
				 "deferred api=cuMemFree* until=device-sync window=1s\n"
				 "ignore lib=libnccl*\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct analysis_opts a = {
	    .steps = {.source = STEP_SYNC,
		      .warmup_steps = 1,
		      .min_growth_steps = 2,
		      .device_mem = 1ULL << 30},
	    .steps_given = true,
	    .gate = {.on = true, .has_max_live = true},
	    /* the pictures too: the graph, series and writers read what the input made, onto
	     * standard output, which is /dev/null here (gpuleak writes no device by name) */
	    .out = {.folded_path = "-", .perfetto_path = "-", .svg_path = "-", .memviz_path = "-"},
	};
	static struct rules *rules;
	static FILE *null;
	char err[256];

	if (!null) {
		null = fopen("/dev/null", "w");
		if (!null || dup2(fileno(null), STDOUT_FILENO) < 0)
			return 0;
	}
	if (!rules && !rules__new(&rules) &&
	    (rules__parse(rules, fuzz_rules, strlen(fuzz_rules), "fuzz", err, sizeof(err)) ||
	     rules__add_builtins(rules)))
		return 0;
	if (!null || !rules)
		return 0;
	a.rules = rules;
	/* intervals too: the interval report reads the tracker mid-stream */
	replay__mem(data, size, CAPTURE_R_NO_CRC, &a, 100000000, null, null);
	return 0;
}
