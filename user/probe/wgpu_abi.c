// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "probe/wgpu_abi.h"

/* ---- which webgpu.h an object was built against ---- */

static bool is_one_of(const char *name, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(name, *list))
			return true;
	return false;
}

/* Functions webgpu-headers added well after the WGPUStringView change of 2024-10-01. */
static const char *const after_sv[] = {
    "wgpuBufferReadMappedRange",
    "wgpuBufferWriteMappedRange",
    "wgpuSupportedWGSLLanguageFeaturesFreeMembers",
    NULL,
};

/*
 * Texture formats were renumbered on 2025-07-08 (texture-formats-tier1). These functions
 * came later (2025-12 and 2026-05; Dawn's own name for the immediates before that was
 * SetImmediateData)...
 */
static const char *const tier1[] = {
    "wgpuTextureGetTextureBindingViewDimension",
    "wgpuComputePassEncoderSetImmediates",
    "wgpuRenderPassEncoderSetImmediates",
    NULL,
};

/* ... and these were gone before (2025-05, instance capabilities became features/limits). */
static const char *const pre_tier1[] = {
    "wgpuGetInstanceCapabilities",
    "wgpuComputePassEncoderSetImmediateData",
    NULL,
};

void wgpu_abi__note(struct wgpu_marks *m, const char *name)
{
	size_t n;

	if (!strncmp(name, "wgpu", 4)) {
		m->wgpu_funcs++;
		n = strlen(name);
		/* wgpuRenderPassEncoderSetStencilReference is in every generation. */
		if (n > 9 && !strcmp(name + n - 9, "Reference") && !m->reference &&
		    strcmp(name, "wgpuRenderPassEncoderSetStencilReference"))
			m->reference = name;
		else if (n > 6 && !strcmp(name + n - 6, "AddRef") && !m->addref)
			m->addref = name;
		if (!m->after_sv && is_one_of(name, after_sv))
			m->after_sv = name;
		if (!m->tier1 && is_one_of(name, tier1))
			m->tier1 = name;
		if (!m->pre_tier1 && is_one_of(name, pre_tier1))
			m->pre_tier1 = name;
		return;
	}
	/*
	 * Dawn's C++ entry points carry their parameter types in the mangled name:
	 * dawn::native::NativeBufferSetLabel(WGPUBufferImpl*, WGPUStringView) is
	 * _ZN4dawn6native20NativeBufferSetLabelEP14WGPUBufferImpl14WGPUStringView,
	 * the char const * version ends in PKc.
	 */
	if (strncmp(name, "_ZN4dawn", 8) || !strstr(name, "SetLabelE"))
		return;
	n = strlen(name);
	if (strstr(name, "14WGPUStringView"))
		m->sv_labels++;
	else if (n > 3 && !strcmp(name + n - 3, "PKc"))
		m->cstr_labels++;
}

void wgpu_abi__judge(const struct wgpu_marks *m, const struct wgpu_abi *configured,
		     struct wgpu_abi *out)
{
	char labels[96] = "", formats[96] = "";

	memset(out, 0, sizeof(*out));
	if (m->sv_labels && !m->cstr_labels) {
		out->labels = WGPU_LABELS_SV;
		snprintf(labels, sizeof(labels), "Dawn's SetLabel takes a WGPUStringView");
	} else if (m->cstr_labels && !m->sv_labels && m->reference && !m->addref) {
		out->labels = WGPU_LABELS_CSTR;
		snprintf(labels, sizeof(labels), "Dawn's SetLabel takes char const *, %s",
			 m->reference);
	} else if (!m->sv_labels && !m->cstr_labels && m->after_sv && !m->reference) {
		out->labels = WGPU_LABELS_SV;
		snprintf(labels, sizeof(labels), "%s (after WGPUStringView)", m->after_sv);
	} else if (!m->sv_labels && !m->cstr_labels && m->reference && !m->addref && !m->after_sv) {
		out->labels = WGPU_LABELS_CSTR;
		snprintf(labels, sizeof(labels), "%s (before AddRef and WGPUStringView)",
			 m->reference);
	} else {
		snprintf(labels, sizeof(labels), "label type not determined");
	}
	if (out->labels == WGPU_LABELS_CSTR) {
		/* Before 2024-09 every header numbered formats the pre-tier1 way (since 2022). */
		out->formats = WGPU_FORMATS_PRE_TIER1;
	} else if (m->tier1 && !m->pre_tier1) {
		out->formats = WGPU_FORMATS_TIER1;
		snprintf(formats, sizeof(formats), "; %s (texture formats after tier1)", m->tier1);
	} else if (m->pre_tier1 && !m->tier1) {
		out->formats = WGPU_FORMATS_PRE_TIER1;
		snprintf(formats, sizeof(formats), "; %s (texture formats before tier1)",
			 m->pre_tier1);
	} else if (out->labels == WGPU_LABELS_SV) {
		snprintf(formats, sizeof(formats), "; texture format numbering not determined");
	}
	if (configured && configured->labels) {
		out->labels = configured->labels;
		out->formats = configured->formats;
		out->configured = true;
		snprintf(out->why, sizeof(out->why), "--webgpu-abi (detected: %s%s)", labels,
			 formats);
		return;
	}
	snprintf(out->why, sizeof(out->why), "%s%s", labels, formats);
}

int wgpu_abi__parse(const char *s, struct wgpu_abi *out)
{
	memset(out, 0, sizeof(*out));
	if (!strcmp(s, "sv")) {
		out->labels = WGPU_LABELS_SV;
		out->formats = WGPU_FORMATS_PRE_TIER1;
	} else if (!strcmp(s, "sv-tier1")) {
		out->labels = WGPU_LABELS_SV;
		out->formats = WGPU_FORMATS_TIER1;
	} else if (!strcmp(s, "cstr")) {
		out->labels = WGPU_LABELS_CSTR;
		out->formats = WGPU_FORMATS_PRE_TIER1;
	} else {
		return -EINVAL;
	}
	out->configured = true;
	return 0;
}

const char *wgpu_abi__describe(const struct wgpu_abi *a, char *buf, size_t len)
{
	const char *l = a->labels == WGPU_LABELS_SV	? "WGPUStringView labels"
			: a->labels == WGPU_LABELS_CSTR ? "char const * labels"
							: "unknown generation";
	const char *f = a->formats == WGPU_FORMATS_TIER1       ? ", texture formats since tier1"
			: a->formats == WGPU_FORMATS_PRE_TIER1 ? ", texture formats before tier1"
			: a->labels ? ", texture format numbering unknown"
				    : "";

	snprintf(buf, len, "webgpu.h %s%s", l, f);
	return buf;
}

/* ---- descriptors ---- */

/*
 * Bytes per block of every webgpu.h texture format, with the format's value under both
 * numberings (0: not in that numbering). Uncompressed formats are 1x1 blocks. A format of
 * implementation-defined size (Stencil8 and the depth-stencil formats: D24S8 or D32FS8,
 * S8 or a combined format, by backend) has 0 bytes: gpuleak reports it as unknown rather
 * than pick one. Depth24Plus is 4 bytes whichever the backend picks (X8D24 or D32F).
 */
struct fmt {
	const char *name;
	uint8_t pre_tier1, tier1;
	uint8_t bw, bh, bytes;
};

static const struct fmt fmts[] = {
    {"R8Unorm", 0x01, 0x01, 1, 1, 1},
    {"R8Snorm", 0x02, 0x02, 1, 1, 1},
    {"R8Uint", 0x03, 0x03, 1, 1, 1},
    {"R8Sint", 0x04, 0x04, 1, 1, 1},
    {"R16Unorm", 0, 0x05, 1, 1, 2},
    {"R16Snorm", 0, 0x06, 1, 1, 2},
    {"R16Uint", 0x05, 0x07, 1, 1, 2},
    {"R16Sint", 0x06, 0x08, 1, 1, 2},
    {"R16Float", 0x07, 0x09, 1, 1, 2},
    {"RG8Unorm", 0x08, 0x0a, 1, 1, 2},
    {"RG8Snorm", 0x09, 0x0b, 1, 1, 2},
    {"RG8Uint", 0x0a, 0x0c, 1, 1, 2},
    {"RG8Sint", 0x0b, 0x0d, 1, 1, 2},
    {"R32Float", 0x0c, 0x0e, 1, 1, 4},
    {"R32Uint", 0x0d, 0x0f, 1, 1, 4},
    {"R32Sint", 0x0e, 0x10, 1, 1, 4},
    {"RG16Unorm", 0, 0x11, 1, 1, 4},
    {"RG16Snorm", 0, 0x12, 1, 1, 4},
    {"RG16Uint", 0x0f, 0x13, 1, 1, 4},
    {"RG16Sint", 0x10, 0x14, 1, 1, 4},
    {"RG16Float", 0x11, 0x15, 1, 1, 4},
    {"RGBA8Unorm", 0x12, 0x16, 1, 1, 4},
    {"RGBA8UnormSrgb", 0x13, 0x17, 1, 1, 4},
    {"RGBA8Snorm", 0x14, 0x18, 1, 1, 4},
    {"RGBA8Uint", 0x15, 0x19, 1, 1, 4},
    {"RGBA8Sint", 0x16, 0x1a, 1, 1, 4},
    {"BGRA8Unorm", 0x17, 0x1b, 1, 1, 4},
    {"BGRA8UnormSrgb", 0x18, 0x1c, 1, 1, 4},
    {"RGB10A2Uint", 0x19, 0x1d, 1, 1, 4},
    {"RGB10A2Unorm", 0x1a, 0x1e, 1, 1, 4},
    {"RG11B10Ufloat", 0x1b, 0x1f, 1, 1, 4},
    {"RGB9E5Ufloat", 0x1c, 0x20, 1, 1, 4},
    {"RG32Float", 0x1d, 0x21, 1, 1, 8},
    {"RG32Uint", 0x1e, 0x22, 1, 1, 8},
    {"RG32Sint", 0x1f, 0x23, 1, 1, 8},
    {"RGBA16Unorm", 0, 0x24, 1, 1, 8},
    {"RGBA16Snorm", 0, 0x25, 1, 1, 8},
    {"RGBA16Uint", 0x20, 0x26, 1, 1, 8},
    {"RGBA16Sint", 0x21, 0x27, 1, 1, 8},
    {"RGBA16Float", 0x22, 0x28, 1, 1, 8},
    {"RGBA32Float", 0x23, 0x29, 1, 1, 16},
    {"RGBA32Uint", 0x24, 0x2a, 1, 1, 16},
    {"RGBA32Sint", 0x25, 0x2b, 1, 1, 16},
    {"Stencil8", 0x26, 0x2c, 1, 1, 0},
    {"Depth16Unorm", 0x27, 0x2d, 1, 1, 2},
    {"Depth24Plus", 0x28, 0x2e, 1, 1, 4},
    {"Depth24PlusStencil8", 0x29, 0x2f, 1, 1, 0},
    {"Depth32Float", 0x2a, 0x30, 1, 1, 4},
    {"Depth32FloatStencil8", 0x2b, 0x31, 1, 1, 0},
    {"BC1RGBAUnorm", 0x2c, 0x32, 4, 4, 8},
    {"BC1RGBAUnormSrgb", 0x2d, 0x33, 4, 4, 8},
    {"BC2RGBAUnorm", 0x2e, 0x34, 4, 4, 16},
    {"BC2RGBAUnormSrgb", 0x2f, 0x35, 4, 4, 16},
    {"BC3RGBAUnorm", 0x30, 0x36, 4, 4, 16},
    {"BC3RGBAUnormSrgb", 0x31, 0x37, 4, 4, 16},
    {"BC4RUnorm", 0x32, 0x38, 4, 4, 8},
    {"BC4RSnorm", 0x33, 0x39, 4, 4, 8},
    {"BC5RGUnorm", 0x34, 0x3a, 4, 4, 16},
    {"BC5RGSnorm", 0x35, 0x3b, 4, 4, 16},
    {"BC6HRGBUfloat", 0x36, 0x3c, 4, 4, 16},
    {"BC6HRGBFloat", 0x37, 0x3d, 4, 4, 16},
    {"BC7RGBAUnorm", 0x38, 0x3e, 4, 4, 16},
    {"BC7RGBAUnormSrgb", 0x39, 0x3f, 4, 4, 16},
    {"ETC2RGB8Unorm", 0x3a, 0x40, 4, 4, 8},
    {"ETC2RGB8UnormSrgb", 0x3b, 0x41, 4, 4, 8},
    {"ETC2RGB8A1Unorm", 0x3c, 0x42, 4, 4, 8},
    {"ETC2RGB8A1UnormSrgb", 0x3d, 0x43, 4, 4, 8},
    {"ETC2RGBA8Unorm", 0x3e, 0x44, 4, 4, 16},
    {"ETC2RGBA8UnormSrgb", 0x3f, 0x45, 4, 4, 16},
    {"EACR11Unorm", 0x40, 0x46, 4, 4, 8},
    {"EACR11Snorm", 0x41, 0x47, 4, 4, 8},
    {"EACRG11Unorm", 0x42, 0x48, 4, 4, 16},
    {"EACRG11Snorm", 0x43, 0x49, 4, 4, 16},
    {"ASTC4x4Unorm", 0x44, 0x4a, 4, 4, 16},
    {"ASTC4x4UnormSrgb", 0x45, 0x4b, 4, 4, 16},
    {"ASTC5x4Unorm", 0x46, 0x4c, 5, 4, 16},
    {"ASTC5x4UnormSrgb", 0x47, 0x4d, 5, 4, 16},
    {"ASTC5x5Unorm", 0x48, 0x4e, 5, 5, 16},
    {"ASTC5x5UnormSrgb", 0x49, 0x4f, 5, 5, 16},
    {"ASTC6x5Unorm", 0x4a, 0x50, 6, 5, 16},
    {"ASTC6x5UnormSrgb", 0x4b, 0x51, 6, 5, 16},
    {"ASTC6x6Unorm", 0x4c, 0x52, 6, 6, 16},
    {"ASTC6x6UnormSrgb", 0x4d, 0x53, 6, 6, 16},
    {"ASTC8x5Unorm", 0x4e, 0x54, 8, 5, 16},
    {"ASTC8x5UnormSrgb", 0x4f, 0x55, 8, 5, 16},
    {"ASTC8x6Unorm", 0x50, 0x56, 8, 6, 16},
    {"ASTC8x6UnormSrgb", 0x51, 0x57, 8, 6, 16},
    {"ASTC8x8Unorm", 0x52, 0x58, 8, 8, 16},
    {"ASTC8x8UnormSrgb", 0x53, 0x59, 8, 8, 16},
    {"ASTC10x5Unorm", 0x54, 0x5a, 10, 5, 16},
    {"ASTC10x5UnormSrgb", 0x55, 0x5b, 10, 5, 16},
    {"ASTC10x6Unorm", 0x56, 0x5c, 10, 6, 16},
    {"ASTC10x6UnormSrgb", 0x57, 0x5d, 10, 6, 16},
    {"ASTC10x8Unorm", 0x58, 0x5e, 10, 8, 16},
    {"ASTC10x8UnormSrgb", 0x59, 0x5f, 10, 8, 16},
    {"ASTC10x10Unorm", 0x5a, 0x60, 10, 10, 16},
    {"ASTC10x10UnormSrgb", 0x5b, 0x61, 10, 10, 16},
    {"ASTC12x10Unorm", 0x5c, 0x62, 12, 10, 16},
    {"ASTC12x10UnormSrgb", 0x5d, 0x63, 12, 10, 16},
    {"ASTC12x12Unorm", 0x5e, 0x64, 12, 12, 16},
    {"ASTC12x12UnormSrgb", 0x5f, 0x65, 12, 12, 16},
};

static const struct fmt *fmt_find(enum wgpu_formats table, uint32_t format)
{
	size_t i;

	if (!format || table == WGPU_FORMATS_UNKNOWN)
		return NULL;
	for (i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		uint8_t v = table == WGPU_FORMATS_TIER1 ? fmts[i].tier1 : fmts[i].pre_tier1;

		if (v && v == format)
			return &fmts[i];
	}
	return NULL;
}

const char *wgpu_format_name(enum wgpu_formats table, uint32_t format)
{
	const struct fmt *f = fmt_find(table, format);

	return f ? f->name : NULL;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* dimension: 1 = 1D, 2 = 2D, 3 = 3D (webgpu.h since 2024-09; 0 means 2D there). */
int wgpu_texture_bytes(enum wgpu_formats table, uint32_t format, uint32_t dimension, uint32_t width,
		       uint32_t height, uint32_t depth, uint32_t mips, uint32_t samples,
		       uint64_t *bytes)
{
	const struct fmt *f = fmt_find(table, format);
	uint64_t total = 0;
	uint32_t l;

	*bytes = 0;
	if (!f || !f->bytes)
		return -ENOENT;
	if (!mips)
		mips = 1;
	/* A longer chain than the extent allows fails validation: an error object. */
	if (mips > 32)
		mips = 32;
	for (l = 0; l < mips; l++) {
		uint64_t w = width >> l ? width >> l : 1;
		uint64_t h = dimension == 1 ? 1 : (height >> l ? height >> l : 1);
		/* Array layers keep their count down the chain; 3D depth halves. */
		uint64_t d = dimension == 3 ? (depth >> l ? depth >> l : 1) : depth;
		uint64_t blocks = mul_sat((w + f->bw - 1) / f->bw, (h + f->bh - 1) / f->bh);

		total = add_sat(total, mul_sat(mul_sat(blocks, d ? d : 1), f->bytes));
	}
	*bytes = mul_sat(total, samples ? samples : 1);
	return 0;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* WGPUBufferDescriptor: {nextInChain, WGPUStringView label, u64 usage @24, u64 size @32} */
int wgpu_decode_buffer_sv(const uint8_t *desc, size_t len, struct wgpu_desc *out)
{
	memset(out, 0, sizeof(*out));
	if (len < 40)
		return -EINVAL;
	out->usage = rd64(desc + 24);
	out->bytes = rd64(desc + 32);
	return 0;
}

/* Before 2024-10: {nextInChain, char const *label, u32 usage @16, u64 size @24} */
int wgpu_decode_buffer_cstr(const uint8_t *desc, size_t len, struct wgpu_desc *out)
{
	memset(out, 0, sizeof(*out));
	if (len < 32)
		return -EINVAL;
	out->usage = rd32(desc + 16);
	out->bytes = rd64(desc + 24);
	return 0;
}

/*
 * WGPUTextureDescriptor, WGPUStringView generation: usage u64 @24, dimension @32,
 * size {width @36, height @40, depthOrArrayLayers @44}, format @48, mipLevelCount @52,
 * sampleCount @56. Dimension 0 (Undefined) defaults to 2D.
 */
static int decode_texture_sv(enum wgpu_formats table, const uint8_t *desc, size_t len,
			     struct wgpu_desc *out)
{
	uint32_t dim;

	memset(out, 0, sizeof(*out));
	if (len < 60)
		return -EINVAL;
	out->usage = rd64(desc + 24);
	dim = rd32(desc + 32);
	out->format = rd32(desc + 48);
	if (wgpu_texture_bytes(table, out->format, dim ? dim : 2, rd32(desc + 36), rd32(desc + 40),
			       rd32(desc + 44), rd32(desc + 52), rd32(desc + 56), &out->bytes))
		out->unknown_format = true;
	return 0;
}

int wgpu_decode_texture_sv(const uint8_t *desc, size_t len, struct wgpu_desc *out)
{
	return decode_texture_sv(WGPU_FORMATS_PRE_TIER1, desc, len, out);
}

int wgpu_decode_texture_sv_tier1(const uint8_t *desc, size_t len, struct wgpu_desc *out)
{
	return decode_texture_sv(WGPU_FORMATS_TIER1, desc, len, out);
}

int wgpu_decode_texture_sv_unknown(const uint8_t *desc, size_t len, struct wgpu_desc *out)
{
	return decode_texture_sv(WGPU_FORMATS_UNKNOWN, desc, len, out);
}

/*
 * Before 2024-10: usage u32 @16, dimension @20 (1D = 0, 2D = 1, 3D = 2), size @24/28/32,
 * format @36, mipLevelCount @40, sampleCount @44.
 */
int wgpu_decode_texture_cstr(const uint8_t *desc, size_t len, struct wgpu_desc *out)
{
	memset(out, 0, sizeof(*out));
	if (len < 48)
		return -EINVAL;
	out->usage = rd32(desc + 16);
	out->format = rd32(desc + 36);
	if (wgpu_texture_bytes(WGPU_FORMATS_PRE_TIER1, out->format, rd32(desc + 20) + 1,
			       rd32(desc + 24), rd32(desc + 28), rd32(desc + 32), rd32(desc + 40),
			       rd32(desc + 44), &out->bytes))
		out->unknown_format = true;
	return 0;
}
