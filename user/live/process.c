// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "live/process.h"

int process__start_ticks(pid_t pid, uint64_t *ticks)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = 0;
	/* comm may contain spaces and parentheses: fields restart after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return -EINVAL;
	*ticks = strtoull(p + 1, NULL, 10);
	return 0;
}

int process__cmdline(pid_t pid, char ***argv, uint32_t *argc)
{
	char path[64], *buf = NULL, *strs, **v;
	size_t len = 0, cap = 0, i, n = 0;
	ssize_t got;
	int fd, err = 0;

	*argv = NULL;
	*argc = 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	do {
		if (len == cap) {
			char *nb = realloc(buf, cap = cap ? 2 * cap : 4096);

			if (!nb) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = nb;
		}
		got = read(fd, buf + len, cap - len);
		if (got < 0) {
			err = -errno;
			goto cleanup;
		}
		len += got;
	} while (got > 0);
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

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, len, f))
		buf[strcspn(buf, "\n")] = 0;
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

static int resolve_exe(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(cmd, '/')) {
		if (access(cmd, X_OK))
			return -errno;
		if (!realpath(cmd, out))
			return -errno;
		return 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? path : ".", cmd);
		if (!access(buf, X_OK) && realpath(buf, out) && strlen(out) < len)
			return 0;
		path += n + (path[n] == ':');
	}
	return -ENOENT;
}

int launch__fork(char *const argv[], char *const env[], struct launch *l)
{
	int go[2], err[2], ret;
	sigset_t all;

	memset(l, 0, sizeof(*l));
	l->pid = -1;
	ret = resolve_exe(argv[0], l->exe, sizeof(l->exe));
	if (ret)
		return ret;
	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(err, O_CLOEXEC)) {
		ret = -errno;
		close(go[0]);
		close(go[1]);
		return ret;
	}
	l->pid = fork();
	if (l->pid < 0) {
		ret = -errno;
		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		return ret;
	}
	if (!l->pid) {
		char c;
		int e;

		/* The tracer blocks signals for its signalfd; the target must not inherit that. */
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		close(go[1]);
		close(err[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(127); /* tracer gave up before release */
		for (; env && *env; env++)
			putenv(*env);
		execv(l->exe, argv);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	l->go_fd = go[1];
	l->err_fd = err[0];
	return 0;
}

int launch__release(struct launch *l)
{
	ssize_t n;
	int e = 0;

	if (write(l->go_fd, "g", 1) != 1)
		return -errno;
	close(l->go_fd);
	l->go_fd = -1;
	/* The error pipe is close-on-exec: EOF means the exec happened. */
	n = read(l->err_fd, &e, sizeof(e));
	close(l->err_fd);
	l->err_fd = -1;
	if (n == sizeof(e)) {
		waitpid(l->pid, NULL, 0);
		return -e;
	}
	return 0;
}

void launch__abort(struct launch *l)
{
	if (l->pid <= 0)
		return;
	if (l->go_fd >= 0)
		close(l->go_fd);
	if (l->err_fd >= 0)
		close(l->err_fd);
	kill(l->pid, SIGKILL);
	waitpid(l->pid, NULL, 0);
	l->pid = -1;
}
