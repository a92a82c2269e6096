// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli/options.h"
#include "cli/probes.h"
#include "gpuleak.h"
#include "lib/exit.h"
#include "lib/infile.h"
#include "lib/log.h"
#include "lib/term.h"
#include "probe/catalog.h"
#include "probe/dawn_procs.h"
#include "probe/elf_obj.h"
#include "probe/modules.h"
#include "probe/proc_maps.h"
#include "probe/wgpu_abi.h"

static const struct argp_option probes_options[] = {
    {"pid", 'p', "PID", 0, "List the traced APIs in the objects mapped by PID", 0},
    {"lib", OPT_LIB, "PATH", 0, "List the traced APIs in the ELF file PATH", 0},
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
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (!c->lib == !c->probe_pid)
			argp_error(state, "give exactly one of -p PID or --lib PATH");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp cli_probes_argp = {.options = probes_options,
				     .parser = parse_probes,
				     .args_doc = "(-p PID | --lib PATH)",
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
		if (u->base_missing)
			fprintf(out,
				"  %s:%s in %s: its note records no .stapsdt.base, which libbpf "
				"before 1.6 misplaces (the attach fails)\n",
				prov, name, obj);
		if (u->sib)
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
			printf(" (RTTI: ErrorBuffer, TextureBase)\n");
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
static bool first_mapping(const struct proc_maps *m, size_t i)
{
	size_t j;

	if (!m->v[i].exec || !m->v[i].path)
		return false;
	for (j = 0; j < i; j++)
		if (m->v[j].path && m->v[j].dev == m->v[i].dev && m->v[j].ino == m->v[i].ino &&
		    m->v[j].exec)
			return false;
	return true;
}

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
	size_t i;

	err = proc_maps__load(pid, &m);
	if (err) {
		fprintf(stderr, "gpuleak: %s: %d\n",
			err == -ESRCH ? "no such process" : strerror(-err), pid);
		return err;
	}
	for (i = 0; i < m->n; i++) {
		struct module *mod;

		if (!first_mapping(m, i))
			continue;
		mod = modules__get(mods, pid, &m->v[i]);
		if (!mod) {
			found = -ENOMEM;
			goto cleanup;
		}
		found += print_module(mod, header);
	}
	for (i = 0; i < m->n; i++) {
		struct module *mod = first_mapping(m, i) ? modules__get(mods, pid, &m->v[i]) : NULL;

		if (mod) {
			print_placement(mod, stdout);
			print_wgpu_abi(mod);
		}
	}
	for (i = 0; i < m->n; i++) {
		struct module *mod = first_mapping(m, i) ? modules__get(mods, pid, &m->v[i]) : NULL;

		if (mod && mod->nr_usdt) {
			if (*header && !usdt_header)
				putchar('\n');
			print_usdt(mod, &usdt_header, stdout);
		}
	}
	for (i = 0; i < m->n; i++) {
		struct module *mod = first_mapping(m, i) ? modules__get(mods, pid, &m->v[i]) : NULL;

		if (mod && mod->nr_usdt)
			print_usdt_args(mod, stdout);
		usdt_torch |= mod && module__has_torch_usdt(mod);
	}
	/* The hook reports the blocks the probes report: attach leaves it out (docs/pytorch.md). */
	for (i = 0; usdt_torch && i < m->n; i++) {
		struct module *mod = first_mapping(m, i) ? modules__get(mods, pid, &m->v[i]) : NULL;
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

int probes__run(const struct cli *c)
{
	struct modules *mods = NULL;
	bool header = false;
	int found, err;

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
	if (!found) {
		fprintf(stderr,
			"gpuleak: no traced GPU allocation API nor USDT probe found in %s\n",
			c->lib ? c->lib : "the process's mapped objects");
		err = -ENOENT;
	}
cleanup:
	modules__free(mods);
	return err ? GL_EXIT_ERROR : GL_EXIT_OK;
}
