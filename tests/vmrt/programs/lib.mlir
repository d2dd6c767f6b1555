// A library module whose exports other modules import.
module @lib attributes {vm.version = 3 : i32} {
  util.global private mutable @calls : i32 = 0 : i32
  func.func @triple(%x: i32) -> i32 {
    %c = util.global.load @calls : i32
    %one = arith.constant 1 : i32
    %c1 = arith.addi %c, %one : i32
    util.global.store %c1, @calls : i32
    %k = arith.constant 3 : i32
    %r = arith.muli %x, %k : i32
    return %r : i32
  }
  func.func @count() -> i32 {
    %c = util.global.load @calls : i32
    return %c : i32
  }
}
