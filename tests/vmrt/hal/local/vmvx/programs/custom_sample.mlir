// The dynamic custom-module sample's program, compiled for vmvx as its README says.
module @example {
  func.func private @custom.string.from_tensor(tensor<?xi8>) -> !custom.string
  func.func private @custom.string.print(!custom.string)
  func.func private @custom.error()
  func.func @main() {
    %c = util.unfoldable_constant dense<[0, 1, 2, 3, 4]> : tensor<5xi8>
    %d = tensor.cast %c : tensor<5xi8> to tensor<?xi8>
    %s = call @custom.string.from_tensor(%d) : (tensor<?xi8>) -> !custom.string
    call @custom.string.print(%s) : (!custom.string) -> ()
    return
  }
  func.func @error() {
    call @custom.error() : () -> ()
    return
  }
}
