// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The fuzzer's seed object: a Dawn-style proc table (sProcMap: {proc, std::string_view name},
// sorted by name, filled by a static initializer) over dawn::native::Native* functions, built
// into a shared object and stripped (make_seeds.sh): the shape of onnxruntime's Dawn, small.
#include <string_view>
using P = void (*)();
struct Entry {
	P proc;
	std::string_view name;
};
#define NATIVE(n)                                                                          \
	namespace dawn::native {                                                           \
	__attribute__((noinline, visibility("hidden"))) void Native##n(void *a)            \
	{                                                                                  \
		asm volatile("" ::"r"(a));                                                 \
	}                                                                                  \
	}
NATIVE(AdapterRelease)
NATIVE(BufferAddRef)
NATIVE(BufferDestroy)
NATIVE(BufferMapAsync)
NATIVE(BufferReadMappedRange)
NATIVE(BufferRelease)
NATIVE(BufferSetLabel)
NATIVE(DeviceAddRef)
NATIVE(DeviceCreateBuffer)
NATIVE(DeviceCreateTexture)
NATIVE(DeviceDestroy)
NATIVE(DeviceGetQueue)
NATIVE(DeviceRelease)
NATIVE(QueueSubmit)
NATIVE(TextureRelease)
#define E(n) {reinterpret_cast<P>(&dawn::native::Native##n), "wgpu" #n}
static Entry sProcMap[] = {
    E(AdapterRelease), E(BufferAddRef),	      E(BufferDestroy),	      E(BufferMapAsync),
    E(BufferReadMappedRange), E(BufferRelease), E(BufferSetLabel),	      E(DeviceAddRef),
    E(DeviceCreateBuffer),    E(DeviceCreateTexture), E(DeviceDestroy),  E(DeviceGetQueue),
    E(DeviceRelease),	      E(QueueSubmit),	      E(TextureRelease),
};
#ifdef DAWN_RTTI
// With -DDAWN_RTTI: one of Dawn's error classes, a bare TextureBase, with its vtable and RTTI
// (what TextureBase::MakeError returns), and not the other (ErrorBuffer).
namespace dawn::native {
class TextureBase {
      public:
	virtual ~TextureBase();
	virtual void Destroy();
};
TextureBase::~TextureBase() {}
void TextureBase::Destroy() {}
} // namespace dawn::native
extern "C" void *make_error_texture()
{
	return new dawn::native::TextureBase;
}
#endif
extern "C" P lookup(const char *s)
{
	for (auto &e : sProcMap)
		if (e.name == s)
			return e.proc;
	return nullptr;
}
