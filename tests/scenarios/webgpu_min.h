/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The few webgpu.h declarations the WebGPU scenarios need, written for the Dawn that npm
 * `bun-webgpu-linux-x64@0.1.7` ships (libwebgpu_wrapper.so). No package ships a matching
 * webgpu.h. This is the webgpu-headers "v1" generation: WGPUStringView labels, 64-bit usage
 * flags, callback-info structs passed by value, WGPUFuture, and (since webgpu-headers of
 * 2025-04-30) a message argument in the queue work-done callback. Texture formats use the
 * numbering from before the texture-formats-tier1 renumbering (RGBA8Unorm = 0x12).
 *
 * Layouts were checked against that library: the mangled names of dawn::native::Native*
 * give the parameter types, the disassembly of WorkDoneEvent::Complete the callback's
 * registers (status, message.data, message.length, userdata1, userdata2), and the
 * scenarios' own runs the field offsets (a wrong offset fails validation).
 */
#ifndef GPULEAK_WEBGPU_MIN_H
#define GPULEAK_WEBGPU_MIN_H

#include <stddef.h>
#include <stdint.h>

#define WGPU_STRLEN SIZE_MAX

typedef uint32_t WGPUBool;
typedef uint64_t WGPUFlags;
typedef WGPUFlags WGPUBufferUsage;
typedef WGPUFlags WGPUTextureUsage;

typedef struct WGPUInstanceImpl *WGPUInstance;
typedef struct WGPUAdapterImpl *WGPUAdapter;
typedef struct WGPUDeviceImpl *WGPUDevice;
typedef struct WGPUQueueImpl *WGPUQueue;
typedef struct WGPUBufferImpl *WGPUBuffer;
typedef struct WGPUTextureImpl *WGPUTexture;
typedef struct WGPUCommandEncoderImpl *WGPUCommandEncoder;
typedef struct WGPUCommandBufferImpl *WGPUCommandBuffer;
typedef struct WGPUSurfaceImpl *WGPUSurface;

typedef struct WGPUStringView {
	const char *data;
	size_t length;
} WGPUStringView;

typedef struct WGPUChainedStruct {
	struct WGPUChainedStruct *next;
	uint32_t sType;
} WGPUChainedStruct;

typedef struct WGPUFuture {
	uint64_t id;
} WGPUFuture;

enum {
	WGPUBackendType_Null = 0x1,
	WGPUBackendType_OpenGLES = 0x8,
	WGPUFeatureLevel_Compatibility = 0x1,
	WGPUFeatureLevel_Core = 0x2,
	WGPUCallbackMode_WaitAnyOnly = 0x1,
	WGPUCallbackMode_AllowProcessEvents = 0x2,
	WGPUCallbackMode_AllowSpontaneous = 0x3,
	WGPURequestAdapterStatus_Success = 0x1,
	WGPURequestDeviceStatus_Success = 0x1,
	WGPUQueueWorkDoneStatus_Success = 0x1,
	WGPUErrorFilter_Validation = 0x1,
	WGPUErrorType_NoError = 0x1,
	WGPUErrorType_Validation = 0x2,
	WGPUTextureDimension_1D = 0x1,
	WGPUTextureDimension_2D = 0x2,
	WGPUTextureDimension_3D = 0x3,
	WGPUWaitStatus_Success = 0x1,
};

/* Texture formats (numbering before texture-formats-tier1). */
enum {
	WGPUTextureFormat_R8Unorm = 0x01,
	WGPUTextureFormat_R16Float = 0x07,
	WGPUTextureFormat_R32Float = 0x0c,
	WGPUTextureFormat_RG16Float = 0x11,
	WGPUTextureFormat_RGBA8Unorm = 0x12,
	WGPUTextureFormat_BGRA8Unorm = 0x17,
	WGPUTextureFormat_RGBA16Float = 0x22,
	WGPUTextureFormat_RGBA32Float = 0x23,
	WGPUTextureFormat_Depth24PlusStencil8 = 0x29,
	WGPUTextureFormat_Depth32Float = 0x2a,
	WGPUTextureFormat_BC1RGBAUnorm = 0x2c,
};

#define WGPUBufferUsage_MapRead		  0x1ULL
#define WGPUBufferUsage_MapWrite	  0x2ULL
#define WGPUBufferUsage_CopySrc		  0x4ULL
#define WGPUBufferUsage_CopyDst		  0x8ULL
#define WGPUBufferUsage_Uniform		  0x40ULL
#define WGPUBufferUsage_Storage		  0x80ULL
#define WGPUTextureUsage_CopySrc	  0x1ULL
#define WGPUTextureUsage_CopyDst	  0x2ULL
#define WGPUTextureUsage_TextureBinding	  0x4ULL
#define WGPUTextureUsage_RenderAttachment 0x10ULL

typedef void (*WGPURequestAdapterCallback)(uint32_t status, WGPUAdapter adapter,
					   WGPUStringView message, void *userdata1,
					   void *userdata2);
typedef void (*WGPURequestDeviceCallback)(uint32_t status, WGPUDevice device,
					  WGPUStringView message, void *userdata1, void *userdata2);
typedef void (*WGPUQueueWorkDoneCallback)(uint32_t status, WGPUStringView message, void *userdata1,
					  void *userdata2);
typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice *device, uint32_t type,
					    WGPUStringView message, void *userdata1,
					    void *userdata2);
typedef void (*WGPUPopErrorScopeCallback)(uint32_t status, uint32_t type, WGPUStringView message,
					  void *userdata1, void *userdata2);
typedef void (*WGPUDeviceLostCallback)(const WGPUDevice *device, uint32_t reason,
				       WGPUStringView message, void *userdata1, void *userdata2);

/* Every callback-info struct has this shape: 40 bytes, passed by value. */
#define WGPU_CALLBACK_INFO(name, fn)                                                               \
	typedef struct name {                                                                      \
		WGPUChainedStruct *nextInChain;                                                    \
		uint32_t mode;                                                                     \
		fn callback;                                                                       \
		void *userdata1;                                                                   \
		void *userdata2;                                                                   \
	} name
WGPU_CALLBACK_INFO(WGPURequestAdapterCallbackInfo, WGPURequestAdapterCallback);
WGPU_CALLBACK_INFO(WGPURequestDeviceCallbackInfo, WGPURequestDeviceCallback);
WGPU_CALLBACK_INFO(WGPUQueueWorkDoneCallbackInfo, WGPUQueueWorkDoneCallback);
WGPU_CALLBACK_INFO(WGPUPopErrorScopeCallbackInfo, WGPUPopErrorScopeCallback);
WGPU_CALLBACK_INFO(WGPUDeviceLostCallbackInfo, WGPUDeviceLostCallback);

typedef struct WGPUUncapturedErrorCallbackInfo {
	WGPUChainedStruct *nextInChain;
	WGPUUncapturedErrorCallback callback;
	void *userdata1;
	void *userdata2;
} WGPUUncapturedErrorCallbackInfo;

typedef struct WGPURequestAdapterOptions {
	WGPUChainedStruct *nextInChain;
	uint32_t featureLevel;
	uint32_t powerPreference;
	WGPUBool forceFallbackAdapter;
	uint32_t backendType;
	WGPUSurface compatibleSurface;
} WGPURequestAdapterOptions;

typedef struct WGPUQueueDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUStringView label;
} WGPUQueueDescriptor;

typedef struct WGPUDeviceDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUStringView label;
	size_t requiredFeatureCount;
	const uint32_t *requiredFeatures;
	const void *requiredLimits;
	WGPUQueueDescriptor defaultQueue;
	WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
	WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef struct WGPUBufferDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUStringView label;
	WGPUBufferUsage usage;
	uint64_t size;
	WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;

typedef struct WGPUExtent3D {
	uint32_t width;
	uint32_t height;
	uint32_t depthOrArrayLayers;
} WGPUExtent3D;

typedef struct WGPUTextureDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUStringView label;
	WGPUTextureUsage usage;
	uint32_t dimension;
	WGPUExtent3D size;
	uint32_t format;
	uint32_t mipLevelCount;
	uint32_t sampleCount;
	size_t viewFormatCount;
	const uint32_t *viewFormats;
} WGPUTextureDescriptor;

typedef struct WGPUCommandEncoderDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUStringView label;
} WGPUCommandEncoderDescriptor;

_Static_assert(sizeof(WGPUBufferDescriptor) == 48, "WGPUBufferDescriptor");
_Static_assert(sizeof(WGPUTextureDescriptor) == 80, "WGPUTextureDescriptor");
_Static_assert(sizeof(WGPUQueueWorkDoneCallbackInfo) == 40, "callback info");
_Static_assert(offsetof(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo) == 112, "device desc");

WGPUInstance wgpuCreateInstance(const void *descriptor);
void wgpuInstanceRelease(WGPUInstance instance);
void wgpuInstanceProcessEvents(WGPUInstance instance);
WGPUFuture wgpuInstanceRequestAdapter(WGPUInstance instance,
				      const WGPURequestAdapterOptions *options,
				      WGPURequestAdapterCallbackInfo callbackInfo);
WGPUFuture wgpuAdapterRequestDevice(WGPUAdapter adapter, const WGPUDeviceDescriptor *descriptor,
				    WGPURequestDeviceCallbackInfo callbackInfo);
void wgpuAdapterRelease(WGPUAdapter adapter);

WGPUBuffer wgpuDeviceCreateBuffer(WGPUDevice device, const WGPUBufferDescriptor *descriptor);
WGPUTexture wgpuDeviceCreateTexture(WGPUDevice device, const WGPUTextureDescriptor *descriptor);
WGPUQueue wgpuDeviceGetQueue(WGPUDevice device);
WGPUCommandEncoder wgpuDeviceCreateCommandEncoder(WGPUDevice device,
						  const WGPUCommandEncoderDescriptor *descriptor);
void wgpuDevicePushErrorScope(WGPUDevice device, uint32_t filter);
WGPUFuture wgpuDevicePopErrorScope(WGPUDevice device, WGPUPopErrorScopeCallbackInfo callbackInfo);
void wgpuDeviceSetLabel(WGPUDevice device, WGPUStringView label);
void wgpuDeviceDestroy(WGPUDevice device);
void wgpuDeviceAddRef(WGPUDevice device);
void wgpuDeviceRelease(WGPUDevice device);

void wgpuBufferSetLabel(WGPUBuffer buffer, WGPUStringView label);
void wgpuBufferAddRef(WGPUBuffer buffer);
void wgpuBufferRelease(WGPUBuffer buffer);
void wgpuBufferDestroy(WGPUBuffer buffer);
uint64_t wgpuBufferGetSize(WGPUBuffer buffer);
void wgpuTextureSetLabel(WGPUTexture texture, WGPUStringView label);
void wgpuTextureAddRef(WGPUTexture texture);
void wgpuTextureRelease(WGPUTexture texture);
void wgpuTextureDestroy(WGPUTexture texture);

void wgpuQueueSubmit(WGPUQueue queue, size_t commandCount, const WGPUCommandBuffer *commands);
WGPUFuture wgpuQueueOnSubmittedWorkDone(WGPUQueue queue,
					WGPUQueueWorkDoneCallbackInfo callbackInfo);
void wgpuQueueWriteBuffer(WGPUQueue queue, WGPUBuffer buffer, uint64_t bufferOffset,
			  const void *data, size_t size);
void wgpuQueueRelease(WGPUQueue queue);
void wgpuCommandEncoderCopyBufferToBuffer(WGPUCommandEncoder encoder, WGPUBuffer source,
					  uint64_t sourceOffset, WGPUBuffer destination,
					  uint64_t destinationOffset, uint64_t size);
WGPUCommandBuffer wgpuCommandEncoderFinish(WGPUCommandEncoder encoder, const void *descriptor);
void wgpuCommandEncoderRelease(WGPUCommandEncoder encoder);
void wgpuCommandBufferRelease(WGPUCommandBuffer commandBuffer);

#endif
