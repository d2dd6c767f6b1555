// Globals (with an initializer), buffers and lists.
util.global private mutable @counter : i32 = 10 : i32
util.global private mutable @total : i64 = 0 : i64
util.global private mutable @scale : f32 = 0.5 : f32
util.global private mutable @last : !util.buffer
util.initializer {
  %b = util.buffer.constant : !util.buffer = "init"
  util.global.store %b, @last : !util.buffer
  util.return
}
func.func @bump(%by: i32) -> (i32, i64, f32) {
  %c = util.global.load @counter : i32
  %t = util.global.load @total : i64
  %s = util.global.load @scale : f32
  %c2 = arith.addi %c, %by : i32
  %by64 = arith.extsi %by : i32 to i64
  %t2 = arith.addi %t, %by64 : i64
  %two = arith.constant 2.0 : f32
  %s2 = arith.mulf %s, %two : f32
  util.global.store %c2, @counter : i32
  util.global.store %t2, @total : i64
  util.global.store %s2, @scale : f32
  return %c2, %t2, %s2 : i32, i64, f32
}
func.func @last_len() -> index {
  %b = util.global.load @last : !util.buffer
  %n = util.buffer.size %b : !util.buffer
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %nb = util.buffer.alloc uninitialized : !util.buffer{%c4}
  util.global.store %nb, @last : !util.buffer
  return %n : index
}
func.func @bufsum(%n: index) -> (i32, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %bytes = arith.muli %n, %c4 : index
  %b = util.buffer.alloc uninitialized : !util.buffer{%bytes}
  scf.for %i = %c0 to %n step %c1 {
    %v = arith.index_cast %i : index to i32
    %sq = arith.muli %v, %v : i32
    %off = arith.muli %i, %c4 : index
    util.buffer.store %sq, %b[%off for %c4] : i32 -> !util.buffer{%bytes}
  }
  %z = arith.constant 0 : i32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> i32 {
    %off = arith.muli %i, %c4 : index
    %v = util.buffer.load %b[%off for %c4] : !util.buffer{%bytes} -> i32
    %a = arith.addi %acc, %v : i32
    scf.yield %a : i32
  }
  %size = util.buffer.size %b : !util.buffer
  return %s, %size : i32, index
}
func.func @bytes(%i: index) -> i32 {
  %c1 = arith.constant 1 : index
  %b = util.buffer.constant : !util.buffer = "\01\02\FF\80hello"
  %sz = util.buffer.size %b : !util.buffer
  %v = util.buffer.load %b[%i for %c1] : !util.buffer{%sz} -> i8
  %w = arith.extsi %v : i8 to i32
  return %w : i32
}
func.func @pack(%a: i32, %b: i64, %c: f32) -> !util.list<?> {
  %l = util.list.create : !util.list<?>
  %c3 = arith.constant 3 : index
  util.list.resize %l, %c3 : !util.list<?>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  util.list.set %l[%c0], %a : i32 -> !util.list<?>
  util.list.set %l[%c1], %b : i64 -> !util.list<?>
  util.list.set %l[%c2], %c : f32 -> !util.list<?>
  return %l : !util.list<?>
}
func.func @listsum(%n: index) -> (i32, index) {
  %l = util.list.create %n : !util.list<i32>
  util.list.resize %l, %n : !util.list<i32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = arith.index_cast %i : index to i32
    %v3 = arith.muli %v, %v : i32
    util.list.set %l[%i], %v3 : i32 -> !util.list<i32>
  }
  %z = arith.constant 0 : i32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> i32 {
    %v = util.list.get %l[%i] : !util.list<i32> -> i32
    %a = arith.addi %acc, %v : i32
    scf.yield %a : i32
  }
  %sz = util.list.size %l : !util.list<i32>
  return %s, %sz : i32, index
}
func.func @oob(%i: index) -> i32 {
  %l = util.list.create : !util.list<i32>
  %c2 = arith.constant 2 : index
  util.list.resize %l, %c2 : !util.list<i32>
  %v = util.list.get %l[%i] : !util.list<i32> -> i32
  return %v : i32
}
func.func @nested(%a: i32) -> (!util.list<?>, i32) {
  %inner = util.list.create : !util.list<?>
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  util.list.resize %inner, %c1 : !util.list<?>
  util.list.set %inner[%c0], %a : i32 -> !util.list<?>
  %outer = util.list.create : !util.list<?>
  util.list.resize %outer, %c3 : !util.list<?>
  util.list.set %outer[%c0], %inner : !util.list<?> -> !util.list<?>
  %f = arith.constant 2.5 : f32
  util.list.set %outer[%c1], %f : f32 -> !util.list<?>
  %b = util.buffer.constant : !util.buffer = "xyz"
  util.list.set %outer[%c2], %b : !util.buffer -> !util.list<?>
  return %outer, %a : !util.list<?>, i32
}
