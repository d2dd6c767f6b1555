// vmrt plugin test program: a dispatch whose body calls an import that an
// executable plugin provides at run time (simple_mul_workgroup), in the style
// of the custom CPU dispatch plugin sample, plus generated code around it.
//
// Each workgroup handles a tile of 64 elements: the import gets the tile's
// element offset into every binding and the tile length, so results depend
// on every workgroup running with the right id.  A second import,
// "?vmrt_optional_probe", is optional (the leading '?') and no plugin
// provides it; it is only called when the size operand is 0x7fffffff, which
// never happens in the tests, so a NULL slot is harmless.
//
// Bindings: 0 = lhs (f32[dim]), 1 = rhs (f32[dim]), 2 = out (f32[dim]).
// Workgroups: (ceil(dim / 64), 1, 1).
module @simple_mul {
  stream.executable private @mul_executable {
    stream.executable.export public @tiled_mul workgroups(%n: index) -> (index, index, index) {
      %x = affine.apply affine_map<()[s0] -> (s0 ceildiv 64)>()[%n]
      %one = arith.constant 1 : index
      stream.return %x, %one, %one : index, index, index
    }
    builtin.module {
      func.func private @simple_mul_workgroup(
          %lhs: memref<f32>, %lhs_offset: index,
          %rhs: memref<f32>, %rhs_offset: index,
          %out: memref<f32>, %out_offset: index,
          %size: index, %tid: index) attributes {
        hal.import.fields = ["processor_id", "processor_data"],
        llvm.bareptr = true
      }
      func.func private @optional_probe(%value: index) attributes {
        hal.import.name = "?vmrt_optional_probe",
        llvm.bareptr = true
      }
      func.func @tiled_mul(%b0: !stream.binding, %b1: !stream.binding,
                           %b2: !stream.binding, %n: index) {
        %c0 = arith.constant 0 : index
        %c64 = arith.constant 64 : index
        %never = arith.constant 2147483647 : index
        %wg = stream.dispatch.workgroup.id[0] : index
        %start = arith.muli %wg, %c64 : index
        %left = arith.subi %n, %start : index
        %len = arith.minui %left, %c64 : index
        %m0 = stream.binding.subspan %b0[%c0] : !stream.binding -> memref<?xf32>{%n}
        %m1 = stream.binding.subspan %b1[%c0] : !stream.binding -> memref<?xf32>{%n}
        %m2 = stream.binding.subspan %b2[%c0] : !stream.binding -> memref<?xf32>{%n}
        %base0, %off0, %sz0, %st0 = memref.extract_strided_metadata %m0
            : memref<?xf32> -> memref<f32>, index, index, index
        %base1, %off1, %sz1, %st1 = memref.extract_strided_metadata %m1
            : memref<?xf32> -> memref<f32>, index, index, index
        %base2, %off2, %sz2, %st2 = memref.extract_strided_metadata %m2
            : memref<?xf32> -> memref<f32>, index, index, index
        %o0 = arith.addi %off0, %start : index
        %o1 = arith.addi %off1, %start : index
        %o2 = arith.addi %off2, %start : index
        func.call @simple_mul_workgroup(%base0, %o0, %base1, %o1, %base2, %o2, %len, %wg)
            : (memref<f32>, index, memref<f32>, index, memref<f32>, index, index, index) -> ()
        %is_never = arith.cmpi eq, %n, %never : index
        scf.if %is_never {
          func.call @optional_probe(%n) : (index) -> ()
        }
        return
      }
    }
  }

  // out = lhs * rhs (through the plugin), then + rhs in generated code.
  func.func @mixed_invocation(%lhs: tensor<?xf32>, %rhs: tensor<?xf32>) -> tensor<?xf32> {
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %lhs, %c0 : tensor<?xf32>
    %prod = flow.dispatch @mul_executable::@tiled_mul[%dim](%lhs, %rhs, %dim)
        : (tensor<?xf32>{%dim}, tensor<?xf32>{%dim}, index) -> tensor<?xf32>{%dim}
    %sum = arith.addf %prod, %rhs : tensor<?xf32>
    return %sum : tensor<?xf32>
  }

  // Just the plugin's product.
  func.func @plugin_mul(%lhs: tensor<?xf32>, %rhs: tensor<?xf32>) -> tensor<?xf32> {
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %lhs, %c0 : tensor<?xf32>
    %prod = flow.dispatch @mul_executable::@tiled_mul[%dim](%lhs, %rhs, %dim)
        : (tensor<?xf32>{%dim}, tensor<?xf32>{%dim}, index) -> tensor<?xf32>{%dim}
    return %prod : tensor<?xf32>
  }
}
