// Variadic imports (vm.call.variadic); iree-run-module cannot host these
// (its Python modules reject variadic cconvs), so the test checks vmrt
// against values computed in the test.
vm.module @var {
  vm.import private @ext.sum(%base : i32, %xs : i32 ...) -> i32
  vm.import private @ext.pairs(%tag : !vm.buffer, %xs : tuple<i32, i64> ...) -> i64
  vm.rodata private @tag "pairs"
  vm.func @vsum(%a: i32, %b: i32) -> i32 {
    %c7 = vm.const.i32 7
    %r = vm.call.variadic @ext.sum(%c7, [%a, %b, %a]) : (i32, i32 ...) -> i32
    vm.return %r : i32
  }
  vm.export @vsum
  vm.func @vnone() -> i32 {
    %c7 = vm.const.i32 7
    %r = vm.call.variadic @ext.sum(%c7, []) : (i32, i32 ...) -> i32
    vm.return %r : i32
  }
  vm.export @vnone
  vm.func @vpairs(%a: i32, %b: i64) -> i64 {
    %t = vm.const.ref.rodata @tag : !vm.buffer
    %c2 = vm.const.i32 2
    %r = vm.call.variadic @ext.pairs(%t, [(%a, %b), (%c2, %b)]) : (!vm.buffer, tuple<i32, i64> ...) -> i64
    vm.return %r : i64
  }
  vm.export @vpairs
}
