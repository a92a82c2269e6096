/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * WebGPU knowledge that is not a probe: which webgpu.h generation an object was built
 * against (told from its symbols, or configured), and what a descriptor copied at entry
 * means in bytes (buffer size; texture size from extent, format, mips and samples).
 *
 * The generations that matter to gpuleak (webgpu-headers history):
 *   before 2024-09  char const * labels, 32-bit usage flags, wgpu*Reference   (WGPU_ABI_CSTR)
 *   2024-10 ...     WGPUStringView labels, 64-bit usage flags, wgpu*AddRef    (WGPU_ABI_SV)
 *   2025-07 ...     texture formats renumbered by texture-formats-tier1      (a format table)
 * September 2024 (AddRef already, labels still char const *) has no marker: such objects
 * need --webgpu-abi.
 */
#ifndef GPULEAK_PROBE_WGPU_ABI_H
#define GPULEAK_PROBE_WGPU_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum wgpu_labels {
	WGPU_LABELS_UNKNOWN = 0,
	WGPU_LABELS_SV,	  /* WGPUStringView labels, 64-bit usage flags */
	WGPU_LABELS_CSTR, /* char const * labels, 32-bit usage flags */
};

enum wgpu_formats {
	WGPU_FORMATS_UNKNOWN = 0,
	WGPU_FORMATS_PRE_TIER1, /* RGBA8Unorm = 0x12 (webgpu-headers 2022 .. 2025-06) */
	WGPU_FORMATS_TIER1,	/* RGBA8Unorm = 0x16 (since 2025-07) */
};

/* The webgpu.h generation of one object, and why gpuleak believes it. */
struct wgpu_abi {
	enum wgpu_labels labels;
	enum wgpu_formats formats;
	bool configured; /* from --webgpu-abi, not detected */
	char why[192];	 /* the evidence, for -v and `gpuleak probes` */
};

/* Markers seen while walking an object's symbols (wgpu_abi__note), then judged. */
struct wgpu_marks {
	unsigned int wgpu_funcs;  /* wgpu* functions defined */
	unsigned int sv_labels;	  /* dawn::native *SetLabel(..., WGPUStringView) */
	unsigned int cstr_labels; /* dawn::native *SetLabel(..., char const *) */
	const char *after_sv;	  /* a function webgpu.h gained after WGPUStringView */
	const char *reference;	  /* wgpu*Reference: the names before AddRef */
	const char *addref;
	const char *tier1;     /* a function added after the format renumbering */
	const char *pre_tier1; /* a function removed before the format renumbering */
};

/* Look at one symbol name; cheap for names that are neither wgpu* nor Dawn's. */
void wgpu_abi__note(struct wgpu_marks *m, const char *name);
/* Judge the markers. A configured generation (--webgpu-abi) wins but keeps the evidence. */
void wgpu_abi__judge(const struct wgpu_marks *m, const struct wgpu_abi *configured,
		     struct wgpu_abi *out);
/* "sv", "sv-tier1", "cstr": --webgpu-abi values. 0 or -EINVAL. */
int wgpu_abi__parse(const char *s, struct wgpu_abi *out);
/* "webgpu.h with WGPUStringView labels, texture formats before tier1" and the like. */
const char *wgpu_abi__describe(const struct wgpu_abi *a, char *buf, size_t len);

/* A descriptor copied at entry, decoded. */
struct wgpu_desc {
	uint64_t bytes; /* memory the object holds, 0 when unknown */
	uint64_t usage;
	uint32_t format;     /* textures: the raw enum value */
	bool unknown_format; /* a texture format gpuleak has no size for: bytes is 0 */
};

/* Bytes of a texture: every mip level's extent x the format's block bytes x samples. */
int wgpu_texture_bytes(enum wgpu_formats table, uint32_t format, uint32_t dimension, uint32_t width,
		       uint32_t height, uint32_t depth, uint32_t mips, uint32_t samples,
		       uint64_t *bytes);
/* The format's name ("RGBA8Unorm") under a numbering, or NULL. */
const char *wgpu_format_name(enum wgpu_formats table, uint32_t format);

/* Decoders the probe catalog points at: (desc, valid length) -> out. 0 or -EINVAL. */
int wgpu_decode_buffer_sv(const uint8_t *desc, size_t len, struct wgpu_desc *out);
int wgpu_decode_buffer_cstr(const uint8_t *desc, size_t len, struct wgpu_desc *out);
int wgpu_decode_texture_sv(const uint8_t *desc, size_t len, struct wgpu_desc *out);
int wgpu_decode_texture_sv_tier1(const uint8_t *desc, size_t len, struct wgpu_desc *out);
int wgpu_decode_texture_sv_unknown(const uint8_t *desc, size_t len, struct wgpu_desc *out);
int wgpu_decode_texture_cstr(const uint8_t *desc, size_t len, struct wgpu_desc *out);

#endif
