// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "lib/infile.h"
#include "live/process.h"

/* /proc/PID/stat into buf; *fields: after comm (which may hold spaces and parentheses). */
static int read_stat(pid_t pid, char *buf, size_t len, char **fields)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = 0;
	*fields = strrchr(buf, ')');
	return *fields ? 0 : -EINVAL;
}

int process__start_ticks(pid_t pid, uint64_t *ticks)
{
	char buf[1024], *p;
	int field, err;

	err = read_stat(pid, buf, sizeof(buf), &p);
	if (err)
		return err;
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return -EINVAL;
	*ticks = strtoull(p + 1, NULL, 10);
	return 0;
}

int process__wait_stopped(pid_t pid, unsigned int max_ms)
{
	const struct timespec ms = {.tv_nsec = 1000000};
	char buf[1024], *p;
	unsigned int i;
	int err;

	for (i = 0;; i++) {
		err = read_stat(pid, buf, sizeof(buf), &p);
		if (err)
			return err;
		/* ") S ...": the state after the comm; T stopped, t traced, Z/X gone. */
		if (p[1] && (p[2] == 'T' || p[2] == 't'))
			return 0;
		if (p[1] && (p[2] == 'Z' || p[2] == 'X'))
			return -ESRCH;
		if (i >= max_ms)
			return -ETIMEDOUT;
		nanosleep(&ms, NULL);
	}
}

int process__cmdline(pid_t pid, char ***argv, uint32_t *argc)
{
	char path[64], *buf = NULL, *strs, **v;
	size_t len = 0, i, n = 0;
	int fd, err = 0;

	*argv = NULL;
	*argc = 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	/* (the kernel bounds it: at most the argument space of an exec) */
	err = infile__read_all(fd, SIZE_MAX, &buf, &len);
	if (err)
		goto cleanup;
	for (i = 0; i < len; i++)
		n += !buf[i];
	if (len && buf[len - 1])
		n++; /* a process may rewrite its arguments without the final NUL */
	/* The pointers, then the strings, in one allocation. */
	v = malloc((n + 1) * sizeof(*v) + len + 1);
	if (!v) {
		err = -ENOMEM;
		goto cleanup;
	}
	strs = (char *)(v + n + 1);
	memcpy(strs, buf, len);
	strs[len] = 0;
	for (i = 0, n = 0; i < len; i += strlen(strs + i) + 1)
		v[n++] = strs + i;
	v[n] = NULL;
	*argv = v;
	*argc = n;
cleanup:
	free(buf);
	close(fd);
	return err;
}

void process__exe(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
}

uint64_t process__start_realtime_ns(uint64_t start_ticks)
{
	long tck = sysconf(_SC_CLK_TCK);
	struct timespec real, boot;

	if (tck <= 0 || clock_gettime(CLOCK_REALTIME, &real) ||
	    clock_gettime(CLOCK_BOOTTIME, &boot))
		return 0;
	/* starttime counts from boot (CLOCK_BOOTTIME); wall clock at boot is real - boot. */
	return (uint64_t)real.tv_sec * 1000000000ULL + real.tv_nsec -
	       ((uint64_t)boot.tv_sec * 1000000000ULL + boot.tv_nsec) +
	       start_ticks * (1000000000ULL / tck);
}

void process__comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;
	size_t n;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	/* The kernel ends it with a newline; a name may hold newlines of its own. */
	n = fread(buf, 1, len - 1, f);
	if (n && buf[n - 1] == '\n')
		n--;
	buf[n] = 0;
	fclose(f);
}

int process__pidfd(pid_t pid)
{
	int fd = syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : fd;
}

bool process__pidfd_exited(int pidfd)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP));
}

int process__pidfd_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) ? -errno : 0;
}

/* The numbers of a "Key:\tn\tn..." line of /proc/PID/status; returns how many (<= max). */
static int status_numbers(pid_t pid, const char *key, uint64_t *v, int max)
{
	char path[64], line[512], *p, *end;
	size_t klen = strlen(key);
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), pid ? "/proc/%d/status" : "/proc/self/status", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		for (p = line + klen + 1; n < max; p = end) {
			v[n] = strtoull(p, &end, 10);
			if (end == p)
				break;
			n++;
		}
		break;
	}
	fclose(f);
	return n;
}

/* PF_KTHREAD (include/linux/sched.h): the flags field of /proc/PID/stat says so. */
#define PF_KTHREAD 0x00200000UL

/* The capabilities this process has in effect (CapEff), 0 when unknown. */
static uint64_t effective_caps(void)
{
	unsigned long long v = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* CAP_DAC_READ_SEARCH = 2, CAP_SYS_PTRACE = 19: another user's /proc/PID/map_files (0500,
 * theirs) and the right to trace them, which uprobes filtered by pid need. */
#define OTHER_USER_CAPS ((1ULL << 2) | (1ULL << 19))

int process__check_target(pid_t pid, char *why, size_t why_len)
{
	char path[64], buf[1024], comm[64] = "?", *open_p, *close_p;
	unsigned long flags = 0;
	uint64_t tgid = 0, uid[4] = {0}, gid[4] = {0};
	bool other = false;
	char state = '?';
	int i;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, why_len, "no such process: %d", pid);
		return -ESRCH;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	open_p = strchr(buf, '(');
	close_p = strrchr(buf, ')');
	if (open_p && close_p > open_p) {
		snprintf(comm, sizeof(comm), "%.*s", (int)(close_p - open_p - 1), open_p + 1);
		/* state is field 3, flags field 9: after ") " come state, ppid, pgrp, session,
		 * tty_nr, tpgid, flags */
		sscanf(close_p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags);
	}
	if (state == 'Z' || state == 'X') {
		snprintf(why, why_len,
			 "pid %d (%s) has exited (a zombie its parent has not reaped): nothing to "
			 "trace",
			 pid, comm);
		return -ESRCH;
	}
	if (flags & PF_KTHREAD) {
		snprintf(why, why_len, "pid %d (%s) is a kernel thread: nothing to trace", pid,
			 comm);
		return -EINVAL;
	}
	/* /proc/TID exists for every thread, unlisted: -p wants the process. */
	if (status_numbers(pid, "Tgid", &tgid, 1) == 1 && tgid && (pid_t)tgid != pid) {
		snprintf(why, why_len,
			 "pid %d is a thread of process %" PRIu64 " (%s): -p %" PRIu64, pid, tgid,
			 comm, tgid);
		return -EINVAL;
	}
	/* Another user's process: what the kernel asks before it lets us in (same ids, or the
	 * capabilities), said here rather than as "Permission denied" from an attach. */
	status_numbers(pid, "Uid", uid, 4);
	status_numbers(pid, "Gid", gid, 4);
	for (i = 0; i < 3; i++)
		other |= uid[i] != geteuid() || gid[i] != getegid();
	if (other && (effective_caps() & OTHER_USER_CAPS) != OTHER_USER_CAPS) {
		snprintf(
		    why, why_len,
		    "pid %d (%s) belongs to uid %" PRIu64 ", not to uid %u that gpuleak runs as: "
		    "tracing another user's process needs CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH "
		    "(run gpuleak as root)",
		    pid, comm, uid[1], (unsigned int)geteuid());
		return -EPERM;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != EACCES && errno != EPERM) {
		snprintf(why, why_len, "pid %d (%s): cannot read %s: %s", pid, comm, path,
			 strerror(errno));
		return -errno;
	}
	snprintf(why, why_len,
		 "pid %d (%s): reading its memory maps is refused although gpuleak may trace it: a "
		 "security module (Yama's ptrace_scope 3, SELinux, AppArmor) or the process's own "
		 "settings forbid it",
		 pid, comm);
	return -EPERM;
}

bool process__in_other_root(pid_t pid)
{
	struct stat ours, theirs;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	if (stat("/", &ours) || stat(path, &theirs))
		return false;
	return ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino;
}

uint32_t process__ns_pid(pid_t pid)
{
	uint64_t v[32];
	int n = status_numbers(pid, "NSpid", v, 32);

	/* One number: the process is in our namespace; the last is its innermost pid. */
	return n > 1 ? (uint32_t)v[n - 1] : 0;
}

uint64_t process__boot_ns_to_ticks(uint64_t ns)
{
	long tck = sysconf(_SC_CLK_TCK);

	/* The kernel's nsec_to_clock_t: truncating, as /proc/PID/stat prints it. */
	return tck > 0 ? ns / (1000000000ULL / tck) : 0;
}

int process__pidns(uint64_t *dev, uint64_t *ino, bool *initial)
{
	char link[64];
	struct stat st;
	ssize_t n;

	/* The kernel compares the namespace's own number (what the link names; st_ino may be
	 * another number) and the device of nsfs. */
	if (stat("/proc/self/ns/pid", &st))
		return -errno;
	n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
	if (n <= 0)
		return -errno;
	link[n] = 0;
	if (sscanf(link, "pid:[%" SCNu64 "]", ino) != 1)
		return -EINVAL;
	*dev = st.st_dev;
	/* PROC_PID_INIT_INO: the initial namespace, where BPF's pids are ours already. */
	*initial = *ino == 0xEFFFFFFCULL;
	return 0;
}

int process__check_kernel(const char *sysfs_root, char *why, size_t why_len)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/kernel/btf/vmlinux", sysfs_root);
	if (access(path, R_OK)) {
		snprintf(why, why_len,
			 "this kernel has no BTF (%s is missing): gpuleak needs a "
			 "kernel built with CONFIG_DEBUG_INFO_BTF=y (standard in distribution "
			 "kernels since 5.x)",
			 path);
		return -ENOENT;
	}
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/uprobe/type", sysfs_root);
	if (access(path, R_OK)) {
		snprintf(why, why_len,
			 "this kernel has no uprobes (%s is missing): gpuleak needs "
			 "a kernel built with CONFIG_UPROBES=y and CONFIG_UPROBE_EVENTS=y",
			 path);
		return -ENOENT;
	}
	return 0;
}

int process__check_privileges(void)
{
	unsigned long long eff = 0;
	char line[256];
	FILE *f;

	if (geteuid() == 0)
		return 0;
	f = fopen("/proc/self/status", "re");
	if (!f)
		return -EPERM;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	/* CAP_SYS_ADMIN = 21, CAP_PERFMON = 38, CAP_BPF = 39. uprobe_multi links need
	 * CAP_SYS_ADMIN on top of the other two (the kernel refuses them with EPERM). */
	return (eff & (1ULL << 21)) && (eff & (1ULL << 38)) && (eff & (1ULL << 39)) ? 0 : -EPERM;
}
