// VM dialect (--compile-mode=vm): io_parameters.gather and .scatter, which
// the compiler emits only in parameter-encoding flows.
//   @gather() gathers model::w (48 bytes) then model::b (12 bytes) into one
//   60-byte buffer and returns it as a 15xf32 view.
//   @scatter(v) writes the 12 bytes of v (3xf32) over model::b.
vm.module @module {
  vm.import private @hal.devices.get(%index : i32) -> !vm.ref<!hal.device>
  vm.import private @hal.device.allocator(%device : !vm.ref<!hal.device>) -> !vm.ref<!hal.allocator>
  vm.import private @hal.allocator.allocate(%allocator : !vm.ref<!hal.allocator>, %queue_affinity : i64, %memory_types : i32, %buffer_usage : i32, %allocation_size : i64) -> !vm.ref<!hal.buffer>
  vm.import private @hal.buffer_view.create(%buffer : !vm.ref<!hal.buffer>, %source_offset : i64, %source_length : i64, %element_type : i32, %encoding_type : i32, %shape : i64 ...) -> !vm.ref<!hal.buffer_view>
  vm.import private @hal.buffer_view.buffer(%buffer_view : !vm.ref<!hal.buffer_view>) -> !vm.ref<!hal.buffer>
  vm.import private @io_parameters.gather(%device : !vm.ref<!hal.device>, %queue_affinity : i64, %wait_fence : !vm.ref<!hal.fence>, %signal_fence : !vm.ref<!hal.fence>, %source_scope : !vm.buffer, %target_buffer : !vm.ref<!hal.buffer>, %key_table : !vm.buffer, %key_data : !vm.buffer, %spans : !vm.buffer)
  vm.import private @io_parameters.scatter(%device : !vm.ref<!hal.device>, %queue_affinity : i64, %wait_fence : !vm.ref<!hal.fence>, %signal_fence : !vm.ref<!hal.fence>, %source_buffer : !vm.ref<!hal.buffer>, %target_scope : !vm.buffer, %key_table : !vm.buffer, %key_data : !vm.buffer, %spans : !vm.buffer)

  vm.rodata private @scope dense<[109, 111, 100, 101, 108]> : tensor<5xi8>
  // key table: (offset, length) of "w" and "b" in the key data
  vm.rodata private @keys dense<[0, 1, 1, 1]> : tensor<4xi32>
  vm.rodata private @names dense<[119, 98]> : tensor<2xi8>
  // spans: (parameter offset, buffer offset, length)
  vm.rodata private @gather_spans dense<[0, 0, 48, 0, 48, 12]> : tensor<6xi64>
  vm.rodata private @b_key dense<[0, 1]> : tensor<2xi32>
  vm.rodata private @b_name dense<[98]> : tensor<1xi8>
  vm.rodata private @scatter_spans dense<[0, 0, 12]> : tensor<3xi64>

  vm.func @gather() -> !vm.ref<!hal.buffer_view> {
    %c0 = vm.const.i32 0
    %affinity = vm.const.i64 -1
    %device = vm.call @hal.devices.get(%c0) : (i32) -> !vm.ref<!hal.device>
    %allocator = vm.call @hal.device.allocator(%device) : (!vm.ref<!hal.device>) -> !vm.ref<!hal.allocator>
    %types = vm.const.i32 48
    %usage = vm.const.i32 3075
    %size = vm.const.i64 60
    %buffer = vm.call @hal.allocator.allocate(%allocator, %affinity, %types, %usage, %size) : (!vm.ref<!hal.allocator>, i64, i32, i32, i64) -> !vm.ref<!hal.buffer>
    %null = vm.const.ref.zero : !vm.ref<!hal.fence>
    %scope = vm.const.ref.rodata @scope : !vm.buffer
    %keys = vm.const.ref.rodata @keys : !vm.buffer
    %names = vm.const.ref.rodata @names : !vm.buffer
    %spans = vm.const.ref.rodata @gather_spans : !vm.buffer
    vm.call @io_parameters.gather(%device, %affinity, %null, %null, %scope, %buffer, %keys, %names, %spans) : (!vm.ref<!hal.device>, i64, !vm.ref<!hal.fence>, !vm.ref<!hal.fence>, !vm.buffer, !vm.ref<!hal.buffer>, !vm.buffer, !vm.buffer, !vm.buffer) -> ()
    %z = vm.const.i64 0
    %f32 = vm.const.i32 553648160
    %enc = vm.const.i32 1
    %n = vm.const.i64 15
    %view = vm.call.variadic @hal.buffer_view.create(%buffer, %z, %size, %f32, %enc, [%n]) : (!vm.ref<!hal.buffer>, i64, i64, i32, i32, i64 ...) -> !vm.ref<!hal.buffer_view>
    vm.return %view : !vm.ref<!hal.buffer_view>
  }
  vm.export @gather

  vm.func @scatter(%v : !vm.ref<!hal.buffer_view>) {
    %c0 = vm.const.i32 0
    %affinity = vm.const.i64 -1
    %device = vm.call @hal.devices.get(%c0) : (i32) -> !vm.ref<!hal.device>
    %buffer = vm.call @hal.buffer_view.buffer(%v) : (!vm.ref<!hal.buffer_view>) -> !vm.ref<!hal.buffer>
    %null = vm.const.ref.zero : !vm.ref<!hal.fence>
    %scope = vm.const.ref.rodata @scope : !vm.buffer
    %keys = vm.const.ref.rodata @b_key : !vm.buffer
    %names = vm.const.ref.rodata @b_name : !vm.buffer
    %spans = vm.const.ref.rodata @scatter_spans : !vm.buffer
    vm.call @io_parameters.scatter(%device, %affinity, %null, %null, %buffer, %scope, %keys, %names, %spans) : (!vm.ref<!hal.device>, i64, !vm.ref<!hal.fence>, !vm.ref<!hal.fence>, !vm.ref<!hal.buffer>, !vm.buffer, !vm.buffer, !vm.buffer, !vm.buffer) -> ()
    vm.return
  }
  vm.export @scatter
}
