// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <bpf/libbpf.h>
#include "live/attach.h"
#include "probe/elf_obj.h"
#include "lib/json.h"
#include "lib/log.h"
#include "probe/dawn_procs.h"
#include "lib/term.h"
#include "probe/modules.h"
#include "probe/catalog.h"
#include "probe/proc_maps.h"
#include "lib/vec.h"
#include "live/bpf_setup.h"
#include "live/links.h"

#define STR_(x)	      #x
#define STR(x)	      STR_(x)
#define BPF_SPECS_STR STR(BPF_SETUP_USDT_SPECS)

/*
 * The links of one object's probes in one direction: one uprobe_multi link, or one classic
 * uprobe link per probe where the kernel has no uprobe_multi (before 6.6).
 */
struct linkset {
	struct bpf_link **v;
	size_t n;
};

struct attached {
	pid_t pid;
	struct module *mod;
	struct linkset enter;
	struct linkset exit;
	struct bpf_link **usdt; /* one per USDT probe (provider:name), all its sites */
	size_t nr_usdt;
	size_t nr_probes;
	bool marker; /* a step/request marker, not the module's catalog probes */
	unsigned int marker_api;
};

/* A probe on code found at run time (a callback), one link each. */
struct code_probe {
	pid_t pid;
	uint64_t addr;
	struct bpf_link *link;
};

struct attach {
	bool multi; /* uprobe_multi links, else classic ones */
	struct bpf_program *enter_prog;
	struct bpf_program *exit_prog;
	struct bpf_program *usdt_prog;
	struct modules *mods;
	struct attached *v;
	size_t n, cap;
	struct code_probe *code;
	size_t nr_code, cap_code;
};

int attach__new(struct bpf_program *enter, struct bpf_program *exit, struct bpf_program *usdt,
		bool multi, struct modules *mods, struct attach **out)
{
	struct attach *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->multi = multi;
	a->enter_prog = enter;
	a->exit_prog = exit;
	a->usdt_prog = usdt;
	a->mods = mods;
	*out = a;
	return 0;
}

static int linkset_add(struct linkset *s, struct bpf_link *l)
{
	struct bpf_link **v = realloc(s->v, (s->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	s->v = v;
	s->v[s->n++] = l;
	return 0;
}

/* Moves the set's links into links[] (for links_destroy); returns how many. */
static size_t linkset_take(struct linkset *s, struct bpf_link **links)
{
	size_t k, n = s->n;

	for (k = 0; k < n; k++)
		links[k] = s->v[k];
	free(s->v);
	s->v = NULL;
	s->n = 0;
	return n;
}

static void linkset_destroy(struct linkset *s)
{
	struct bpf_link **links = s->n ? calloc(s->n, sizeof(*links)) : NULL;
	size_t k, n;

	if (!links) {
		for (k = 0; k < s->n; k++)
			bpf_link__destroy(s->v[k]);
		free(s->v);
		s->v = NULL;
		s->n = 0;
		return;
	}
	n = linkset_take(s, links);
	links__destroy(links, n);
	free(links);
}

/* One attached object's links, one after the other. */
static void attached_destroy(struct attached *at)
{
	size_t k;

	linkset_destroy(&at->enter);
	linkset_destroy(&at->exit);
	for (k = 0; k < at->nr_usdt; k++)
		bpf_link__destroy(at->usdt[k]);
	free(at->usdt);
	at->usdt = NULL;
	at->nr_usdt = 0;
}

void attach__free(struct attach *a)
{
	struct bpf_link **links;
	size_t i, n = 0;

	if (!a)
		return;
	for (i = 0; i < a->n; i++)
		n += a->v[i].enter.n + a->v[i].exit.n + a->v[i].nr_usdt;
	links = calloc(n + a->nr_code + 1, sizeof(*links));
	n = 0;
	for (i = 0; i < a->n; i++) {
		size_t k;

		if (!links) {
			attached_destroy(&a->v[i]);
			continue;
		}
		n += linkset_take(&a->v[i].enter, links + n);
		n += linkset_take(&a->v[i].exit, links + n);
		for (k = 0; k < a->v[i].nr_usdt; k++)
			links[n++] = a->v[i].usdt[k];
		free(a->v[i].usdt);
	}
	for (i = 0; i < a->nr_code; i++) {
		if (links)
			links[n++] = a->code[i].link;
		else
			bpf_link__destroy(a->code[i].link);
	}
	if (links)
		links__destroy(links, n);
	free(links);
	free(a->v);
	free(a->code);
	free(a);
}

void attach__forget(struct attach *a, pid_t pid)
{
	size_t i, n = 0;

	for (i = 0; i < a->n; i++) {
		if (a->v[i].pid != pid) {
			a->v[n++] = a->v[i];
			continue;
		}
		attached_destroy(&a->v[i]);
	}
	a->n = n;
	for (i = 0, n = 0; i < a->nr_code; i++) {
		if (a->code[i].pid != pid)
			a->code[n++] = a->code[i];
		else
			bpf_link__destroy(a->code[i].link);
	}
	a->nr_code = n;
}

static struct attached *find(const struct attach *a, pid_t pid, const struct module *mod)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (a->v[i].pid == pid && a->v[i].mod == mod && !a->v[i].marker)
			return &a->v[i];
	return NULL;
}

/* PyTorch's profiler hook: the blocks its USDT probes report too (never both). */
static bool is_torch_hook(const struct cat_api *api)
{
	return GL_API_FAMILY(api->api) == GL_FAM_PYTORCH && !(api->flags & CAT_USDT);
}

/*
 * One probe at file offset off of the object at path, for pid, with the API id as its cookie:
 * a uprobe_multi link of one offset, or a classic uprobe link. NULL with errno on failure.
 */
static struct bpf_link *link_one(const struct attach *a, struct bpf_program *prog, pid_t pid,
				 const char *path, unsigned long off, __u64 cookie, bool ret)
{
	if (a->multi) {
		LIBBPF_OPTS(bpf_uprobe_multi_opts, mopts, .offsets = &off, .cookies = &cookie,
			    .cnt = 1, .retprobe = ret);

		return bpf_program__attach_uprobe_multi(prog, pid, path, NULL, &mopts);
	}
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .retprobe = ret);
	return bpf_program__attach_uprobe_opts(prog, pid, path, off, &opts);
}

/*
 * The classic links of n probes (offsets, cookies): all or none. The kernel before 6.6 has
 * no multi link, so each probe is a perf event of its own, attached one after the other.
 */
static int link_classic(const struct attach *a, struct bpf_program *prog, pid_t pid,
			const char *path, const unsigned long *offs, const __u64 *cookies, size_t n,
			bool ret, struct linkset *out)
{
	struct bpf_link *l;
	size_t i;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		l = link_one(a, prog, pid, path, offs[i], cookies[i], ret);
		if (!l)
			err = -errno;
		else if (linkset_add(out, l)) {
			bpf_link__destroy(l);
			err = -ENOMEM;
		}
	}
	if (err)
		linkset_destroy(out);
	return err;
}

/*
 * The links of every probe of an object in one direction (ret: the return probes) into out.
 * 0 (nothing to link is no error: entry-only APIs have no return probe) or -errno.
 */
static int link_multi(const struct attach *a, struct bpf_program *prog, pid_t pid, const char *path,
		      const struct module *mod, bool ret, bool skip_torch_hook, struct linkset *out)
{
	size_t i, n = 0;
	unsigned long *offs = calloc(mod->nr_sites, sizeof(*offs));
	__u64 *cookies = calloc(mod->nr_sites, sizeof(*cookies));
	struct bpf_link *link = NULL;
	int err = -ENOMEM;

	if (!offs || !cookies)
		goto cleanup;
	for (i = 0; i < mod->nr_sites; i++) {
		if (ret && cat_entry_only(mod->sites[i].api))
			continue;
		/* One refused probe would fail the whole link (warn_slow_sites says so). */
		if (mod->sites[i].place.place == PLACE_REFUSED)
			continue;
		if (skip_torch_hook && is_torch_hook(mod->sites[i].api))
			continue;
		offs[n] = mod->sites[i].offset;
		cookies[n] = mod->sites[i].api->api;
		n++;
	}
	err = 0;
	if (!n)
		goto cleanup;
	if (!a->multi) {
		err = link_classic(a, prog, pid, path, offs, cookies, n, ret, out);
		goto cleanup;
	}
	LIBBPF_OPTS(bpf_uprobe_multi_opts, opts, .offsets = offs, .cookies = cookies, .cnt = n,
		    .retprobe = ret);
	link = bpf_program__attach_uprobe_multi(prog, pid, path, NULL, &opts);
	if (!link)
		err = -errno;
	else if (linkset_add(out, link)) {
		bpf_link__destroy(link);
		err = -ENOMEM;
	}
cleanup:
	free(offs);
	free(cookies);
	return err;
}

/* Say once per object which probes cost a single-step per hit (glibc's free, some nccl*). */
static void warn_slow_sites(struct module *mod)
{
	char names[256], refused[256];
	size_t i, len = 0, rlen = 0, n = 0, nr = 0, moved = 0;

	if (mod->warned)
		return;
	mod->warned = true;
	names[0] = refused[0] = 0;
	for (i = 0; i < mod->nr_sites; i++) {
		const struct probe_site *s = &mod->sites[i];

		moved += s->place.place == PLACE_MOVED;
		if (s->place.place == PLACE_REFUSED) {
			if (rlen < sizeof(refused) - 1)
				rlen +=
				    snprintf(refused + rlen, sizeof(refused) - rlen, "%s%s (%s)",
					     nr ? ", " : "", s->api->name, s->place.first);
			nr++;
		}
		/* The rendezvous fires once per dlopen: its cost does not matter. */
		if (s->place.place != PLACE_SLOW || s->api->op == OP_RENDEZVOUS)
			continue;
		if (len < sizeof(names) - 1)
			len += snprintf(names + len, sizeof(names) - len, "%s%s (%s)",
					n ? ", " : "", s->api->name, s->place.first);
		n++;
	}
	if (moved)
		pr_info("%zu probe%s in %s moved past a first instruction the kernel "
			"single-steps (gpuleak probes --lib %s says where)\n",
			moved, moved > 1 ? "s" : "", mod->name, mod->path);
	if (n)
		pr_warn("%zu probe%s in %s sit%s on an instruction the kernel single-steps "
			"(several us per call, ~20 us on a nested VM): %s\n",
			n, n > 1 ? "s" : "", mod->name, n > 1 ? "" : "s", names);
	if (nr)
		pr_warn("%zu function%s in %s start%s with an instruction the kernel refuses to "
			"probe, not traced: %s\n",
			nr, nr > 1 ? "s" : "", mod->name, nr > 1 ? "" : "s", refused);
}

/* What a failed USDT attach means, for its message. */
static const char *usdt_why(int err, const struct usdt_probe *u)
{
	if (err == -E2BIG)
		return "libbpf's USDT spec table is full (" BPF_SPECS_STR " argument specs)";
	if ((err == -ESRCH || err == -ENOENT) && u->base_missing && bpf_setup__libbpf_older(1, 6))
		return "its note records no .stapsdt.base, which libbpf before 1.6 misplaces";
	if ((err == -ESRCH || err == -ENOENT) && u->sib && bpf_setup__libbpf_older(1, 7))
		return "an argument is base+index*scale, which libbpf before 1.7 cannot read";
	if (err == -EINVAL)
		return "another tracer may hold a probe on its site without its semaphore "
		       "(dmesg: ref_ctr_offset mismatch)";
	if (err == -EOPNOTSUPP)
		return "this kernel's uprobes have no reference counters for USDT semaphores";
	return strerror(-err);
}

/*
 * One USDT link: every site of probe u in the object at path, for pid only, the API id as
 * USDT cookie; the kernel raises the probe's semaphore in pid while the link lives. NULL with
 * a warning on failure (the object's other probes stay).
 */
static struct bpf_link *link_usdt(struct attach *a, pid_t pid, const char *path,
				  const struct module *mod, struct usdt_probe *u, unsigned int api)
{
	LIBBPF_OPTS(bpf_usdt_opts, opts, .usdt_cookie = api);
	struct bpf_link *link;

	link = bpf_program__attach_usdt(a->usdt_prog, pid, path, u->provider, u->name, &opts);
	if (!link) {
		int err = -errno;

		/* Once per probe: the object is looked at again at every rescan. */
		if (!u->warned)
			pr_warn("pid %d: cannot attach USDT %s:%s in %s: %s\n", pid, u->provider,
				u->name, mod->path, usdt_why(err, u));
		u->warned = true;
		errno = -err;
	}
	return link;
}

/* Whether pid has PyTorch's USDT probes attached. */
static bool has_torch_usdt(const struct attach *a, pid_t pid)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (a->v[i].pid == pid && !a->v[i].marker && a->v[i].nr_usdt &&
		    module__has_torch_usdt(a->v[i].mod))
			return true;
	return false;
}

/* Where an attached object's probe addresses came from, for attach -v. */
static const char *probes_source(const struct module *mod, const struct attached *at)
{
	if (at->nr_probes == at->nr_usdt)
		return "its USDT notes";
	if (at->nr_usdt)
		return mod->sites[0].source == SITE_DAWN_PROCS ? "Dawn's proc table and USDT notes"
							       : "symbols and USDT notes";
	return module__site_source(&mod->sites[0]);
}

/*
 * Attach one module for pid through open_path (any path that reaches its inode): its
 * functions' entry and return links, and a link per USDT probe of the catalog. With
 * torch_usdt (PyTorch's USDT probes are, or are being, attached in pid) PyTorch's profiler
 * hook is left out: both report the same blocks.
 */
static int attach_module(struct attach *a, pid_t pid, struct module *mod, const char *open_path,
			 bool torch_usdt)
{
	struct attached *at;
	size_t k, nr_probes;
	int err;

	if (find(a, pid, mod))
		return 0;
	err = module__scan(mod);
	if (!err && mod->nr_wgpu_dropped && !mod->wgpu_warned) {
		/* Reading descriptors with the wrong layout would invent bytes: say so instead. */
		mod->wgpu_warned = true;
		pr_warn("%s: cannot tell which webgpu.h it was built against (%s): its %u "
			"WebGPU functions are not traced; run with --webgpu-abi=sv, sv-tier1 or "
			"cstr\n",
			mod->path, mod->wgpu.why, mod->nr_wgpu_dropped);
	}
	if (err || (!mod->nr_sites && !mod->nr_usdt_traced))
		return 0; /* not an ELF object we can read, or nothing to trace in it */
	if (vec_grow((void **)&a->v, &a->cap, a->n, sizeof(*a->v)))
		return -ENOMEM;
	torch_usdt |= has_torch_usdt(a, pid);
	nr_probes = 0;
	for (k = 0; k < mod->nr_sites; k++)
		nr_probes += !(torch_usdt && is_torch_hook(mod->sites[k].api));
	at = &a->v[a->n];
	*at = (struct attached){.pid = pid, .mod = mod, .nr_probes = nr_probes};
	err = link_multi(a, a->enter_prog, pid, open_path, mod, false, torch_usdt, &at->enter);
	if (err)
		goto fail;
	err = link_multi(a, a->exit_prog, pid, open_path, mod, true, torch_usdt, &at->exit);
	if (err)
		goto fail;
	if (mod->nr_usdt_traced) {
		at->usdt = calloc(mod->nr_usdt_traced, sizeof(*at->usdt));
		if (!at->usdt) {
			err = -ENOMEM;
			goto fail;
		}
	}
	for (k = 0; k < mod->nr_usdt; k++) {
		struct usdt_probe *u = &mod->usdt[k];
		struct bpf_link *l;

		if (!u->api)
			continue;
		l = link_usdt(a, pid, open_path, mod, u, u->api->api);
		if (l) {
			at->usdt[at->nr_usdt++] = l;
			at->nr_probes++;
		}
	}
	if (!at->nr_probes) {
		attached_destroy(at);
		return 0;
	}
	a->n++;
	pr_info("pid %d: attached %zu probes to %s (addresses from %s)\n", pid, at->nr_probes,
		mod->path, probes_source(mod, at));
	if (mod->dawn)
		pr_info("pid %d: %s: no wgpu* symbols; entry points from %s\n", pid, mod->name,
			mod->dawn->why);
	if (mod->nr_wgpu_funcs) {
		char d[128];

		pr_info("pid %d: %s: %s (%s)\n", pid, mod->name,
			wgpu_abi__describe(&mod->wgpu, d, sizeof(d)), mod->wgpu.why);
	}
	warn_slow_sites(mod);
	return 1;
fail:
	attached_destroy(at);
	pr_err("pid %d: attaching %zu probes to %s failed: %s\n", pid, mod->nr_sites, mod->path,
	       strerror(-err));
	return err;
}

int attach__scan(struct attach *a, const struct proc_maps *m, int *nr_new)
{
	int first_err = 0;
	size_t i;

	bool torch_usdt = false;

	*nr_new = 0;
	/* First, whether PyTorch's USDT probes are among the objects: then not its hook. */
	for (i = 0; i < m->n && !torch_usdt; i++) {
		const struct pmap_ent *e = &m->v[i];
		struct module *mod;

		if (!e->exec || !e->path)
			continue;
		mod = modules__get(a->mods, m->pid, e);
		if (!mod)
			return -ENOMEM;
		if (!module__scan(mod))
			torch_usdt = module__has_torch_usdt(mod);
	}
	for (i = 0; i < m->n; i++) {
		const struct pmap_ent *e = &m->v[i];
		struct module *mod;
		char open_path[96];
		int ret;

		if (!e->exec || !e->path)
			continue;
		mod = modules__get(a->mods, m->pid, e);
		if (!mod)
			return -ENOMEM;
		proc_maps__open_path(m->pid, e, open_path, sizeof(open_path));
		ret = attach_module(a, m->pid, mod, open_path, torch_usdt);
		if (ret > 0)
			(*nr_new)++;
		else if (ret < 0 && !first_err)
			first_err = ret;
	}
	return first_err;
}

int attach__code(struct attach *a, pid_t pid, uint64_t addr, unsigned int api, char *why,
		 size_t why_len)
{
	const struct pmap_ent *e;
	struct proc_maps *m = NULL;
	char open_path[96];
	unsigned long off;
	__u64 cookie = api;
	struct bpf_link *link;
	size_t i;
	int err;

	for (i = 0; i < a->nr_code; i++)
		if (a->code[i].pid == pid && a->code[i].addr == addr)
			return 0;
	err = proc_maps__load(pid, &m);
	if (err) {
		snprintf(why, why_len, "cannot read /proc/%d/maps: %s", pid, strerror(-err));
		return err;
	}
	e = proc_maps__find(m, addr);
	if (!e || !e->path || !e->exec) {
		/* uprobes live on a file's inode: JIT code and anonymous memory have none. */
		snprintf(why, why_len,
			 "0x%" PRIx64 " is not in a file-backed executable mapping "
			 "(JIT code?)",
			 addr);
		err = -ENOEXEC;
		goto cleanup;
	}
	err = vec_grow((void **)&a->code, &a->cap_code, a->nr_code, sizeof(*a->code));
	if (err)
		goto cleanup;
	off = addr - e->start + e->pgoff;
	proc_maps__open_path(pid, e, open_path, sizeof(open_path));
	link = link_one(a, a->enter_prog, pid, open_path, off, cookie, false);
	if (!link) {
		err = -errno;
		snprintf(why, why_len, "attaching to %s+0x%lx: %s", e->path, off, strerror(-err));
		goto cleanup;
	}
	a->code[a->nr_code++] = (struct code_probe){pid, addr, link};
	pr_info("pid %d: probe on code at 0x%" PRIx64 " (%s+0x%lx) as %s\n", pid, addr, e->path,
		off, cat_api_name(api));
cleanup:
	proc_maps__free(m);
	return err;
}

int attach__path(struct attach *a, pid_t pid, const char *path)
{
	struct module *mod = modules__get_path(a->mods, path);
	int ret;

	if (!mod)
		return -errno;
	ret = attach_module(a, pid, mod, path, false);
	return ret < 0 ? ret : 0;
}

bool attach__has_required(const struct attach *a, pid_t pid)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (a->v[i].pid == pid && !a->v[i].marker && a->v[i].mod->nr_required)
			return true;
	return false;
}

void attach__print_objects(const struct attach *a, pid_t pid, const struct proc_maps *m, FILE *out)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		struct module *mod =
		    proc_maps__first_exec(m, i) ? modules__get(a->mods, pid, &m->v[i]) : NULL;

		if (!mod)
			continue;
		module__scan(mod);
		if (!mod->elf)
			fprintf(out, "  %s: not readable as ELF (%s)\n", term_tmp(mod->path),
				strerror(-mod->open_err));
		else if (module__has_hidden_dawn(mod))
			fprintf(out,
				"  %s: Dawn (WebGPU) linked in without wgpu* symbols (static, "
				"stripped): its WebGPU calls cannot be traced by name\n",
				term_tmp(mod->path));
		else
			fprintf(out, "  %s: %zu traced functions%s\n", term_tmp(mod->path),
				mod->nr_required,
				elf_obj__has_symtab(mod->elf) ? "" : " (no .symtab)");
	}
}

void attach__print(const struct attach *a, FILE *out)
{
	size_t i;

	for (i = 0; i < a->n; i++) {
		fprintf(out, "pid %d: %s (%zu probes)\n", a->v[i].pid, term_tmp(a->v[i].mod->path),
			a->v[i].nr_probes);
	}
}

size_t attach__nr_links(const struct attach *a)
{
	size_t i, n = 0;

	for (i = 0; i < a->n; i++)
		n += a->v[i].enter.n + a->v[i].exit.n + a->v[i].nr_usdt;
	return n;
}

size_t attach__nr_probes(const struct attach *a, pid_t pid)
{
	size_t i, n = 0;

	for (i = 0; i < a->n; i++)
		if (!pid || a->v[i].pid == pid)
			n += a->v[i].nr_probes;
	return n;
}

size_t attach__nr_objects(const struct attach *a, pid_t pid)
{
	size_t i, n = 0;

	for (i = 0; i < a->n; i++)
		n += a->v[i].pid == pid;
	return n;
}

struct find_sym {
	const char *name;
	uint64_t vaddr;
	bool found;
};

static int find_sym_cb(const struct elf_func *f, void *ctx)
{
	struct find_sym *fs = ctx;
	size_t n = strlen(fs->name);

	if (strncmp(f->name, fs->name, n) || (f->name[n] && f->name[n] != '@'))
		return 0;
	fs->vaddr = f->vaddr;
	fs->found = true;
	return 1;
}

/*
 * The file offset of function symbol in mod: by its symbol, else by name in the Dawn proc
 * table the object's scan recovered (Dawn's entry points where it has no symbols).
 */
static int marker_offset(struct module *mod, const char *symbol, uint64_t *foff)
{
	struct find_sym fs = {.name = symbol};
	const struct dawn_proc *dp;

	elf_obj__for_each_func(mod->elf, find_sym_cb, &fs);
	if (fs.found)
		return elf_obj__vaddr_to_off(mod->elf, fs.vaddr, foff);
	module__scan(mod);
	dp = mod->dawn ? dawn_procs__find(mod->dawn, symbol) : NULL;
	return dp ? elf_obj__vaddr_to_off(mod->elf, dp->vaddr, foff) : -ESRCH;
}

static int marker_link(struct attach *a, pid_t pid, struct module *mod, const char *path,
		       uint64_t foff, unsigned int api)
{
	struct bpf_link *l;
	struct attached *at;

	if (vec_grow((void **)&a->v, &a->cap, a->n, sizeof(*a->v)))
		return -ENOMEM;
	at = &a->v[a->n];
	*at = (struct attached){
	    .pid = pid, .mod = mod, .nr_probes = 1, .marker = true, .marker_api = api};
	l = link_one(a, a->enter_prog, pid, path, foff, api, false);
	if (!l)
		return -errno;
	if (linkset_add(&at->enter, l)) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	a->n++;
	return 0;
}

/* A usdt: marker: one USDT link of probe u, every site of it in the object at path. */
static int marker_link_usdt(struct attach *a, pid_t pid, struct module *mod, const char *path,
			    struct usdt_probe *u, unsigned int api)
{
	struct attached *at;

	if (vec_grow((void **)&a->v, &a->cap, a->n, sizeof(*a->v)))
		return -ENOMEM;
	at = &a->v[a->n];
	*at = (struct attached){
	    .pid = pid, .mod = mod, .nr_probes = 1, .marker = true, .marker_api = api};
	at->usdt = calloc(1, sizeof(*at->usdt));
	if (!at->usdt)
		return -ENOMEM;
	at->usdt[0] = link_usdt(a, pid, path, mod, u, api);
	if (!at->usdt[0]) {
		int err = -errno;

		free(at->usdt);
		at->usdt = NULL;
		return err;
	}
	at->nr_usdt = 1;
	a->n++;
	return 0;
}

static bool marker_done(const struct attach *a, pid_t pid, const struct module *mod,
			unsigned int api)
{
	size_t i;

	/* Probes follow the task across exec: the same file exec'd again is covered already. */
	for (i = 0; i < a->n; i++)
		if (a->v[i].marker && a->v[i].pid == pid && a->v[i].mod == mod &&
		    a->v[i].marker_api == api)
			return true;
	return false;
}

/* FILE "*": the function in every object pid maps that has it (--step api:NAME). */
static int marker_anywhere(struct attach *a, pid_t pid, const struct proc_maps *m,
			   const char *symbol, unsigned int api)
{
	char open_path[96];
	int found = 0, err;
	size_t i;

	for (i = 0; m && i < m->n; i++) {
		const struct pmap_ent *e = &m->v[i];
		struct module *mod =
		    proc_maps__first_exec(m, i) ? modules__get(a->mods, pid, e) : NULL;
		uint64_t foff;

		if (!mod || !mod->elf || marker_offset(mod, symbol, &foff))
			continue;
		found++;
		if (marker_done(a, pid, mod, api))
			continue;
		proc_maps__open_path(pid, e, open_path, sizeof(open_path));
		err = marker_link(a, pid, mod, open_path, foff, api);
		if (err)
			return err;
	}
	return found ? 0 : -ENOENT;
}

/* A library is named by its DT_SONAME too (libfoo.so.1 for libfoo.so.1.2.3): as DT_NEEDED
 * names it, and as markers__check_exec finds it. */
static bool has_soname(struct attach *a, pid_t pid, const struct pmap_ent *e, const char *name)
{
	struct module *mod = modules__get(a->mods, pid, e);
	const struct elf_dyn *dy = mod && mod->elf ? elf_obj__dyn(mod->elf) : NULL;

	return dy && dy->soname && !strcmp(dy->soname, name);
}

int attach__marker(struct attach *a, pid_t pid, const struct proc_maps *m, const char *file,
		   const char *provider, const char *symbol, unsigned int api)
{
	struct usdt_probe *u;
	char open_path[96];
	const char *path = file;
	struct module *mod = NULL;
	uint64_t foff;
	size_t i;

	if (!strcmp(file, "*"))
		return marker_anywhere(a, pid, m, symbol, api);
	if (strchr(file, '/')) {
		mod = modules__get_path(a->mods, file);
		if (!mod)
			return errno == ENOENT ? -ESRCH : -errno;
	} else {
		for (i = 0; m && i < m->n && !mod; i++) {
			const char *b = m->v[i].path ? strrchr(m->v[i].path, '/') : NULL;

			if (m->v[i].exec && b &&
			    (!strcmp(b + 1, file) || has_soname(a, pid, &m->v[i], file))) {
				mod = modules__get(a->mods, pid, &m->v[i]);
				proc_maps__open_path(pid, &m->v[i], open_path, sizeof(open_path));
				path = open_path;
			}
		}
		if (!mod)
			return -ENOENT;
	}
	if (!mod->elf)
		return mod->open_err ? mod->open_err : -ENOEXEC;
	if (marker_done(a, pid, mod, api))
		return 0;
	if (provider) {
		module__scan(mod);
		u = (struct usdt_probe *)module__usdt(mod, provider, symbol);
		if (!u) {
			pr_err("%s: no USDT probe %s:%s (gpuleak probes --lib %s lists them)\n",
			       mod->path, provider, symbol, mod->path);
			return -ESRCH;
		}
		return marker_link_usdt(a, pid, mod, path, u, api);
	}
	if (marker_offset(mod, symbol, &foff)) {
		pr_err("%s: no function %s\n", mod->path, symbol);
		return -ESRCH;
	}
	return marker_link(a, pid, mod, path, foff, api);
}

/* One array member: sites of pid's modules whose probe sits where `place` says. */
static void placement_array(const struct attach *a, pid_t pid, FILE *f, const char *key,
			    enum probe_place place)
{
	size_t i, j, n = 0;

	fprintf(f, "\"%s\":[", key);
	for (i = 0; i < a->n; i++) {
		const struct module *m = a->v[i].mod;

		if (a->v[i].pid != pid || a->v[i].marker)
			continue;
		for (j = 0; j < m->nr_sites; j++) {
			const struct probe_site *s = &m->sites[j];

			/* The rendezvous fires once per dlopen: its cost does not matter. */
			if (s->place.place != place || s->api->op == OP_RENDEZVOUS)
				continue;
			fputs(n++ ? ",{\"api\":" : "{\"api\":", f);
			json_str(f, cat_api_name(s->api->api));
			fputs(",\"module\":", f);
			json_str(f, m->name);
			fputs(",\"insn\":", f);
			json_str(f, s->place.first);
			if (place == PLACE_MOVED)
				fprintf(f, ",\"moved_bytes\":%u", s->place.moved);
			else {
				fputs(",\"why\":", f);
				json_str(f, s->place.why);
			}
			fputc('}', f);
		}
	}
	fputc(']', f);
}

void attach__placement_json(const struct attach *a, pid_t pid, FILE *f)
{
	placement_array(a, pid, f, "slow_probe_sites", PLACE_SLOW);
	fputc(',', f);
	placement_array(a, pid, f, "moved_probe_sites", PLACE_MOVED);
}
