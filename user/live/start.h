/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Taking on the targets the command line names. Attach mode: every -p process checked
 * first (a typo in a list attaches nothing), pinned by its pidfd and start time, scanned and
 * announced at once; one without a GPU library is an error unless --wait. Run mode: the
 * command forked and held before exec, probed by path (its executable and its ld.so: uprobes
 * are keyed by inode, so they take effect when exec maps the files), then let go.
 */
#ifndef GPULEAK_LIVE_START_H
#define GPULEAK_LIVE_START_H

struct live;
struct session_opts;

/* Every -p process is one gpuleak can trace (process__check_target): a typo in a list, a
 * kernel thread or another user's process stops everything before BPF is loaded. 0 or
 * -errno, said. */
int start__check_pids(const struct session_opts *o);
/*
 * Whether the targets run Python from the start, as far as a glance tells: attach mode, a
 * process mapping python* or libpython*; run mode, a command named python* or a script whose
 * #! line names it. Then the Python frame walk is loaded at start rather than on demand.
 */
bool start__python_expected(const struct session_opts *o);
/* 0 or -errno, said on stderr. */
int start__attach_mode(struct live *l);
int start__run_mode(struct live *l);
/* A SIGINT, SIGTERM or SIGHUP came while starting: said, -EINTR (nothing traced yet). */
int start__interrupted(struct live *l);

#endif
