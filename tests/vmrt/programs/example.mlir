module @example {
  func.func private @custom.string.create(!util.buffer) -> !custom.string
  func.func private @custom.string.length(!custom.string) -> index attributes {
    vm.signature = (!vm.ref<!custom.string>) -> i64
  }
  func.func private @custom.string.print(!custom.string)
  func.func private @custom.string.dprint(!custom.string) attributes {
    vm.fallback = @dprint_fallback
  }
  func.func private @dprint_fallback(%unused: !custom.string) {
    %text = util.buffer.constant : !util.buffer = "optimized"
    %s = call @custom.string.create(%text) : (!util.buffer) -> !custom.string
    call @custom.string.print(%s) : (!custom.string) -> ()
    return
  }
  func.func @main() {
    %hello = util.buffer.constant : !util.buffer = "hello"
    %s = call @custom.string.create(%hello) : (!util.buffer) -> !custom.string
    call @custom.string.print(%s) : (!custom.string) -> ()
    %n = call @custom.string.length(%s) : (!custom.string) -> index
    %keep = util.optimization_barrier %n : index
    %debug = util.buffer.constant : !util.buffer = "debug"
    %d = call @custom.string.create(%debug) : (!util.buffer) -> !custom.string
    call @custom.string.dprint(%d) : (!custom.string) -> ()
    return
  }
}
