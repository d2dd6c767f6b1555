// VM dialect (--compile-mode=vm): imports a hal function vmrt does not implement.
vm.module @module {
  vm.import private @hal.devices.count() -> i32 attributes {nosideeffects}
  vm.import private @hal.channel.rank_and_count(%channel : !vm.ref<!hal.channel>) -> (i32, i32)
  vm.func @main() -> i32 {
    %0 = vm.call @hal.devices.count() : () -> i32
    %null = vm.const.ref.zero : !vm.ref<!hal.channel>
    %1:2 = vm.call @hal.channel.rank_and_count(%null) : (!vm.ref<!hal.channel>) -> (i32, i32)
    %2 = vm.add.i32 %0, %1#0 : i32
    vm.return %2 : i32
  }
  vm.export @main
}
