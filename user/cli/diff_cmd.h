/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpuleak diff BASE NEW: what changed between two runs, from their captures or their NDJSON
 * verdicts (diff/diff.h decides, output/diff_report.h prints), and the regression gate.
 */
#ifndef GPULEAK_CLI_DIFF_CMD_H
#define GPULEAK_CLI_DIFF_CMD_H

#include <argp.h>

struct cli;

/* The command's parser (input: the struct cli). */
extern const struct argp cli_diff_argp;

/* The exit status (enum gl_exit): 0, 1 (an input unreadable or corrupt, an output not
 * written), 5 (--fail-on-regression found one). The rules are c->a's, already complete. */
int diff_cmd__run(struct cli *c);

#endif
