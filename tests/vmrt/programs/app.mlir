// Imports from @lib (required, version 2) and an optional import with a fallback.
module @app {
  func.func private @lib.triple(i32) -> i32 attributes {vm.version = 2 : i32}
  func.func private @lib.count() -> i32
  func.func private @ext.twice(i32) -> i32 attributes {vm.fallback = @twice_fallback}
  func.func private @twice_fallback(%x: i32) -> i32 {
    %k = arith.constant 1000 : i32
    %r = arith.addi %x, %k : i32
    return %r : i32
  }
  func.func @run(%x: i32) -> (i32, i32, i32) {
    %a = call @lib.triple(%x) : (i32) -> i32
    %b = call @lib.triple(%a) : (i32) -> i32
    %n = call @lib.count() : () -> i32
    %t = call @ext.twice(%b) : (i32) -> i32
    return %b, %n, %t : i32, i32, i32
  }
}
