/* Which PJRT_Api entries anvil implements (AV_PJRT_IMPLEMENTED: a function
 * `PJRT_Error *av_PJRT_<name>(PJRT_<name>_Args *)` exists in one of the src/pjrt files) and
 * which answer UNIMPLEMENTED (AV_PJRT_UNIMPLEMENTED). PJRT_Error_Destroy and
 * PJRT_Error_Message return void and are wired separately in api.c. Every name of the
 * PJRT_Api struct appears exactly once (api.c checks the count at compile time). */
#ifndef ANVIL_PJRT_API_LIST_H
#define ANVIL_PJRT_API_LIST_H

#define AV_PJRT_IMPLEMENTED(X)                                                                 \
  X(Error_GetCode)                                                                             \
  X(Error_ForEachPayload)                                                                      \
  X(Plugin_Initialize)                                                                         \
  X(Plugin_Attributes)                                                                         \
  X(Event_Destroy)                                                                             \
  X(Event_IsReady)                                                                             \
  X(Event_Error)                                                                               \
  X(Event_Await)                                                                               \
  X(Event_OnReady)                                                                             \
  X(Event_Create)                                                                              \
  X(Event_Set)                                                                                 \
  X(Client_Create)                                                                             \
  X(Client_Destroy)                                                                            \
  X(Client_PlatformName)                                                                       \
  X(Client_ProcessIndex)                                                                       \
  X(Client_PlatformVersion)                                                                    \
  X(Client_Devices)                                                                            \
  X(Client_AddressableDevices)                                                                 \
  X(Client_LookupDevice)                                                                       \
  X(Client_LookupAddressableDevice)                                                            \
  X(Client_AddressableMemories)                                                                \
  X(Client_Compile)                                                                            \
  X(Compile)                                                                                   \
  X(Client_Load)                                                                               \
  X(Client_DefaultDeviceAssignment)                                                            \
  X(Client_BufferFromHostBuffer)                                                               \
  X(Client_TopologyDescription)                                                                \
  X(Client_UpdateGlobalProcessInfo)                                                            \
  X(Client_CreateUninitializedBuffer)                                                          \
  X(Client_CreateErrorBuffer)                                                                  \
  X(Client_CreateAliasBuffer)                                                                  \
  X(Client_FulfillAliasBuffer)                                                                 \
  X(Client_CreateBuffersForAsyncHostToDevice)                                                  \
  X(AsyncHostToDeviceTransferManager_Destroy)                                                  \
  X(AsyncHostToDeviceTransferManager_TransferData)                                             \
  X(AsyncHostToDeviceTransferManager_TransferLiteral)                                          \
  X(AsyncHostToDeviceTransferManager_RetrieveBuffer)                                           \
  X(AsyncHostToDeviceTransferManager_Device)                                                   \
  X(AsyncHostToDeviceTransferManager_BufferCount)                                              \
  X(AsyncHostToDeviceTransferManager_BufferSize)                                               \
  X(AsyncHostToDeviceTransferManager_SetBufferError)                                           \
  X(AsyncHostToDeviceTransferManager_AddMetadata)                                              \
  X(DeviceDescription_Id)                                                                      \
  X(DeviceDescription_ProcessIndex)                                                            \
  X(DeviceDescription_Attributes)                                                              \
  X(DeviceDescription_Kind)                                                                    \
  X(DeviceDescription_DebugString)                                                             \
  X(DeviceDescription_ToString)                                                                \
  X(Device_GetDescription)                                                                     \
  X(Device_IsAddressable)                                                                      \
  X(Device_LocalHardwareId)                                                                    \
  X(Device_AddressableMemories)                                                                \
  X(Device_DefaultMemory)                                                                      \
  X(Device_GetAttributes)                                                                      \
  X(Device_MemoryStats)                                                                        \
  X(Device_ClearMemoryStats)                                                                   \
  X(Memory_Id)                                                                                 \
  X(Memory_Kind)                                                                               \
  X(Memory_Kind_Id)                                                                            \
  X(Memory_DebugString)                                                                        \
  X(Memory_ToString)                                                                           \
  X(Memory_AddressableByDevices)                                                               \
  X(TopologyDescription_Destroy)                                                               \
  X(TopologyDescription_Create)                                                                \
  X(TopologyDescription_Fingerprint)                                                           \
  X(TopologyDescription_GetMemorySpaceKindIds)                                                 \
  X(TopologyDescription_Serialize)                                                             \
  X(TopologyDescription_Deserialize)                                                           \
  X(TopologyDescription_PlatformName)                                                          \
  X(TopologyDescription_PlatformVersion)                                                       \
  X(TopologyDescription_GetDeviceDescriptions)                                                 \
  X(TopologyDescription_Attributes)                                                            \
  X(Executable_Destroy)                                                                        \
  X(Executable_Name)                                                                           \
  X(Executable_NumReplicas)                                                                    \
  X(Executable_NumPartitions)                                                                  \
  X(Executable_NumOutputs)                                                                     \
  X(Executable_SizeOfGeneratedCodeInBytes)                                                     \
  X(Executable_OutputElementTypes)                                                             \
  X(Executable_OutputDimensions)                                                               \
  X(Executable_OutputMemoryKinds)                                                              \
  X(Executable_ParameterMemoryKinds)                                                           \
  X(Executable_GetCompiledMemoryStats)                                                         \
  X(Executable_GetCostAnalysis)                                                                \
  X(Executable_OptimizedProgram)                                                               \
  X(Executable_Fingerprint)                                                                    \
  X(Executable_Serialize)                                                                      \
  X(Executable_DeserializeAndLoad)                                                             \
  X(Executable_GetCompileOptions)                                                              \
  X(LoadedExecutable_Destroy)                                                                  \
  X(LoadedExecutable_GetExecutable)                                                            \
  X(LoadedExecutable_AddressableDevices)                                                       \
  X(LoadedExecutable_AddressableDeviceLogicalIds)                                              \
  X(LoadedExecutable_GetDeviceAssignment)                                                      \
  X(LoadedExecutable_Delete)                                                                   \
  X(LoadedExecutable_IsDeleted)                                                                \
  X(LoadedExecutable_Execute)                                                                  \
  X(LoadedExecutable_Fingerprint)                                                              \
  X(Buffer_Destroy)                                                                            \
  X(Buffer_ElementType)                                                                        \
  X(Buffer_Dimensions)                                                                         \
  X(Buffer_UnpaddedDimensions)                                                                 \
  X(Buffer_DynamicDimensionIndices)                                                            \
  X(Buffer_GetMemoryLayout)                                                                    \
  X(Buffer_OnDeviceSizeInBytes)                                                                \
  X(Buffer_Device)                                                                             \
  X(Buffer_Memory)                                                                             \
  X(Buffer_Delete)                                                                             \
  X(Buffer_IsDeleted)                                                                          \
  X(Buffer_CopyToDevice)                                                                       \
  X(Buffer_CopyToMemory)                                                                       \
  X(Buffer_ToHostBuffer)                                                                       \
  X(Buffer_CopyRawToHost)                                                                      \
  X(Buffer_CopyRawToHostFuture)                                                                \
  X(Client_CreateViewOfDeviceBuffer)                                                           \
  X(Buffer_Bitcast)                                                                            \
  X(Client_DmaMap)                                                                             \
  X(Client_DmaUnmap)                                                                           \
  X(ExecuteContext_Create)                                                                     \
  X(ExecuteContext_Destroy)                                                                    \
  X(Buffer_IsOnCpu)                                                                            \
  X(Buffer_ReadyEvent)                                                                         \
  X(Buffer_UnsafePointer)                                                                      \
  X(Buffer_IncreaseExternalReferenceCount)                                                     \
  X(Buffer_DecreaseExternalReferenceCount)                                                     \
  X(Buffer_OpaqueDeviceMemoryDataPointer)

#define AV_PJRT_UNIMPLEMENTED(X)                                                               \
  X(Device_PoisonExecution)                                                                    \
  X(Device_CreateAsyncTrackingEvent)                                                           \
  X(AsyncTrackingEvent_Destroy)                                                                \
  X(CopyToDeviceStream_Destroy)                                                                \
  X(CopyToDeviceStream_AddChunk)                                                               \
  X(CopyToDeviceStream_TotalBytes)                                                             \
  X(CopyToDeviceStream_GranuleSize)                                                            \
  X(CopyToDeviceStream_CurrentBytes)                                                           \
  X(TopologyDescription_MakeCanonicalShapeForMemorySpace)                                      \
  X(Buffer_DonateWithControlDependency)

#define AV_PJRT_DECLARE(name) PJRT_Error *av_PJRT_##name(PJRT_##name##_Args *args);

#endif
