// The dynamic/static samples' program, host-only: the tensor comes in as a
// buffer view instead of being built on a device.
module @example {
  func.func private @custom.string.from_tensor(!hal.buffer_view) -> !custom.string
  func.func private @custom.string.print(!custom.string)
  func.func private @custom.error()
  func.func @main(%t: !hal.buffer_view) {
    %s = call @custom.string.from_tensor(%t) : (!hal.buffer_view) -> !custom.string
    call @custom.string.print(%s) : (!custom.string) -> ()
    return
  }
  func.func @error() {
    call @custom.error() : () -> ()
    return
  }
}
