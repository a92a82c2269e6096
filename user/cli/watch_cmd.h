/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* gpuleak watch's command line (watch.c): its parser, and its defaults. */
#ifndef GPULEAK_CLI_WATCH_CMD_H
#define GPULEAK_CLI_WATCH_CMD_H

#include <argp.h>

struct cli;

extern const struct argp cli_watch_argp;
/* What watch does without options: the ring, the triggers, the bounds, a smaller ring
 * buffer than the other commands'. */
void cli__watch_defaults(struct cli *c);

#endif
