/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Strings from the target printed as text: process names, command lines, paths, symbol names
 * and labels come from programs (or captures) gpuleak does not trust, and a name such as
 * "a\e]0;PWNED\a\e[2J" would otherwise drive the user's terminal. Every text output (the
 * report, interval tables, step lines, diagnostics) prints them through term_str; JSON, SVG
 * and Perfetto have escapes of their own.
 *
 * Escaped as \xNN: C0 control characters (newline and tab included: a name must not start a
 * line of its own), DEL, the C1 controls (U+0080..U+009F, which some terminals obey), and
 * every byte that is not part of valid UTF-8 (a lone 0x9b is CSI to an 8-bit terminal).
 * Printable UTF-8 passes unchanged, so the common case costs a scan and no copy.
 */
#ifndef GPULEAK_LIB_TERM_H
#define GPULEAK_LIB_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* TERM_KEEP_LINES: newline and tab pass (a whole diagnostic, its own line breaks). */
enum { TERM_KEEP_LINES = 1 };

/* Whether s has nothing term_str would escape. */
bool term_clean(const char *s, unsigned int flags);
/*
 * s fit for a terminal: s itself when clean, else its escaped copy in buf, cut to len with
 * "..." at the end when it does not fit. NULL prints as "(null)", as printf would.
 */
const char *term_str(const char *s, char *buf, size_t len);
/*
 * term_str into the next of TERM_RING buffers of its own, used in turn: for the few target
 * strings of one printf (gpuleak prints from one thread).
 */
#define TERM_RING 8
const char *term_tmp(const char *s);
/* The same, written to f whole (no length limit). */
void term_fputs(const char *s, FILE *f, unsigned int flags);

#endif
