// More hand-written VM dialect: f32 math library ops, all f32 compares,
// float<->int casts at the edges, every buffer access width, variant lists,
// ref globals and f64 ops.
vm.module @vmops2 {
  vm.func @fmath(%a: f32, %b: f32) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
    %0 = vm.atan.f32 %a : f32
    %1 = vm.atan2.f32 %a, %b : f32
    %2 = vm.cos.f32 %a : f32
    %3 = vm.exp2.f32 %a : f32
    %4 = vm.expm1.f32 %a : f32
    %5 = vm.log10.f32 %a : f32
    %6 = vm.log1p.f32 %a : f32
    %7 = vm.log2.f32 %a : f32
    %8 = vm.pow.f32 %a, %b : f32
    %9 = vm.rsqrt.f32 %a : f32
    %10 = vm.erf.f32 %a : f32
    vm.return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10 : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
  }
  vm.export @fmath
  vm.func @fcmp(%a: f32, %b: f32) -> (i32, i32, i32, i32, i32, i32, i32, i32, i32) {
    %0 = vm.cmp.eq.f32.u %a, %b : f32
    %1 = vm.cmp.ne.f32.o %a, %b : f32
    %2 = vm.cmp.lte.f32.u %a, %b : f32
    %3 = vm.cmp.nan.f32 %a : f32
    %4 = vm.cmp.eq.f32.o %a, %b : f32
    %5 = vm.cmp.lt.f32.u %a, %b : f32
    %6 = vm.cmp.lte.f32.o %a, %b : f32
    %7 = vm.cmp.ne.f32.u %a, %b : f32
    %8 = vm.cmp.lt.f32.o %a, %b : f32
    vm.return %0, %1, %2, %3, %4, %5, %6, %7, %8 : i32, i32, i32, i32, i32, i32, i32, i32, i32
  }
  vm.export @fcmp
  vm.func @fconv(%a: f32, %i: i64) -> (i64, f32, f32, f32, i32) {
    %0 = vm.cast.f32.ui64 %a : f32 -> i64
    %1 = vm.cast.si64.f32 %i : i64 -> f32
    %2 = vm.cast.ui64.f32 %i : i64 -> f32
    %ai = vm.bitcast.f32.i32 %a : f32 -> i32
    %3 = vm.bitcast.i32.f32 %ai : i32 -> f32
    %4 = vm.cast.f32.si32 %a : f32 -> i32
    vm.return %0, %1, %2, %3, %4 : i64, f32, f32, f32, i32
  }
  vm.export @fconv
  vm.func @bufwidths(%v: i64, %f: f32) -> (i32, i32, i64, f32, i32, i64, i32) {
    %c0 = vm.const.i64 0
    %c1 = vm.const.i64 1
    %c2 = vm.const.i64 2
    %c3 = vm.const.i64 3
    %c32 = vm.const.i64 32
    %al = vm.const.i32 8
    %b = vm.buffer.alloc %c32, %al : !vm.buffer
    %v32 = vm.trunc.i64.i32 %v : i64 -> i32
    vm.buffer.fill.i16 %b, %c0, %c3, %v32 : i32 -> !vm.buffer
    %l16 = vm.buffer.load.i16.s %b[%c1] : !vm.buffer -> i32
    vm.buffer.store.i8 %v32, %b[%c1] : i32 -> !vm.buffer
    %l8 = vm.buffer.load.i8.s %b[%c1] : !vm.buffer -> i32
    vm.buffer.store.i64 %v, %b[%c2] : i64 -> !vm.buffer
    %l64 = vm.buffer.load.i64 %b[%c2] : !vm.buffer -> i64
    vm.buffer.store.f32 %f, %b[%c3] : f32 -> !vm.buffer
    %lf = vm.buffer.load.f32 %b[%c3] : !vm.buffer -> f32
    vm.buffer.store.i16 %v32, %b[%c0] : i32 -> !vm.buffer
    %lu16 = vm.buffer.load.i16.u %b[%c0] : !vm.buffer -> i32
    vm.buffer.fill.i64 %b, %c1, %c1, %v : i64 -> !vm.buffer
    %l64b = vm.buffer.load.i64 %b[%c1] : !vm.buffer -> i64
    vm.buffer.fill.i32 %b, %c1, %c2, %v32 : i32 -> !vm.buffer
    %l32 = vm.buffer.load.i32 %b[%c2] : !vm.buffer -> i32
    vm.return %l16, %l8, %l64, %lf, %lu16, %l64b, %l32 : i32, i32, i64, f32, i32, i64, i32
  }
  vm.export @bufwidths
  vm.func @lists(%a: i64, %f: f32) -> (i64, f32, i32, f32, !vm.list<?>) {
    %c3 = vm.const.i32 3
    %l = vm.list.alloc %c3 : (i32) -> !vm.list<?>
    vm.list.resize %l, %c3 : (!vm.list<?>, i32)
    %c0 = vm.const.i32 0
    %c1 = vm.const.i32 1
    %c2 = vm.const.i32 2
    vm.list.set.i64 %l, %c0, %a : (!vm.list<?>, i32, i64)
    vm.list.set.f32 %l, %c1, %f : (!vm.list<?>, i32, f32)
    %x = vm.list.get.i64 %l, %c0 : (!vm.list<?>, i32) -> i64
    %y = vm.list.get.f32 %l, %c1 : (!vm.list<?>, i32) -> f32
    %z = vm.list.get.i32 %l, %c0 : (!vm.list<?>, i32) -> i32
    %w = vm.list.get.f32 %l, %c2 : (!vm.list<?>, i32) -> f32
    vm.return %x, %y, %z, %w, %l : i64, f32, i32, f32, !vm.list<?>
  }
  vm.export @lists
  vm.global.ref private mutable @g : !vm.buffer
  vm.rodata private @data "0123456789"
  vm.func @globref(%i: i64) -> (i32, i32) {
    %r = vm.const.ref.rodata @data : !vm.buffer
    vm.global.store.ref %r, @g : !vm.buffer
    %g = vm.global.load.ref @g : !vm.buffer
    %v = vm.buffer.load.i8.u %g[%i] : !vm.buffer -> i32
    %same = vm.cmp.eq.ref %g, %r : !vm.buffer
    vm.return %v, %same : i32, i32
  }
  vm.export @globref
  vm.func @f64math(%a: f64, %b: f64) -> (f64, f64, f64, f64, i32, i64, f64, i32, i64) {
    %0 = vm.sub.f64 %a, %b : f64
    %1 = vm.rem.f64 %a, %b : f64
    %2 = vm.floor.f64 %a : f64
    %3 = vm.exp.f64 %a : f64
    %4 = vm.cmp.lte.f64.o %a, %b : f64
    %5 = vm.cast.f64.si64 %a : f64 -> i64
    %6 = vm.min.f64 %a, %b : f64
    %7 = vm.cmp.ne.f64.o %a, %b : f64
    %8 = vm.cast.f64.ui64 %a : f64 -> i64
    vm.return %0, %1, %2, %3, %4, %5, %6, %7, %8 : f64, f64, f64, f64, i32, i64, f64, i32, i64
  }
  vm.export @f64math
}
