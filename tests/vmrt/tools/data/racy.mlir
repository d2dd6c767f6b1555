// Hand-made dispatches for the race checker (vmrt run --check_races).
//
// @racy: workgroup w (of ceil(n / 4)) writes out[i] = in[i] + w for i in
// [4w, 4w + 8): each tile overlaps the next workgroup's, so the result
// depends on the order the workgroups run in.
// @clean: the same with tiles of 4: disjoint, no race.
// @same: workgroup w writes out[i] = in[i] for i in [4w, 4w + 8): the
// overlapping workgroups store the same values (a race that no order reveals;
// only a memory write hook, under emulation, sees it).
// Bindings: 0 = in (f32[n]), 1 = out (f32[n]).  Workgroups: (ceil(n/4), 1, 1).
module @racy {
  stream.executable private @tiles {
    stream.executable.export public @tile_f32 workgroups(%n: index) -> (index, index, index) {
      %x = affine.apply affine_map<()[s0] -> (s0 ceildiv 4)>()[%n]
      %one = arith.constant 1 : index
      stream.return %x, %one, %one : index, index, index
    }
    builtin.module {
      func.func @tile_f32(%b0: !stream.binding, %b1: !stream.binding, %n: index, %width: index) {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %c4 = arith.constant 4 : index
        %wg = stream.dispatch.workgroup.id[0] : index
        %start = arith.muli %wg, %c4 : index
        %in = stream.binding.subspan %b0[%c0] : !stream.binding -> memref<?xf32>{%n}
        %out = stream.binding.subspan %b1[%c0] : !stream.binding -> memref<?xf32>{%n}
        %wgi = arith.index_cast %wg : index to i32
        %wgf = arith.sitofp %wgi : i32 to f32
        scf.for %i = %c0 to %width step %c1 {
          %idx = arith.addi %start, %i : index
          %inside = arith.cmpi ult, %idx, %n : index
          scf.if %inside {
            %v = memref.load %in[%idx] : memref<?xf32>
            %r = arith.addf %v, %wgf : f32
            memref.store %r, %out[%idx] : memref<?xf32>
          }
        }
        return
      }
    }
  }

  stream.executable private @copies {
    stream.executable.export public @copy_f32 workgroups(%n: index) -> (index, index, index) {
      %x = affine.apply affine_map<()[s0] -> (s0 ceildiv 4)>()[%n]
      %one = arith.constant 1 : index
      stream.return %x, %one, %one : index, index, index
    }
    builtin.module {
      func.func @copy_f32(%b0: !stream.binding, %b1: !stream.binding, %n: index, %width: index) {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %c4 = arith.constant 4 : index
        %wg = stream.dispatch.workgroup.id[0] : index
        %start = arith.muli %wg, %c4 : index
        %in = stream.binding.subspan %b0[%c0] : !stream.binding -> memref<?xf32>{%n}
        %out = stream.binding.subspan %b1[%c0] : !stream.binding -> memref<?xf32>{%n}
        scf.for %i = %c0 to %width step %c1 {
          %idx = arith.addi %start, %i : index
          %inside = arith.cmpi ult, %idx, %n : index
          scf.if %inside {
            %v = memref.load %in[%idx] : memref<?xf32>
            memref.store %v, %out[%idx] : memref<?xf32>
          }
        }
        return
      }
    }
  }

  func.func @racy(%input: tensor<?xf32>) -> tensor<?xf32> {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %dim = tensor.dim %input, %c0 : tensor<?xf32>
    %out = flow.dispatch @tiles::@tile_f32[%dim](%input, %dim, %c8)
        : (tensor<?xf32>{%dim}, index, index) -> tensor<?xf32>{%dim}
    return %out : tensor<?xf32>
  }

  func.func @clean(%input: tensor<?xf32>) -> tensor<?xf32> {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %dim = tensor.dim %input, %c0 : tensor<?xf32>
    %out = flow.dispatch @tiles::@tile_f32[%dim](%input, %dim, %c4)
        : (tensor<?xf32>{%dim}, index, index) -> tensor<?xf32>{%dim}
    return %out : tensor<?xf32>
  }

  func.func @same(%input: tensor<?xf32>) -> tensor<?xf32> {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %dim = tensor.dim %input, %c0 : tensor<?xf32>
    %out = flow.dispatch @copies::@copy_f32[%dim](%input, %dim, %c8)
        : (tensor<?xf32>{%dim}, index, index) -> tensor<?xf32>{%dim}
    return %out : tensor<?xf32>
  }
}
