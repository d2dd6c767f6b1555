vm.module @swap {
  vm.export @run
  vm.func @run(%n: i32) -> (i32, i32, i32) {
    %c0 = vm.const.i32 0
    %c1 = vm.const.i32 1
    %c2 = vm.const.i32 2
    %c3 = vm.const.i32 3
    vm.br ^loop(%c0, %c1, %c2, %c3 : i32, i32, i32, i32)
  ^loop(%i: i32, %a: i32, %b: i32, %c: i32):
    %done = vm.cmp.gte.i32.s %i, %n : i32
    %inext = vm.add.i32 %i, %c1 : i32
    vm.cond_br %done, ^exit(%a, %b, %c : i32, i32, i32), ^loop(%inext, %c, %a, %b : i32, i32, i32, i32)
  ^exit(%x: i32, %y: i32, %z: i32):
    vm.return %x, %y, %z : i32, i32, i32
  }
}
