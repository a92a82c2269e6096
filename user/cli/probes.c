// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/options.h"
#include "cli/probes.h"
#include "gpuleak.h"
#include "lib/exit.h"
#include "lib/infile.h"
#include "lib/log.h"
#include "lib/term.h"
#include "live/bpf_setup.h"
#include "live/kernel.h"
#include "live/process.h"
#include "probe/catalog.h"
#include "probe/dawn_procs.h"
#include "probe/elf_obj.h"
#include "probe/modules.h"
#include "probe/proc_maps.h"
#include "probe/wgpu_abi.h"

static const struct argp_option probes_options[] = {
    {"pid", 'p', "PID", 0, "List the traced APIs in the objects mapped by PID", 0},
    {"lib", OPT_LIB, "PATH", 0, "List the traced APIs in the ELF file PATH", 0},
    {"kernel", OPT_KERNEL, "json", OPTION_ARG_OPTIONAL,
     "What this kernel offers gpuleak (BTF, uprobe_multi, bpf_loop, private stacks, ring "
     "buffer, tracefs, lockdown, perf_event_paranoid, ...) and what gpuleak does on it: "
     "a table, or one JSON object with --kernel=json",
     0},
    {"verifier", OPT_VERIFIER, NULL, 0,
     "With --kernel: load every BPF program with each combination of the options that change "
     "its code (--python-depth, --stack-depth, --unwind, --follow, watch's OOM trigger) and "
     "print the stack each needs as the verifier counts it; exit 1 if one is refused or needs "
     "more than 512 bytes (the limit without private stacks)",
     0},
    {"bpf-object", OPT_BPF_OBJECT, "FILE", 0,
     "With --verifier: load FILE, another build of gpuleak's bpf/gpuleak.bpf.c, instead of "
     "the object built in; its .rodata and .bss must be laid out alike",
     0},
    {},
};

static const char probes_doc[] =
    "List the traced APIs found in a process or a file: name, family, file offset of the "
    "probe, binding (global: .dynsym, local: .symtab, table: Dawn's proc table, read from an "
    "object without wgpu* symbols), where the probe sits (entry; entry+N: moved past a first "
    "instruction the "
    "kernel single-steps; slow: single-stepped, could not be moved; refused) and object, "
    "then why each probe not at a plain entry is where it is; then the USDT probes of each "
    "object (.note.stapsdt): provider:name, the API gpuleak traces it as (or - : usable by "
    "--step usdt:), its sites, its semaphore and its arguments. Attaches nothing.\v"
    "EXAMPLES:\n"
    "  gpuleak probes -p 4242\n"
    "  gpuleak probes --lib /usr/local/cuda/lib64/libcudart.so.13\n"
    "  sudo gpuleak probes --kernel\n"
    "  sudo gpuleak probes --kernel=json --verifier\n"
    "\n"
    "EXIT STATUS: 0 found, 1 nothing traceable or runtime error, 2 usage error.";

static const struct argp_child probes_children[] = {
    {&cli_probing_argp, 0, NULL, 0},
    {&cli_common_argp, 0, NULL, 0},
    {},
};

static error_t parse_probes(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		cli__init_children(state, probes_children);
		break;
	case 'p':
		cli__parse_pid(arg, state, &c->probe_pid);
		break;
	case OPT_LIB:
		c->lib = arg;
		break;
	case OPT_KERNEL:
		if (arg && strcmp(arg, "json"))
			argp_error(state, "invalid --kernel='%s' (only --kernel=json)", arg);
		c->kernel = true;
		c->kernel_json = arg != NULL;
		break;
	case OPT_VERIFIER:
		c->verifier = true;
		break;
	case OPT_BPF_OBJECT:
		c->bpf_object = arg;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if ((c->verifier || c->bpf_object) && !c->kernel)
			argp_error(state, "--verifier and --bpf-object go with --kernel");
		if (c->bpf_object && !c->verifier)
			argp_error(state, "--bpf-object goes with --verifier");
		if (c->kernel && (c->lib || c->probe_pid))
			argp_error(state,
				   "--kernel lists the kernel's features, not a process's or "
				   "a file's probes: give it alone");
		if (!c->kernel && !c->lib == !c->probe_pid)
			argp_error(state, "give exactly one of -p PID, --lib PATH or --kernel");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp cli_probes_argp = {.options = probes_options,
				     .parser = parse_probes,
				     .args_doc =
					 "(-p PID | --lib PATH | --kernel[=json] [--verifier])",
				     .doc = probes_doc,
				     .children = probes_children};

/* The probe sites of one module, a table row each. */
static void print_sites(const struct module *m, FILE *out)
{
	size_t i;

	for (i = 0; i < m->nr_sites; i++) {
		const struct probe_site *s = &m->sites[i];
		char probe[16];

		if (s->place.place == PLACE_MOVED)
			snprintf(probe, sizeof(probe), "entry+%u", s->place.moved);
		else
			snprintf(probe, sizeof(probe), "%s",
				 s->place.place == PLACE_SLOW	   ? "slow"
				 : s->place.place == PLACE_REFUSED ? "refused"
								   : "entry");
		fprintf(out, "%-32s %-7s 0x%-10" PRIx64 " %-6s %-8s %s\n",
			cat_api_name(s->api->api), cat_family_name(GL_API_FAMILY(s->api->api)),
			s->offset,
			s->source == SITE_DAWN_PROCS ? "table"
			: s->local		     ? "local"
						     : "global",
			probe, term_tmp(m->path));
	}
}

/* One line per probe moved past its entry, or left on a slow or refused instruction. */
static void print_placement(const struct module *m, FILE *out)
{
	size_t i;

	/* Indented: not table rows, nor the path-prefixed lines about the whole object. */
	for (i = 0; i < m->nr_sites; i++) {
		const struct probe_site *s = &m->sites[i];
		const char *api = cat_api_name(s->api->api);

		if (s->place.place == PLACE_MOVED)
			fprintf(out,
				"  %s in %s: probe moved %u bytes past its entry's %s, "
				"which the kernel single-steps; what it skips changes no argument, "
				"no stack or frame pointer, no memory\n",
				api, term_tmp(m->name), s->place.moved, s->place.first);
		else if (s->place.place == PLACE_SLOW)
			fprintf(out,
				"  %s in %s: probe on %s, which the kernel single-steps "
				"(~20 us per call on a VM), not moved: %s\n",
				api, term_tmp(m->name), s->place.first, s->place.why);
		else if (s->place.place == PLACE_REFUSED)
			fprintf(out,
				"  %s in %s: the kernel refuses a probe on %s, not traced: "
				"%s\n",
				api, term_tmp(m->name), s->place.first, s->place.why);
	}
}

/* USDT probes of one module, a table row each (the header once, before the first). */
static void print_usdt(const struct module *m, bool *header, FILE *out)
{
	size_t i;

	for (i = 0; i < m->nr_usdt; i++) {
		const struct usdt_probe *u = &m->usdt[i];
		char name[96], sema[24];

		if (!*header) {
			fprintf(out, "%-32s %-24s %5s %-12s %s\n", "USDT PROBE", "TRACED AS",
				"SITES", "SEMAPHORE", "OBJECT");
			*header = true;
		}
		snprintf(name, sizeof(name), "%s:%s", term_tmp(u->provider), term_tmp(u->name));
		if (u->sema_vaddr)
			snprintf(sema, sizeof(sema), "0x%" PRIx64, u->sema_vaddr);
		else
			snprintf(sema, sizeof(sema), "none");
		fprintf(out, "%-32s %-24s %5u %-12s %s\n", name,
			u->api ? cat_api_name(u->api->api) : "-", u->nr_sites, sema,
			term_tmp(m->path));
	}
}

/*
 * After the USDT table: each probe's arguments (named where the catalog knows them) and what
 * libbpf may refuse, indented like the placement lines.
 */
static void print_usdt_args(const struct module *m, FILE *out)
{
	size_t i;

	for (i = 0; i < m->nr_usdt; i++) {
		const struct usdt_probe *u = &m->usdt[i];
		const char *meaning = u->api ? u->api->args : NULL, *spec = term_tmp(u->args);
		/* The note's strings are the target's; escaped, a spec still has no space. */
		const char *prov = term_tmp(u->provider), *name = term_tmp(u->name);
		const char *obj = term_tmp(m->name);

		fprintf(out, "  %s:%s in %s: arguments", prov, name, obj);
		if (!*spec)
			fputs(" none", out);
		/* Each spec with the catalog's name for it: "ptr=8@%rax device=-1@%bl" */
		while (*spec) {
			size_t n = strcspn(spec, " "), k = meaning ? strcspn(meaning, ",") : 0;

			if (meaning && *meaning)
				fprintf(out, " %.*s=%.*s", (int)k, meaning, (int)n, spec);
			else
				fprintf(out, " %.*s", (int)n, spec);
			spec += n;
			spec += strspn(spec, " ");
			if (meaning && *meaning) {
				meaning += k;
				meaning += strspn(meaning, ", ");
			}
		}
		if (u->args_differ)
			fputs(" (the first site's; its sites differ)", out);
		fputc('\n', out);
		/* Only where the libbpf linked is older than the one the build fetches. */
		if (u->base_missing && bpf_setup__libbpf_older(1, 6))
			fprintf(out,
				"  %s:%s in %s: its note records no .stapsdt.base, which libbpf "
				"before 1.6 misplaces (the attach fails)\n",
				prov, name, obj);
		if (u->sib && bpf_setup__libbpf_older(1, 7))
			fprintf(
			    out,
			    "  %s:%s in %s: an argument is base+index*scale, which libbpf before "
			    "1.7 cannot read (the attach fails)\n",
			    prov, name, obj);
	}
}

static int print_module(struct module *m, bool *header)
{
	int err = module__scan(m);

	if (err && gl_verbosity)
		fprintf(stderr, "%s: not readable as ELF: %s\n", term_tmp(m->path), strerror(-err));
	/* Bad input is said even without -v: the object was not read for Dawn's table. */
	if (m->dawn_err == -EINVAL)
		fprintf(stderr, "%s: malformed, Dawn's proc table not read: %s\n",
			term_tmp(m->path), m->dawn_why);
	if (!m->nr_sites) {
		if (gl_verbosity && !err && !m->nr_usdt)
			fprintf(stderr, "%s: no traced APIs\n", term_tmp(m->path));
		return (int)m->nr_usdt;
	}
	if (!*header) {
		printf("%-32s %-7s %-12s %-6s %-8s %s\n", "API", "FAMILY", "OFFSET", "BIND",
		       "PROBE", "OBJECT");
		*header = true;
	}
	print_sites(m, stdout);
	/* Its USDT probes count too: each is a step or request marker (--step usdt:). */
	return (int)(m->nr_required + m->nr_usdt);
}

/* After the table: the webgpu.h generation of each WebGPU object, and why. */
static void print_wgpu_abi(struct module *m)
{
	char d[128];

	if (!m->nr_wgpu_funcs)
		return;
	if (m->dawn) {
		printf("%s: no wgpu* symbols; entry points from %s\n", term_tmp(m->path),
		       m->dawn->why);
		if (m->dawn->nr_error_vptr) {
			printf("%s: error objects told by their class: vtables at",
			       term_tmp(m->path));
			for (size_t i = 0; i < m->dawn->nr_error_vptr; i++)
				printf(" 0x%" PRIx64, m->dawn->error_vptr[i]);
			/* The classes as the object's RTTI names them, in the vtables' order. */
			printf(" (RTTI:");
			for (size_t i = 0; i < m->dawn->nr_error_vptr; i++) {
				char c[64];

				dawn_procs__class_name(m->dawn->error_class[i], c, sizeof(c));
				printf("%s %s", i ? "," : "", c);
			}
			printf(")\n");
		} else {
			printf("%s: error objects told by their reference count word (no RTTI for "
			       "Dawn's error classes)\n",
			       term_tmp(m->path));
		}
		/* -v: the whole table, for a user checking what else Dawn exports there. */
		for (size_t i = 0; gl_verbosity && i < m->dawn->n; i++) {
			const struct dawn_proc *p = &m->dawn->v[i];
			uint64_t off = 0;

			elf_obj__vaddr_to_off(m->elf, p->vaddr, &off);
			printf("  %-52s 0x%-10" PRIx64 " %s%s\n", p->name, off,
			       dawn_procs__how(p->how), p->shared > 1 ? ", folded" : "");
		}
	}
	printf("%s: %s (%s)\n", term_tmp(m->path), wgpu_abi__describe(&m->wgpu, d, sizeof(d)),
	       m->wgpu.why);
	if (m->nr_wgpu_dropped)
		printf("%s: %u WebGPU functions not traced: generation unknown (--webgpu-abi)\n",
		       term_tmp(m->path), m->nr_wgpu_dropped);
}

/* --lib PATH: returns how many required APIs it has, or -errno said on stderr. */
static int probe_lib(struct modules *mods, const char *path, bool *header)
{
	struct module *mod;
	char why[256];
	int found, fd;

	/* What the path is, in words, before it is taken for a library (a directory, a FIFO). */
	found = infile__open(path, &fd, NULL, why, sizeof(why));
	if (found) {
		fprintf(stderr, "gpuleak: %s: %s\n", path, why);
		return found;
	}
	close(fd);
	mod = modules__get_path(mods, path);
	if (!mod) {
		found = -errno;
		fprintf(stderr, "gpuleak: %s: %s\n", path, strerror(-found));
		return found;
	}
	if (!mod->elf) {
		fprintf(stderr, "gpuleak: %s: not an ELF object (%s)\n", path,
			strerror(-mod->open_err));
		return mod->open_err;
	}
	found = print_module(mod, header);
	print_placement(mod, stdout);
	print_wgpu_abi(mod);
	if (mod->nr_usdt) {
		bool uh = false;

		if (*header)
			putchar('\n');
		print_usdt(mod, &uh, stdout);
		print_usdt_args(mod, stdout);
	}
	if (!found && module__has_hidden_dawn(mod))
		fprintf(stderr,
			"gpuleak: %s has Dawn (WebGPU) linked in but no wgpu* "
			"symbols (static and stripped): its WebGPU calls cannot be traced by "
			"name\n",
			path);
	return found;
}

/* Whether m->v[i] is an executable mapping of a file no earlier one maps: each object once. */
static const struct probe_site *torch_hook(const struct module *m)
{
	size_t i;

	for (i = 0; i < m->nr_sites; i++)
		if (GL_API_FAMILY(m->sites[i].api->api) == GL_FAM_PYTORCH)
			return &m->sites[i];
	return NULL;
}

/* -p PID: the table over every object it maps, then each one's placements. Returns how
 * many required APIs they have, or -errno said on stderr. */
static int probe_pid(struct modules *mods, pid_t pid, bool *header)
{
	bool usdt_header = false, usdt_torch = false;
	struct proc_maps *m = NULL;
	int found = 0, err;
	char why[512] = "";
	size_t i;

	/* What is wrong with the pid (gone, a kernel thread, another user's), said as attach
	 * says it, before its maps are read. */
	err = process__check_target(pid, why, sizeof(why));
	if (!err)
		err = proc_maps__load(pid, &m);
	if (err) {
		if (!why[0])
			snprintf(why, sizeof(why), "pid %d: cannot read its memory maps: %s", pid,
				 strerror(-err));
		pr_err("%s\n", why);
		return err;
	}
	for (i = 0; i < m->n; i++) {
		struct module *mod;

		if (!proc_maps__first_exec(m, i))
			continue;
		mod = modules__get(mods, pid, &m->v[i]);
		if (!mod) {
			found = -ENOMEM;
			goto cleanup;
		}
		found += print_module(mod, header);
	}
	for (i = 0; i < m->n; i++) {
		struct module *mod =
		    proc_maps__first_exec(m, i) ? modules__get(mods, pid, &m->v[i]) : NULL;

		if (mod) {
			print_placement(mod, stdout);
			print_wgpu_abi(mod);
		}
	}
	for (i = 0; i < m->n; i++) {
		struct module *mod =
		    proc_maps__first_exec(m, i) ? modules__get(mods, pid, &m->v[i]) : NULL;

		if (mod && mod->nr_usdt) {
			if (*header && !usdt_header)
				putchar('\n');
			print_usdt(mod, &usdt_header, stdout);
		}
	}
	for (i = 0; i < m->n; i++) {
		struct module *mod =
		    proc_maps__first_exec(m, i) ? modules__get(mods, pid, &m->v[i]) : NULL;

		if (mod && mod->nr_usdt)
			print_usdt_args(mod, stdout);
		usdt_torch |= mod && module__has_torch_usdt(mod);
	}
	/* The hook reports the blocks the probes report: attach leaves it out (docs/pytorch.md). */
	for (i = 0; usdt_torch && i < m->n; i++) {
		struct module *mod =
		    proc_maps__first_exec(m, i) ? modules__get(mods, pid, &m->v[i]) : NULL;
		const struct probe_site *h = mod ? torch_hook(mod) : NULL;

		if (h)
			printf("  %s in %s: not attached in this process: PyTorch's USDT probes "
			       "report "
			       "the same blocks\n",
			       cat_api_name(h->api->api), term_tmp(mod->name));
	}
cleanup:
	proc_maps__free(m);
	return found;
}

/* One configuration of the BPF object that changes the code the verifier sees. */
struct verifier_case {
	unsigned int python_depth, stack_depth, unwind_bytes;
	bool follow, oom_kill;
	bool adaptive; /* --unwind auto: the copy only where the walk met code without FP */
	bool budget;   /* --max-overhead: the programs look up each process's level */
	bool lazy;     /* as a session loads it: the Python walk left for later (tail calls) */
};

static const struct verifier_case verifier_cases[] = {
    /* the defaults of run/attach (--unwind auto) */
    {32, 32, 16 << 10, false, false, true, false, false},
    /* --unwind fp */
    {32, 32, 0, false, false, false, false, false},
    /* no stacks, no Python: the shortest paths */
    {0, 0, 0, false, false, false, false, false},
    /* Python frames without native stacks */
    {GL_PY_DEPTH_MAX, 0, 0, false, false, false, false, false},
    /* native stacks copied at every allocation (--unwind dwarf), without Python frames; with
     * them and the walk judged for a copy (auto), the longest paths */
    {0, GL_STACK_DEPTH_MAX, GL_USTACK_MAX, false, false, false, false, false},
    {GL_PY_DEPTH_MAX, GL_STACK_DEPTH_MAX, GL_USTACK_MAX, false, false, true, false, false},
    /* --follow and watch's OOM-killer trigger add their programs' paths */
    {0, 0, 0, true, true, false, false, false},
    /* --max-overhead's level lookups on the longest paths */
    {GL_PY_DEPTH_MAX, GL_STACK_DEPTH_MAX, GL_USTACK_MAX, true, true, true, true, false},
    /* the defaults as a session starts: without the walk, its tail calls in place */
    {32, 32, 16 << 10, false, false, true, false, true},
};

#define VERIFIER_STACK_MAX 512

/*
 * Loads program i (0-based) of the object alone in one configuration, its statistics into *st.
 * 0; 1 when the object has no program i; -1 when nothing could be loaded (said).
 */
static int verify_prog(const struct verifier_case *vc, const struct kernel_features *k,
		       const void *obj, size_t obj_size, int i, struct bpf_setup_prog_stats *out)
{
	const struct bpf_setup_prog_stats *st;
	struct bpf_setup *b = NULL;
	size_t n;
	int err;

	err = bpf_setup__new(&(struct bpf_setup_opts){.ringbuf_bytes = 1 << 20,
						      .stack_depth = vc->stack_depth,
						      .stack_entries = 16,
						      .python_depth = vc->python_depth,
						      .python_lazy = vc->lazy,
						      .unwind_bytes = vc->unwind_bytes,
						      .unwind_adaptive = vc->adaptive,
						      .follow = vc->follow,
						      .oom_kill = vc->oom_kill,
						      .budget = vc->budget,
						      .quiet = true,
						      .verifier_stats = true,
						      .only_prog = i + 1,
						      .kf = k,
						      .object = obj,
						      .object_size = obj_size},
			     &b);
	if (!b) {
		/* Refused before any program was loaded (below the floor, no object). */
		pr_err("cannot load the BPF object: %s\n", strerror(-err));
		return -1;
	}
	n = bpf_setup__prog_stats(b, &st);
	if ((size_t)i < n)
		*out = st[i];
	bpf_setup__free(b);
	return (size_t)i < n ? 0 : 1;
}

/* Each program of the object in one configuration, a line each. Returns the failures. */
static int verify_case(const struct verifier_case *vc, const struct kernel_features *k,
		       const void *obj, size_t obj_size, bool json, bool first, FILE *out)
{
	struct bpf_setup_prog_stats st[BPF_SETUP_MAX_PROGS];
	size_t i, n = 0;
	int rc, bad = 0;

	for (n = 0; n < BPF_SETUP_MAX_PROGS; n++) {
		rc = verify_prog(vc, k, obj, obj_size, (int)n, &st[n]);
		if (rc < 0)
			return 1;
		if (rc)
			break;
	}
	if (json)
		fprintf(out,
			"%s{\"python_depth\":%u,\"stack_depth\":%u,\"unwind_bytes\":%u,"
			"\"unwind\":\"%s\",\"follow\":%s,\"oom_kill\":%s,\"budget\":%s,"
			"\"python_later\":%s,\"programs\":[",
			first ? "" : ",", vc->python_depth, vc->stack_depth, vc->unwind_bytes,
			vc->unwind_bytes ? (vc->adaptive ? "auto" : "dwarf") : "fp",
			vc->follow ? "true" : "false", vc->oom_kill ? "true" : "false",
			vc->budget ? "true" : "false", vc->lazy ? "true" : "false");
	else
		fprintf(out, "--python-depth %u --stack-depth %u --unwind %s%s%s%s:\n",
			vc->python_depth, vc->stack_depth,
			vc->unwind_bytes ? (vc->adaptive ? "auto" : "dwarf") : "fp",
			vc->follow ? " --follow, watch's OOM-killer trigger" : "",
			vc->budget ? ", --max-overhead" : "",
			vc->lazy ? ", as a session starts (the Python walk loaded later)" : "");
	for (i = 0; i < n; i++) {
		bool ok = st[i].ok && st[i].combined >= 0 && st[i].combined <= VERIFIER_STACK_MAX;

		if (!st[i].loaded)
			continue;
		bad += !ok;
		if (json) {
			fprintf(out,
				"%s{\"name\":\"%s\",\"loaded\":%s,\"too_large\":%s,"
				"\"frames\":%d,\"stack\":%d,\"insns\":%d,\"ok\":%s}",
				i ? "," : "", st[i].name, st[i].ok ? "true" : "false",
				st[i].too_large ? "true" : "false", st[i].frames, st[i].combined,
				st[i].insns, ok ? "true" : "false");
			continue;
		}
		fprintf(out, "  %-16s %s stack %4d of %d bytes (%d frame%s), %d insns%s\n",
			st[i].name, st[i].ok ? "loaded " : "REFUSED", st[i].combined,
			VERIFIER_STACK_MAX, st[i].frames, st[i].frames == 1 ? "" : "s", st[i].insns,
			ok ? "" : "  <- over the limit or refused");
	}
	if (json)
		fputs("]}", out);
	return bad;
}

/* probes --kernel [--verifier]: the table (or JSON), then each configuration's stacks. */
static int probe_kernel(const struct cli *c)
{
	struct kernel_features k;
	char *obj = NULL;
	size_t i, obj_size = 0;
	int bad = 0, fd, err;

	kernel__probe(&k);
	if (!c->verifier) {
		kernel__print(&k, stdout, c->kernel_json);
		return kernel__below_floor(&k) == KF_MAX ? GL_EXIT_OK : GL_EXIT_ERROR;
	}
	if (c->bpf_object) {
		char why[256];

		err = infile__open(c->bpf_object, &fd, NULL, why, sizeof(why));
		if (err) {
			pr_err("%s: %s\n", c->bpf_object, why);
			return GL_EXIT_ERROR;
		}
		err = infile__read_all(fd, 64 << 20, &obj, &obj_size);
		close(fd);
		if (!err)
			err = bpf_setup__check_object(obj, obj_size, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "%s", strerror(-err));
		if (err) {
			pr_err("%s: %s\n", c->bpf_object, why);
			free(obj);
			return GL_EXIT_ERROR;
		}
	}
	if (c->kernel_json) {
		fputs("{\"kernel\":", stdout);
		kernel__print(&k, stdout, true);
		fputs(",\"verifier\":[", stdout);
	} else {
		kernel__print(&k, stdout, false);
		printf("\nverifier (stack as counted without private stacks: each frame rounded "
		       "up to 32 bytes, along the program's deepest chain of calls):\n");
	}
	for (i = 0; i < sizeof(verifier_cases) / sizeof(verifier_cases[0]); i++)
		bad +=
		    verify_case(&verifier_cases[i], &k, obj, obj_size, c->kernel_json, !i, stdout);
	if (c->kernel_json)
		printf("],\"failed\":%d}\n", bad);
	else
		printf("%d program load%s refused or over %d bytes\n", bad, bad == 1 ? "" : "s",
		       VERIFIER_STACK_MAX);
	free(obj);
	return bad ? GL_EXIT_ERROR : GL_EXIT_OK;
}

int probes__run(const struct cli *c)
{
	struct modules *mods = NULL;
	bool header = false;
	int found, err;

	if (c->kernel)
		return probe_kernel(c);
	err = modules__new(&mods);
	if (err)
		goto cleanup;
	modules__set_wgpu_abi(mods, &c->t.webgpu_abi);
	modules__move_probes(mods, !c->t.probe_at_entry);
	modules__dawn_procs_only(mods, c->t.dawn_procs);
	found = c->lib ? probe_lib(mods, c->lib, &header) : probe_pid(mods, c->probe_pid, &header);
	if (found < 0) {
		err = found;
		goto cleanup;
	}
	if (!found && c->lib) {
		pr_err("no traced GPU allocation API nor USDT probe found in %s\n", c->lib);
		err = -ENOENT;
	} else if (!found) {
		char comm[64];

		process__comm(c->probe_pid, comm, sizeof(comm));
		pr_err("pid %d (%s): no traced GPU allocation API nor USDT probe in the objects it "
		       "maps (no CUDA, NCCL, WebGPU or PyTorch library loaded yet?)\n",
		       c->probe_pid, term_tmp(comm));
		err = -ENOENT;
	}
cleanup:
	modules__free(mods);
	return err ? GL_EXIT_ERROR : GL_EXIT_OK;
}
