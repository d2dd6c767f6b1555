// Hand-written VM dialect (iree-compile --compile-mode=vm): ops the MLIR
// lowering rarely emits (switch, select.i64, f32 rounding, buffer/list/ref ops).
vm.module @vmops {
  vm.func @sw64(%i: i32) -> i64 {
    %a = vm.const.i64 5000000000
    %b = vm.const.i64 -7
    %d = vm.const.i64 42
    %r = vm.switch.i64 %i[%a, %b] else %d : i64
    vm.return %r : i64
  }
  vm.export @sw64
  vm.func @sw32(%i: i32) -> i32 {
    %a = vm.const.i32 10
    %b = vm.const.i32 20
    %c = vm.const.i32 30
    %d = vm.const.i32 -1
    %r = vm.switch.i32 %i[%a, %b, %c] else %d : i32
    vm.return %r : i32
  }
  vm.export @sw32
  vm.func @sel64(%c: i32, %a: i64, %b: i64) -> i64 {
    %r = vm.select.i64 %c, %a, %b : i64
    vm.return %r : i64
  }
  vm.export @sel64
  vm.func @fops(%a: f32, %b: f32) -> (f32, f32, f32, f32, f32, i32, i64) {
    %0 = vm.rem.f32 %a, %b : f32
    %1 = vm.round.f32 %a : f32
    %2 = vm.round.f32.even %a : f32
    %3 = vm.min.f32 %a, %b : f32
    %4 = vm.max.f32 %a, %b : f32
    %5 = vm.cast.f32.ui32 %a : f32 -> i32
    %6 = vm.cast.f32.si64 %a : f32 -> i64
    vm.return %0, %1, %2, %3, %4, %5, %6 : f32, f32, f32, f32, f32, i32, i64
  }
  vm.export @fops
  vm.func @iops(%a: i32, %b: i32) -> (i32, i32, i32, i32, i64, i64) {
    %0 = vm.abs.i32 %a : i32
    %1 = vm.shl.i32 %a, %b : i32
    %2 = vm.min.i32.u %a, %b : i32
    %3 = vm.cmp.lt.i32.u %a, %b : i32
    %a64 = vm.ext.i32.i64.s %a : i32 -> i64
    %4 = vm.ctlz.i64 %a64 : i64
    %5 = vm.abs.i64 %a64 : i64
    vm.return %0, %1, %2, %3, %4, %5 : i32, i32, i32, i32, i64, i64
  }
  vm.export @iops
  vm.rodata private @hello "hello world"
  vm.func @bufops(%n: i64) -> (i32, i32, i64, i32, i32) {
    %src = vm.const.ref.rodata @hello : !vm.buffer
    %c0 = vm.const.i64 0
    %c3 = vm.const.i64 3
    %c5 = vm.const.i64 5
    %c16 = vm.const.i64 16
    %al = vm.const.i32 16
    %dst = vm.buffer.alloc %c16, %al : !vm.buffer
    %x = vm.const.i32 97
    vm.buffer.fill.i8 %dst, %c0, %c16, %x : i32 -> !vm.buffer
    vm.buffer.copy %src, %c0, %dst, %c3, %c5 : !vm.buffer -> !vm.buffer
    %l = vm.buffer.load.i8.u %dst[%n] : !vm.buffer -> i32
    %cmp = vm.buffer.compare %src, %c0, %dst, %c3, %c5 : !vm.buffer, !vm.buffer
    %cl = vm.buffer.clone %dst, %c3, %c5, %al : !vm.buffer -> !vm.buffer
    %len = vm.buffer.length %cl : !vm.buffer -> i64
    %c1 = vm.const.i64 1
    %w = vm.buffer.load.i16.u %dst[%c1] : !vm.buffer -> i32
    %y = vm.const.i32 -2
    %c2 = vm.const.i64 2
    vm.buffer.store.i32 %y, %dst[%c2] : i32 -> !vm.buffer
    %z = vm.buffer.load.i32 %dst[%c2] : !vm.buffer -> i32
    vm.return %l, %cmp, %len, %w, %z : i32, i32, i64, i32, i32
  }
  vm.export @bufops
  vm.func @hash(%n: i64) -> i64 {
    %src = vm.const.ref.rodata @hello : !vm.buffer
    %c0 = vm.const.i64 0
    %h = vm.buffer.hash %src, %c0, %n : !vm.buffer -> i64
    vm.return %h : i64
  }
  vm.export @hash
  vm.func @refops(%c: i32) -> (i32, i32, i32, !vm.buffer) {
    %a = vm.const.ref.rodata @hello : !vm.buffer
    %z = vm.const.ref.zero : !vm.buffer
    %s = vm.select.ref %c, %a, %z : !vm.buffer
    %e = vm.cmp.eq.ref %s, %a : !vm.buffer
    %nz = vm.cmp.nz.ref %s : !vm.buffer
    %ne = vm.cmp.ne.ref %s, %z : !vm.buffer
    vm.return %e, %nz, %ne, %s : i32, i32, i32, !vm.buffer
  }
  vm.export @refops
  vm.func @listref(%i: i32) -> (i32, !vm.buffer) {
    %a = vm.const.ref.rodata @hello : !vm.buffer
    %c2 = vm.const.i32 2
    %l = vm.list.alloc %c2 : (i32) -> !vm.list<?>
    vm.list.resize %l, %c2 : (!vm.list<?>, i32)
    %c1 = vm.const.i32 1
    vm.list.set.ref %l, %c1, %a : (!vm.list<?>, i32, !vm.buffer)
    %r = vm.list.get.ref %l, %i : (!vm.list<?>, i32) -> !vm.buffer
    %n = vm.list.size %l : (!vm.list<?>) -> i32
    vm.return %n, %r : i32, !vm.buffer
  }
  vm.export @listref
}
