/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpuleak probes: the traced APIs found in a process's objects or in one file, and where
 * each probe would sit, without attaching anything (and without root for a file).
 */
#ifndef GPULEAK_CLI_PROBES_H
#define GPULEAK_CLI_PROBES_H

#include <argp.h>

struct cli;

/* The command's parser (input: the struct cli). */
extern const struct argp cli_probes_argp;

/* The exit status (enum gl_exit). */
int probes__run(const struct cli *c);

#endif
