// The one error is the macro's: the constant still has its type, so its use below is fine.
const VALUE: [u32; 3] = memtune::profile_value!(best_staged_block, dtype = f32, repeats = 6);

fn main() {
    let _ = VALUE;
}
