// The one error is the macro's: the constant still has its type, so its use below is fine.
const VALUE: memtune::StencilConsts = memtune::stencil_plan!(dims = 1x100000000x1, dtype = f32, repeats = 1);

fn main() {
    let _ = VALUE;
}
