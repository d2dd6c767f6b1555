// Loops, branches, switches and internal calls.
func.func @sumsq(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> i64 : i64 {
    %sq = arith.muli %i, %i : i64
    %a = arith.addi %acc, %sq : i64
    scf.yield %a : i64
  }
  return %r : i64
}
func.func @collatz(%x0: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %r:2 = scf.while (%x = %x0, %steps = %c0) : (i32, i32) -> (i32, i32) {
    %go = arith.cmpi sgt, %x, %c1 : i32
    scf.condition(%go) %x, %steps : i32, i32
  } do {
  ^bb0(%x: i32, %steps: i32):
    %rem = arith.remsi %x, %c2 : i32
    %even = arith.cmpi eq, %rem, %c0 : i32
    %next = scf.if %even -> i32 {
      %h = arith.divsi %x, %c2 : i32
      scf.yield %h : i32
    } else {
      %t = arith.muli %x, %c3 : i32
      %t1 = arith.addi %t, %c1 : i32
      scf.yield %t1 : i32
    }
    %s1 = arith.addi %steps, %c1 : i32
    scf.yield %next, %s1 : i32, i32
  }
  return %r#1 : i32
}
func.func @classify(%x: index) -> i32 {
  %r = scf.index_switch %x -> i32
  case 0 {
    %a = arith.constant 100 : i32
    scf.yield %a : i32
  }
  case 2 {
    %b = arith.constant 200 : i32
    scf.yield %b : i32
  }
  case 5 {
    %c = arith.constant 500 : i32
    scf.yield %c : i32
  }
  default {
    %d = arith.constant -1 : i32
    scf.yield %d : i32
  }
  return %r : i32
}
util.func private @mix(%a: i64, %b: i64) -> (i64, i64) attributes {inlining_policy = #util.inline.never} {
  %s = arith.addi %a, %b : i64
  %d = arith.subi %a, %b : i64
  util.return %s, %d : i64, i64
}
util.func private @scale(%x: f32, %k: i32) -> f32 attributes {inlining_policy = #util.inline.never} {
  %kf = arith.sitofp %k : i32 to f32
  %r = arith.mulf %x, %kf : f32
  util.return %r : f32
}
func.func @calls(%a: i64, %b: i64, %x: f32) -> (i64, i64, f32) {
  %s, %d = util.call @mix(%a, %b) : (i64, i64) -> (i64, i64)
  %s2, %d2 = util.call @mix(%s, %d) : (i64, i64) -> (i64, i64)
  %c3 = arith.constant 3 : i32
  %y = util.call @scale(%x, %c3) : (f32, i32) -> f32
  return %s2, %d2, %y : i64, i64, f32
}
func.func @nested(%n: i32) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i32
  %nn = arith.index_cast %n : i32 to index
  %r = scf.for %i = %c0 to %nn step %c1 iter_args(%acc = %z) -> i32 {
    %inner = scf.for %j = %c0 to %i step %c1 iter_args(%acc2 = %acc) -> i32 {
      %ij = arith.muli %i, %j : index
      %v = arith.index_cast %ij : index to i32
      %x = arith.xori %acc2, %v : i32
      %y = arith.addi %x, %v : i32
      scf.yield %y : i32
    }
    scf.yield %inner : i32
  }
  return %r : i32
}
func.func @checked(%x: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %ok = arith.cmpi sge, %x, %c0 : i32
  cf.assert %ok, "x must be non-negative"
  return %x : i32
}
func.func @fsum(%n: i32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %nn = arith.index_cast %n : i32 to index
  %r = scf.for %i = %c0 to %nn step %c1 iter_args(%acc = %z) -> f32 {
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %q = arith.divf %f, %acc : f32
    %t = math.sqrt %f : f32
    %a = arith.addf %acc, %t : f32
    scf.yield %a : f32
  }
  return %r : f32
}
