// vmrt executable test program: hand-written dispatches with plain generated
// code (no imports), so that the binding order, the push constants and the
// workgroup grid are fixed by this file and a test can dispatch the compiled
// library directly and compare with numpy.
//
// @saxpy      bindings (x f32[n], y f32[n], out f32[n]); constants (alpha f32,
//             n lo, n hi); grid (ceil(n / 32), 1, 1); out = alpha * x + y.
// @grid2d     bindings (a f32[rows*cols], out f32[rows*cols]); constants
//             (rows lo, rows hi, cols lo, cols hi); grid (ceil(cols / 8),
//             ceil(rows / 4), 1); out[r, c] = 2 * a[r, c] + 100 * r + c.
// (an index constant is two u32 words, low first, for every target: the
// host side computes it as a 64-bit value.)
module @codegen {
  stream.executable private @kernels {
    stream.executable.export public @saxpy workgroups(%n: index) -> (index, index, index) {
      %x = affine.apply affine_map<()[s0] -> (s0 ceildiv 32)>()[%n]
      %one = arith.constant 1 : index
      stream.return %x, %one, %one : index, index, index
    }
    stream.executable.export public @grid2d workgroups(%rows: index, %cols: index) -> (index, index, index) {
      %x = affine.apply affine_map<()[s0] -> (s0 ceildiv 8)>()[%cols]
      %y = affine.apply affine_map<()[s0] -> (s0 ceildiv 4)>()[%rows]
      %one = arith.constant 1 : index
      stream.return %x, %y, %one : index, index, index
    }
    builtin.module {
      func.func @saxpy(%bx: !stream.binding, %by: !stream.binding, %bo: !stream.binding,
                       %alpha: f32, %n: index) {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %c32 = arith.constant 32 : index
        %wg = stream.dispatch.workgroup.id[0] : index
        %start = arith.muli %wg, %c32 : index
        %end0 = arith.addi %start, %c32 : index
        %end = arith.minui %end0, %n : index
        %x = stream.binding.subspan %bx[%c0] : !stream.binding -> memref<?xf32>{%n}
        %y = stream.binding.subspan %by[%c0] : !stream.binding -> memref<?xf32>{%n}
        %o = stream.binding.subspan %bo[%c0] : !stream.binding -> memref<?xf32>{%n}
        scf.for %i = %start to %end step %c1 {
          %xv = memref.load %x[%i] : memref<?xf32>
          %yv = memref.load %y[%i] : memref<?xf32>
          %p = arith.mulf %alpha, %xv : f32
          %s = arith.addf %p, %yv : f32
          memref.store %s, %o[%i] : memref<?xf32>
        }
        return
      }
      func.func @grid2d(%ba: !stream.binding, %bo: !stream.binding, %rows: index, %cols: index) {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %c4 = arith.constant 4 : index
        %c8 = arith.constant 8 : index
        %two = arith.constant 2.0 : f32
        %hundred = arith.constant 100.0 : f32
        %wx = stream.dispatch.workgroup.id[0] : index
        %wy = stream.dispatch.workgroup.id[1] : index
        %c_start = arith.muli %wx, %c8 : index
        %c_end0 = arith.addi %c_start, %c8 : index
        %c_end = arith.minui %c_end0, %cols : index
        %r_start = arith.muli %wy, %c4 : index
        %r_end0 = arith.addi %r_start, %c4 : index
        %r_end = arith.minui %r_end0, %rows : index
        %a = stream.binding.subspan %ba[%c0] : !stream.binding -> memref<?x?xf32>{%rows, %cols}
        %o = stream.binding.subspan %bo[%c0] : !stream.binding -> memref<?x?xf32>{%rows, %cols}
        scf.for %r = %r_start to %r_end step %c1 {
          %ri = arith.index_cast %r : index to i32
          %rf = arith.sitofp %ri : i32 to f32
          %rh = arith.mulf %rf, %hundred : f32
          scf.for %c = %c_start to %c_end step %c1 {
            %ci = arith.index_cast %c : index to i32
            %cf = arith.sitofp %ci : i32 to f32
            %v = memref.load %a[%r, %c] : memref<?x?xf32>
            %v2 = arith.mulf %v, %two : f32
            %v3 = arith.addf %v2, %rh : f32
            %v4 = arith.addf %v3, %cf : f32
            memref.store %v4, %o[%r, %c] : memref<?x?xf32>
          }
        }
        return
      }
    }
  }

  func.func @saxpy(%x: tensor<?xf32>, %y: tensor<?xf32>, %alpha: f32) -> tensor<?xf32> {
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?xf32>
    %r = flow.dispatch @kernels::@saxpy[%n](%x, %y, %alpha, %n)
        : (tensor<?xf32>{%n}, tensor<?xf32>{%n}, f32, index) -> tensor<?xf32>{%n}
    return %r : tensor<?xf32>
  }

  func.func @grid2d(%a: tensor<?x?xf32>) -> tensor<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = tensor.dim %a, %c0 : tensor<?x?xf32>
    %cols = tensor.dim %a, %c1 : tensor<?x?xf32>
    %r = flow.dispatch @kernels::@grid2d[%rows, %cols](%a, %rows, %cols)
        : (tensor<?x?xf32>{%rows, %cols}, index, index) -> tensor<?x?xf32>{%rows, %cols}
    return %r : tensor<?x?xf32>
  }
}
