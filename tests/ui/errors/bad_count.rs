// The one error is the macro's: the constant still has its type, so its use below is fine.
const VALUE: memtune::StencilConsts = memtune::stencil_plan!(dims = 64x64x64, dtype = f32, repeats = 6u8);

fn main() {
    let _ = VALUE;
}
