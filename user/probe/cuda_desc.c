// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Bytes of CUDA arrays and multicast objects from the structs their calls take (cuda_desc.h).
 * An array's bytes are its texels' (element size x width x height x depth, over its mip
 * levels); the driver pads rows and aligns layouts as it likes, which no call tells: the
 * real footprint is at least this.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include "probe/cuda_desc.h"

static uint32_t rd32(const uint8_t *d, size_t off)
{
	uint32_t v;

	memcpy(&v, d + off, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *d, size_t off)
{
	uint64_t v;

	memcpy(&v, d + off, sizeof(v));
	return v;
}

/* How texels are stored: bytes per element, or per 4x4 block of a compressed format. */
struct texel {
	uint64_t bytes;
	bool block; /* bytes are per 4x4 block */
};

/* struct cudaChannelFormatDesc {int x, y, z, w; enum cudaChannelFormatKind f;} */
static int channel_texel(const uint8_t *d, struct texel *t)
{
	uint32_t kind = rd32(d, 16);
	uint64_t bits = (uint64_t)rd32(d, 0) + rd32(d, 4) + rd32(d, 8) + rd32(d, 12);

	t->block = kind >= 17 && kind <= 30; /* cudaChannelFormatKind*BlockCompressed* */
	if (t->block) {
		/* BC1 and BC4 store a 4x4 block in 8 bytes, the others in 16 */
		t->bytes = kind == 17 || kind == 18 || kind == 23 || kind == 24 ? 8 : 16;
		return 0;
	}
	/* NV12 (4) is planar; anything past the known kinds is unknown */
	if (kind == 4 || kind > 31 || !bits || bits % 8 || bits > 4 * 32)
		return -EINVAL;
	t->bytes = bits / 8;
	return 0;
}

/* CUarray_format and NumChannels of CUDA_ARRAY(3D)_DESCRIPTOR */
static int format_texel(uint32_t fmt, uint32_t channels, struct texel *t)
{
	t->block = false;
	switch (fmt) {
	case 0x01: /* UNSIGNED_INT8 */
	case 0x08: /* SIGNED_INT8 */
		t->bytes = 1;
		break;
	case 0x02: /* UNSIGNED_INT16 */
	case 0x09: /* SIGNED_INT16 */
	case 0x10: /* HALF */
		t->bytes = 2;
		break;
	case 0x03: /* UNSIGNED_INT32 */
	case 0x0a: /* SIGNED_INT32 */
	case 0x20: /* FLOAT */
		t->bytes = 4;
		break;
	case 0xc0: /* UNORM_INT8X1 ... SNORM_INT16X4: the channel count is in the name */
	case 0xc6:
		t->bytes = 1;
		return 0;
	case 0xc1:
	case 0xc3:
	case 0xc7:
	case 0xc9:
		t->bytes = 2;
		return 0;
	case 0xc2:
	case 0xc4:
	case 0xc8:
	case 0xca:
		t->bytes = 4;
		return 0;
	case 0xc5:
	case 0xcb:
		t->bytes = 8;
		return 0;
	case 0x91: /* BC1_UNORM(_SRGB), BC4_UNORM/SNORM: 8 bytes a 4x4 block */
	case 0x92:
	case 0x97:
	case 0x98:
		t->block = true;
		t->bytes = 8;
		return 0;
	case 0x93: /* BC2, BC3, BC5, BC6H, BC7: 16 */
	case 0x94:
	case 0x95:
	case 0x96:
	case 0x99:
	case 0x9a:
	case 0x9b:
	case 0x9c:
	case 0x9d:
	case 0x9e:
		t->block = true;
		t->bytes = 16;
		return 0;
	default: /* planar YUV (NV12, P010, ...) and formats newer than this table */
		return -EINVAL;
	}
	if (channels != 1 && channels != 2 && channels != 4)
		return -EINVAL;
	t->bytes *= channels;
	return 0;
}

static uint64_t dim(uint64_t v, unsigned int level)
{
	v = level < 64 ? v >> level : 0;
	return v ? v : 1;
}

/* Saturating: a descriptor is the program's, any values at all. */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/*
 * Bytes of w x h x d texels (0 in a dimension: 1, as CUDA reads a 1D or 2D extent) over
 * `levels` mip levels, each half the one before, down to 1.
 */
static int texels_bytes(const struct texel *t, uint64_t w, uint64_t h, uint64_t d, uint64_t levels,
			uint64_t *bytes)
{
	uint64_t sum = 0, n;
	unsigned int l;

	if (!w)
		return -EINVAL;
	if (!levels)
		levels = 1;
	for (l = 0; l < levels && l < 64; l++) {
		uint64_t x = dim(w, l), y = dim(h, l), z = dim(d, l);

		if (t->block)
			n = mul_sat(mul_sat((x + 3) / 4, (y + 3) / 4), z);
		else
			n = mul_sat(mul_sat(x, y), z);
		n = mul_sat(n, t->bytes);
		sum = sum > UINT64_MAX - n ? UINT64_MAX : sum + n;
		/* CUDA stops at the level where every dimension is 1 */
		if (x == 1 && y == 1 && z == 1)
			break;
	}
	*bytes = sum;
	return 0;
}

int cuda_desc__bytes(const struct gl_call_rec *r, uint64_t *bytes)
{
	const struct gl_desc_rec *dr = (const struct gl_desc_rec *)r;
	const uint8_t *d = dr->desc;
	struct texel t;

	if (!(r->hdr.flags & GL_HF_DESC) || (r->hdr.flags & GL_HF_DESC_READ_FAIL) ||
	    r->hdr.size < sizeof(*dr))
		return -EINVAL;
	switch (r->hdr.api) {
	case GL_API_CUDA_MALLOC_ARRAY: /* channel format; width, height in aux, aux2 */
		if (channel_texel(d, &t))
			return -EINVAL;
		return texels_bytes(&t, r->aux, r->aux2, 0, 1, bytes);
	case GL_API_CUDA_MALLOC_3D_ARRAY: /* cudaExtent {width, height, depth}, then the format */
	case GL_API_CUDA_MALLOC_MIPMAPPED_ARRAY:
		if (channel_texel(d + 24, &t))
			return -EINVAL;
		return texels_bytes(&t, rd64(d, 0), rd64(d, 8), rd64(d, 16),
				    r->hdr.api == GL_API_CUDA_MALLOC_MIPMAPPED_ARRAY ? r->aux : 1,
				    bytes);
	case GL_API_CU_ARRAY_CREATE: /* {Width, Height, Format, NumChannels} */
		if (format_texel(rd32(d, 16), rd32(d, 20), &t))
			return -EINVAL;
		return texels_bytes(&t, rd64(d, 0), rd64(d, 8), 0, 1, bytes);
	case GL_API_CU_ARRAY_3D_CREATE: /* {Width, Height, Depth, Format, NumChannels, Flags} */
	case GL_API_CU_MIPMAPPED_ARRAY_CREATE:
		if (format_texel(rd32(d, 24), rd32(d, 28), &t))
			return -EINVAL;
		return texels_bytes(&t, rd64(d, 0), rd64(d, 8), rd64(d, 16),
				    r->hdr.api == GL_API_CU_MIPMAPPED_ARRAY_CREATE ? r->aux : 1,
				    bytes);
	case GL_API_CU_MULTICAST_CREATE: /* CUmulticastObjectProp {numDevices; size @8; ...} */
		*bytes = rd64(d, 8);
		return 0;
	default:
		return -EINVAL;
	}
}
