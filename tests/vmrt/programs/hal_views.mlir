// Host-only programs that take and return !hal.buffer_view (hal imports).
func.func @info(%v: !hal.buffer_view) -> (index, index, i32) {
  %r = hal.buffer_view.rank<%v : !hal.buffer_view> : index
  %d0 = hal.buffer_view.dim<%v : !hal.buffer_view>[0] : index
  %t = hal.buffer_view.element_type<%v : !hal.buffer_view> : i32
  return %r, %d0, %t : index, index, i32
}
func.func @sum(%v: !hal.buffer_view) -> f32 {
  %buf = hal.buffer_view.buffer<%v : !hal.buffer_view> : !hal.buffer
  %len = hal.buffer.length<%buf : !hal.buffer> : index
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  %s = scf.for %off = %c0 to %len step %c4 iter_args(%acc = %z) -> f32 {
    %x = hal.buffer.load<%buf : !hal.buffer>[%off] : f32
    %a = arith.addf %acc, %x : f32
    scf.yield %a : f32
  }
  return %s : f32
}
func.func @fill(%v: !hal.buffer_view, %x: i32) -> !hal.buffer_view {
  %buf = hal.buffer_view.buffer<%v : !hal.buffer_view> : !hal.buffer
  %c0 = arith.constant 0 : index
  hal.buffer.store<%buf : !hal.buffer>[%c0] value(%x : i32)
  return %v : !hal.buffer_view
}
func.func @mk(%v: !hal.buffer_view) -> !hal.buffer_view {
  %buf = hal.buffer_view.buffer<%v : !hal.buffer_view> : !hal.buffer
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %t = hal.element_type<f32> : i32
  %e = hal.encoding_type<dense_row_major> : i32
  %nv = hal.buffer_view.create buffer(%buf : !hal.buffer)[%c0, %c8] shape([%c2]) type(%t) encoding(%e) : !hal.buffer_view
  return %nv : !hal.buffer_view
}
// A view of %n f32 over the input's bytes [0, %len): IREE allows a view
// smaller than its range and refuses a larger one (OUT_OF_RANGE)
func.func @mkn(%v: !hal.buffer_view, %n: index, %len: index) -> !hal.buffer_view {
  %buf = hal.buffer_view.buffer<%v : !hal.buffer_view> : !hal.buffer
  %c0 = arith.constant 0 : index
  %t = hal.element_type<f32> : i32
  %e = hal.encoding_type<dense_row_major> : i32
  %nv = hal.buffer_view.create buffer(%buf : !hal.buffer)[%c0, %len] shape([%n]) type(%t) encoding(%e) : !hal.buffer_view
  return %nv : !hal.buffer_view
}
// The length of the buffer behind such a view: the whole range [%off, %off + %len)
func.func @mklen(%v: !hal.buffer_view, %n: index, %off: index, %len: index) -> index {
  %buf = hal.buffer_view.buffer<%v : !hal.buffer_view> : !hal.buffer
  %t = hal.element_type<f32> : i32
  %e = hal.encoding_type<dense_row_major> : i32
  %nv = hal.buffer_view.create buffer(%buf : !hal.buffer)[%off, %len] shape([%n]) type(%t) encoding(%e) : !hal.buffer_view
  %b2 = hal.buffer_view.buffer<%nv : !hal.buffer_view> : !hal.buffer
  %l2 = hal.buffer.length<%b2 : !hal.buffer> : index
  return %l2 : index
}
